// The findings of link physics on the PCIe fixture host and the recorded module outputs.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { bitErrorRate } from '../../../src/model/bit-error-rate.js';
import type { ModuleReading } from '../../../src/model/optical-module.js';
import type { PcieReading } from '../../../src/model/pcie.js';
import { bitErrorRateFindings } from '../../../src/collectors/host/sysfs/findings.js';
import { moduleFindings } from '../../../src/collectors/host/module.js';
import { pcieFindings } from '../../../src/collectors/host/pcie.js';
import { NO_DEVICE_FILTER } from '../../../src/sources/device-filter.js';
import { readInfinibandClass } from '../../../src/sources/infiniband.js';
import { interpretMlxlink, parseMlxlinkText } from '../../../src/sources/module/mlxlink-output.js';
import { readPcieLink } from '../../../src/sources/pcie.js';
import { SysfsFiles } from '../../../src/sources/sysfs-files.js';
import { portKey, type Device, type PortCounter } from '../../../src/model/host.js';
import { MODULE_FIXTURES } from '../../support/fake-module-tool.js';
import { FIXTURES, PROJECT_ROOT } from '../../support/trees.js';

const files = new SysfsFiles(path.join(FIXTURES, 'sys/pcie'));
const { devices } = readInfinibandClass(files, NO_DEVICE_FILTER);
const readings = devices.map((device) => readPcieLink(files, device.name).pcie).filter((r): r is PcieReading => r !== undefined);

describe('PCIe findings', () => {
  it('names the degraded adapters, what their ports can move, and whether the slot is the limit', () => {
    const findings = pcieFindings(devices, readings);
    expect(findings.map((f) => [f.condition, f.severity, f.summary])).toEqual([
      ['pcie-link-degraded', 'warning', 'mlx5_1 runs PCIe Gen5 x8 of x16: its NDR port can move at most ~31 GB/s of its 50'],
      ['pcie-link-degraded', 'warning', 'mlx5_2 runs PCIe Gen3 x16 of Gen4 x16: its HDR port can move at most ~15 GB/s of its 25'],
    ]);
    expect(findings[0]).toMatchObject({
      subject: { kind: 'device', device: 'mlx5_1' },
      alert: 'InfiniBandPCIeLinkDegraded',
      runbook: 'infinibandpcielinkdegraded',
    });
    expect(findings[0]!.remedy).toMatch(/^reseat the card/);
    expect(findings[1]!.cause).toContain('the port above the adapter (Gen3 x16)');
    expect(findings[1]!.remedy).toMatch(/^move the card to a slot wired for Gen4 x16/);
  });

  it("says the platform's limit at info, and uncorrectable AER errors at warning", () => {
    const dualPort: Device[] = ['mlx5_0', 'mlx5_1'].map((name) => ({ ...devices.find((d) => d.name === 'mlx5_2')!, name }));
    const gen4: PcieReading[] = [
      {
        device: 'mlx5_0',
        address: '0000:81:00.0',
        current: { gtps: 16, lanes: 16 },
        max: { gtps: 16, lanes: 16 },
        upstream: undefined,
        aer: { correctable: 4, nonfatal: 1, fatal: 0 },
      },
      {
        device: 'mlx5_1',
        address: '0000:81:00.1',
        current: { gtps: 16, lanes: 16 },
        max: { gtps: 16, lanes: 16 },
        upstream: undefined,
        aer: {},
      },
    ];
    const findings = pcieFindings(dualPort, gen4);
    expect(findings.map((f) => [f.condition, f.severity, f.summary])).toEqual([
      ['pcie-limited', 'info', "mlx5_0's PCIe Gen4 x16 link carries at most ~31 GB/s, less than the 50 GB/s of the active ports it feeds"],
      ['pcie-aer-uncorrectable', 'warning', 'mlx5_0 reported 1 non-fatal uncorrectable PCIe error since boot (and 4 correctable)'],
      ['pcie-limited', 'info', "mlx5_1's PCIe Gen4 x16 link carries at most ~31 GB/s, less than the 50 GB/s of the active ports it feeds"],
    ]);
  });
});

const moduleOf = (file: string, changes: Partial<ModuleReading> = {}): ModuleReading => ({
  device: 'mlx5_0',
  port: 1,
  ...interpretMlxlink(parseMlxlinkText(readFileSync(path.join(MODULE_FIXTURES, file), 'utf8'))),
  ...changes,
});

