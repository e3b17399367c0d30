// The module collector end to end: the exporter on the link physics host (test/support/physics-host.ts)
// with --mstlink.path pointing at a fake mstlink that replays recorded captures through the
// exporter's real command runner; one module cycle, then /metrics port by port (an optical module,
// a copper cable, a port whose tool call fails, an empty cage), `check` on the same host, and hosts
// where the tool must not run at all.
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MODULE } from '../../../src/collectors/host/module.js';
import { runCheck } from '../../../src/commands/check/command.js';
import { Exporter } from '../../../src/commands/serve/exporter.js';
import { moduleToolArguments } from '../../../src/sources/module/module-tools.js';
import { settingsFromFlags } from '../../support/exporter.js';
import { samplesOf, sampleValue, scrape } from '../../support/exposition.js';
import { fakeModuleTool, type FakeTool } from '../../support/fake-module-tool.js';
import { physicsHost, type PhysicsHost } from '../../support/physics-host.js';
import { FIXTURES, ZOO } from '../../support/trees.js';
import path from 'node:path';

/** The exporter on `flags`, the module tool found from --mstlink.path (no runner injected for it), after one host reading and one module cycle. */
async function exporterAfterOneModuleCycle(flags: string[]): Promise<Exporter> {
  const exporter = new Exporter({
    settings: settingsFromFlags(flags),
    logger: pino({ level: 'silent' }),
    runners: { ethtool: 'not-installed' },
  });
  await exporter.collectOnce();
  await exporter.collectors.runCycle(MODULE.schedule.cycle);
  return exporter;
}

async function check(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runCheck(
    argv,
    { stdout: { write: (text: string) => (stdout += text), isTTY: false }, stderr: { write: (text: string) => (stderr += text) }, env: {} },
    { runners: { ethtool: 'not-installed' } },
  );
  return { code, stdout, stderr };
}

const port = (device: string) => `device="${device}",port="1"`;

describe('the module collector with a fake mstlink replaying recorded captures through the real runner', () => {
  let host: PhysicsHost;
  let exporter: Exporter;
  let text: string;

  beforeAll(async () => {
    host = await physicsHost();
    exporter = await exporterAfterOneModuleCycle(host.flags);
    text = await scrape(exporter);
  });
  afterAll(async () => {
    await exporter?.stop();
    await host?.remove();
  });

  it("runs the tool once for each port of each mlx5 device, with the source's arguments, after asking its --help once", async () => {
    const expected = ['mlx5_0', 'mlx5_1', 'mlx5_2', 'mlx5_3'].map((device) => moduleToolArguments({ device, port: 1 }).join(' '));
    const calls = await host.tool.calls();
    // This fake tool fails its --help as it fails a run without a device: no histogram asked for.
    expect(calls[0]).toBe('--help');
    expect(calls.slice(1).sort()).toEqual(expected.sort());
    expect(samplesOf(text, 'infiniband_port_fec_histogram_blocks_total')).toEqual([]);
  });

  it('serves the optical module: its identity, temperature, voltage, per-lane powers and bias, and its own thresholds', () => {
    expect(samplesOf(text, 'infiniband_port_module_info').filter((line) => line.includes('"mlx5_0"'))).toEqual([
      `infiniband_port_module_info{${port('mlx5_0')},vendor="CLT",part_number="T-F4GS-BV0",serial="CWJH05025502589",cable_type="",length_meters=""} 1`,
    ]);
    expect(sampleValue(text, `infiniband_port_module_temperature_celsius{${port('mlx5_0')}}`)).toBe(54);
    expect(sampleValue(text, `infiniband_port_module_voltage_volts{${port('mlx5_0')}}`)).toBe(3.2612);
    expect(samplesOf(text, 'infiniband_port_module_rx_power_dbm')).toEqual(
      [1.886, 1.989, 2.281, 1.976].map((dbm, i) => `infiniband_port_module_rx_power_dbm{${port('mlx5_0')},lane="${i + 1}"} ${dbm}`),
    );
    expect(samplesOf(text, 'infiniband_port_module_tx_power_dbm')).toHaveLength(4);
    expect(sampleValue(text, `infiniband_port_module_tx_bias_amperes{${port('mlx5_0')},lane="3"}`)).toBe(0.00838);
    expect(sampleValue(text, `infiniband_port_module_threshold{${port('mlx5_0')},measure="temperature",level="high_alarm"}`)).toBe(75);
    expect(sampleValue(text, `infiniband_port_module_threshold{${port('mlx5_0')},measure="rx_power",level="low_alarm"}`)).toBe(-10.41);
    expect(sampleValue(text, `infiniband_port_module_threshold{${port('mlx5_0')},measure="voltage",level="high_alarm"}`)).toBe(3.63);
  });

  it("serves the copper cable's identity (from the tool's JSON) and its PHY BER, and no temperature, power or threshold", () => {
    expect(samplesOf(text, 'infiniband_port_module_info').filter((line) => line.includes('"mlx5_1"'))).toEqual([
      `infiniband_port_module_info{${port('mlx5_1')},vendor="FS",part_number="Q28-PC03",serial="S2202655321-1",cable_type="Passive copper cable",length_meters="3"} 1`,
    ]);
    expect(sampleValue(text, `infiniband_port_phy_ber{${port('mlx5_1')},kind="effective"}`)).toBe(1.5e-254);
    // The raw errors of each lane, from the -c section; a passive copper cable reports no lane flags.
    expect(samplesOf(text, 'infiniband_port_phy_lane_errors_total')).toEqual(
      [1, 2, 3, 4].map((lane) => `infiniband_port_phy_lane_errors_total{${port('mlx5_1')},lane="${lane}"} 0`),
    );
    expect(samplesOf(text, 'infiniband_port_module_lane_fault')).toEqual([]);
    const sensors = text
      .split('\n')
      .filter(
        (line) =>
          /^infiniband_port_module_(temperature|voltage|rx_power|tx_power|tx_bias|threshold)/.test(line) && line.includes('"mlx5_1"'),
      );
    expect(sensors).toEqual([]);
  });

  it('serves nothing for the empty cage, and nothing for the port whose tool call failed', () => {
    for (const device of ['mlx5_2', 'mlx5_3']) {
      expect(
        text.split('\n').filter((line) => /^infiniband_port_(module_|phy_ber|link_down_reason)/.test(line) && line.includes(`"${device}"`)),
        device,
      ).toEqual([]);
    }
  });

  it('counts the failed call as a read error of the collector, which keeps succeeding for the other ports', () => {
    expect(sampleValue(text, 'infiniband_exporter_read_errors_total{collector="module"}')).toBe(1);
    expect(sampleValue(text, 'infiniband_exporter_collector_success{collector="module"}')).toBe(1);
    expect(sampleValue(text, 'infiniband_exporter_command_timeouts_total{command="mstlink"}')).toBe(0);
  });

  it('keeps serving /metrics and the rest of the host after the failed call', async () => {
    const response = await exporter.app.inject({ url: '/metrics' });
    expect(response.statusCode).toBe(200);
    expect(sampleValue(response.body, 'infiniband_exporter_collector_success{collector="sysfs"}')).toBe(1);
    expect(sampleValue(response.body, 'infiniband_device_pcie_link_width_lanes{device="mlx5_1"}')).toBe(8);
  });
});

describe('check on the link physics host with the fake mstlink', () => {
  const hosts: PhysicsHost[] = [];
  afterAll(async () => {
    for (const host of hosts) await host.remove();
  });

  it('names the module that is over its own temperature threshold (a capture derived from a real one), in text and JSON', async () => {
    const host = await physicsHost({ cables: { mlx5_0: { stdout: 'derived-osfp-optical-hot.txt' } } });
    hosts.push(host);
    const text = await check(host.flags);
    expect(text.code).toBe(1);
    expect(text.stdout).toContain(
      'WARNING   the module in mlx5_0/1 (CLT T-F4GS-BV0, serial CWJH05025502589) is at 77 °C, at or above its own high alarm threshold of 75 °C',
    );
    expect(text.stdout).not.toContain('cables and optical modules:');
    // The port whose call failed is said, as information: the rest was read.
    expect(text.stdout).toContain(
      'INFO      collector module could not read 1 item (first: mstlink -d mlx5_2 -p 1 -m -c --json: exit code 1',
    );
    const json = JSON.parse((await check([...host.flags, '--format', 'json'])).stdout) as {
      findings: { condition: string; subject: { device?: string; port?: number }; alert: string | null }[];
      collectors: { collector: string }[];
    };
    expect(json.findings.filter((f) => f.condition === 'module-temperature-high')).toEqual([
      expect.objectContaining({ subject: { kind: 'port', device: 'mlx5_0', port: 1 }, alert: 'InfiniBandModuleTemperatureHigh' }),
    ]);
    expect(json.collectors.map((c) => c.collector)).toContain('module');
  });

  it('finds no module problem when every module is within its thresholds', async () => {
    const host = await physicsHost();
    hosts.push(host);
    const json = JSON.parse((await check([...host.flags, '--format', 'json'])).stdout) as { findings: { condition: string }[] };
    expect(json.findings.map((f) => f.condition).filter((condition) => condition.startsWith('module-'))).toEqual([]);
  });
});