describe('module findings', () => {
  it('are silent for healthy modules, copper and an empty cage', () => {
    expect(
      moduleFindings([
        moduleOf('mlxlink-osfp-optical-excerpt.txt'),
        moduleOf('mlxlink-4.35-cx7-ndr-osfp-passive-copper.txt'),
        moduleOf('mlxlink-4.30-bluefield3-100g-qsfp28-passive-copper.txt'),
        moduleOf('derived-empty-cage.txt'),
      ]),
    ).toEqual([]);
  });

  it("say a module too hot or too dark at its own thresholds, a high BER and the firmware's reason", () => {
    const optical = moduleOf('mlxlink-osfp-optical-excerpt.txt');
    const findings = moduleFindings([
      { ...optical, temperatureCelsius: 77, rxPowerDbm: [1.9, -12.5, 2.2, 2] },
      { ...optical, device: 'mlx5_1', thresholds: {}, temperatureCelsius: 90 },
      moduleOf('mlxlink-4.30-bluefield3-100g-qsfp28-passive-copper.txt', {
        device: 'mlx5_2',
        ber: { raw: 2e-6, effective: 3e-11 },
        minutesSinceClear: 25074.8,
        linkDownReason: { opcode: 23, reason: 'Cable is unplugged' },
      }),
    ]);
    expect(findings.map((f) => [f.condition, f.severity, f.alert, f.summary])).toEqual([
      [
        'module-temperature-high',
        'warning',
        'InfiniBandModuleTemperatureHigh',
        'the module in mlx5_0/1 (CLT T-F4GS-BV0, serial CWJH05025502589) is at 77 °C, at or above its own high alarm threshold of 75 °C',
      ],
      [
        'module-optical-power-low',
        'warning',
        'InfiniBandModuleOpticalPowerLow',
        'the module in mlx5_0/1 (CLT T-F4GS-BV0, serial CWJH05025502589) receives -12.5 dBm on lane 2: at or below its own low alarm threshold of -10.41 dBm',
      ],
      [
        'link-bit-error-rate-high',
        'warning',
        'InfiniBandLinkBitErrorRateHigh',
        "port mlx5_2/1: the adapter's PHY measured an effective (post-FEC) BER of 3.0e-11 in the 25075 minutes since its counters were cleared, above 10^-12",
      ],
      ['link-down-reason', 'info', undefined, 'port mlx5_2/1: the adapter\'s firmware reports "Cable is unplugged" (status 23)'],
    ]);
  });
});

describe('bit error rate since reset', () => {
  const edr = devices.find((d) => d.name === 'mlx5_0')!;
  /** The EDR port with `local` symbol errors, and its peer's `peer` (from the perfquery collector). */
  const portWith = (local: number, peer: number | undefined, saturated = false): [Device[], (key: string) => PortCounter[] | undefined] => [
    [{ ...edr, ports: [{ ...edr.ports[0]!, width: 4, speed: 'EDR', counters: [{ name: 'symbol_errors', value: local, saturated }] }] }],
    (key) => (peer === undefined || key !== portKey('mlx5_0', 1) ? undefined : [{ name: 'symbol_errors', value: peer, saturated: false }]),
  ];

  it('computes it from the counters of both ends over the bits carried since the link came up', () => {
    // 4X EDR, 2 hours: 103.125e9 bit/s x 7200 s = 7.425e14 bits
    expect(bitErrorRate(742_500, 4, 'EDR', 7200)).toBeCloseTo(1e-9, 20);
    const findings = bitErrorRateFindings(...portWith(742_500, 12), () => 7200);
    expect(findings.map((f) => [f.severity, f.alert, f.summary])).toEqual([
      [
        'warning',
        'InfiniBandLinkBitErrorRateHigh',
        'port mlx5_0/1 (4X EDR), this port: symbol errors since reset: 742500, over the bits carried since the link came up 2 hours ago: BER ≈ 1.0e-9, above 10^-12',
      ],
      [
        'info',
        undefined,
        'port mlx5_0/1 (4X EDR), the switch port at the other end: symbol errors since reset: 12, over the bits carried since the link came up 2 hours ago: BER ≈ 1.6e-14',
      ],
    ]);
  });

  it('says nothing without the time the link has been up, for a saturated counter or none at all', () => {
    expect(bitErrorRateFindings(...portWith(742_500, 12), () => undefined)).toEqual([]);
    expect(bitErrorRateFindings(...portWith(65_535, undefined, true), () => 7200)).toEqual([]);
    expect(bitErrorRateFindings(...portWith(0, 0), () => 7200)).toEqual([]);
  });
});

describe('findings mirror the alerts and the runbooks', () => {
  it('name shipped alerts at their severity and runbook sections that exist', () => {
    const rules = readFileSync(path.join(PROJECT_ROOT, 'rules/infiniband-alerts.yml'), 'utf8');
    const runbooks = readFileSync(path.join(PROJECT_ROOT, 'docs/runbooks.md'), 'utf8');
    const optical = moduleOf('mlxlink-osfp-optical-excerpt.txt');
    const all = [
      ...pcieFindings(devices, readings),
      ...moduleFindings([
        { ...optical, temperatureCelsius: 80, rxPowerDbm: [-20], ber: { symbol: 1e-10 }, linkDownReason: { opcode: 1, reason: 'x' } },
      ]),
    ];
    for (const finding of all) {
      expect(runbooks.toLowerCase(), finding.runbook).toContain(`## ${finding.runbook}`);
      if (finding.alert)
        expect(rules, finding.alert).toMatch(new RegExp(`alert: ${finding.alert}\\n(?:.*\\n){1,12}?\\s+severity: ${finding.severity}`));
    }
  });
});