describe('the FEC histogram, where the tool has it (its --help recorded from mstflint 4.21)', () => {
  let host: PhysicsHost;
  let exporter: Exporter;
  let text: string;

  beforeAll(async () => {
    host = await physicsHost({
      help: 'mstlink-4.21-help.txt',
      cables: {
        // MFT 4.34.1 on a ConnectX-7: the histogram beside the module and counters (recorded)
        mlx5_0: { stdout: 'mlxlink-4.34.1-cx7-400g-dr4-fec-histogram.json' },
        // the same run where the active FEC has no histogram: exit status 1, the rest printed
        mlx5_1: { stdout: 'derived-mlxlink-4.34.1-no-histogram.json', exitCode: 1 },
      },
    });
    exporter = await exporterAfterOneModuleCycle(host.flags);
    text = await scrape(exporter);
  });
  afterAll(async () => {
    await exporter?.stop();
    await host?.remove();
  });

  it('asks for it in the same run as the module and counters, once its --help lists the options', async () => {
    const calls = await host.tool.calls();
    expect(calls.filter((call) => call === '--help')).toHaveLength(1);
    expect(calls.filter((call) => call.startsWith('-d ')).sort()).toEqual(
      ['mlx5_0', 'mlx5_1', 'mlx5_2', 'mlx5_3'].map((device) => moduleToolArguments({ device, port: 1 }, { fecHistogram: true }).join(' ')),
    );
  });

  it('serves the blocks of each bin as counters, and nothing for a port whose FEC has none', () => {
    const bins = samplesOf(text, 'infiniband_port_fec_histogram_blocks_total');
    expect(bins).toHaveLength(16);
    expect(bins.every((line) => line.includes(port('mlx5_0')))).toBe(true);
    expect(sampleValue(text, `infiniband_port_fec_histogram_blocks_total{${port('mlx5_0')},bin="0"}`)).toBe(22858119037881);
    expect(sampleValue(text, `infiniband_port_fec_histogram_blocks_total{${port('mlx5_0')},bin="8"}`)).toBe(3);
    expect(sampleValue(text, `infiniband_port_fec_histogram_blocks_total{${port('mlx5_0')},bin="15"}`)).toBe(0);
    expect(text).toContain('# TYPE infiniband_port_fec_histogram_blocks_total counter');
    // mlx5_1's module and lane errors are read all the same.
    expect(sampleValue(text, `infiniband_port_module_temperature_celsius{${port('mlx5_1')}}`)).toBe(62);
    expect(sampleValue(text, `infiniband_port_phy_lane_errors_total{${port('mlx5_1')},lane="2"}`)).toBe(28835305);
  });
});

describe('hosts where the module tool must not run', () => {
  let tool: FakeTool;
  const exporters: Exporter[] = [];
  beforeAll(async () => {
    tool = await fakeModuleTool({});
  });
  afterAll(async () => {
    for (const exporter of exporters) await exporter.stop();
    await tool.remove();
  });

  it('never runs on a host without mlx5 devices (a ConnectX-3 host): no command, no error', async () => {
    const exporter = await exporterAfterOneModuleCycle([
      '--path.sysfs',
      path.join(FIXTURES, 'sys/qdr-a0'),
      '--mstlink.path',
      tool.path,
      '--no-collector.diag',
    ]);
    exporters.push(exporter);
    expect(await tool.calls()).toEqual([]);
    const text = await scrape(exporter);
    expect(sampleValue(text, 'infiniband_exporter_read_errors_total{collector="module"}')).toBe(0);
    expect(samplesOf(text, 'infiniband_port_module_info')).toEqual([]);
  });

  it('asks only for the mlx5 devices of a mixed host (mlx4, qib, hfi1, iWARP beside mlx5)', async () => {
    const exporter = await exporterAfterOneModuleCycle(['--path.sysfs', ZOO, '--mstlink.path', tool.path, '--no-collector.diag']);
    exporters.push(exporter);
    const devices = (await tool.calls()).filter((call) => call.startsWith('-d ')).map((call) => call.split(' ')[1]);
    expect(devices.length).toBeGreaterThan(0);
    expect(devices.filter((device) => !device!.startsWith('mlx5_'))).toEqual([]);
  });
});
