// The pcie collector: the PCIe link of each adapter's PCI function (sysfs current_link_speed,
// current_link_width, max_link_speed, max_link_width, the port above it, AER totals): a card that
// trained at x8 or a generation down moves a fraction of what its ACTIVE ports say. The files
// change only when the link trains (boot, a reset, a hot-plug): each device is read when it first
// appears, when one of its ports changed state (an adapter reset retrains its PCIe link too), and
// then with the rhythm of its identity (every IDENTITY_MAX_AGE_MS), not every reading
// (sources/pcie.ts). A device without these files (a VF, an old kernel, a software device) gives
// no series and no error.
import { collectorSwitch } from '../../config/flags.js';
import type { ExpositionBuffer } from '../../exposition/buffer.js';
import { counter, gauge, type MetricSpec } from '../../exposition/metric-spec.js';
import { Samples } from '../../exposition/samples.js';
import type { Finding } from '../../model/finding.js';
import type { Device, Port } from '../../model/host.js';
import { BYTES_PER_GIGABIT, LANE_RATES } from '../../model/link-rate.js';
import {
  AER_SEVERITIES,
  PCIE_DEGRADATION_REASONS,
  describePcieRate,
  pcieBandwidthBytesPerSecond,
  pcieDegradation,
  pcieLimits,
  type PcieLimit,
  type PcieReading,
} from '../../model/pcie.js';
import { PORT_STATE_ACTIVE } from '../../model/port-state.js';
import type { ItemError, Snapshot } from '../../model/snapshot.js';
import { readPcieLink } from '../../sources/pcie.js';
import type { SysfsFiles } from '../../sources/sysfs-files.js';
import { defineCollector, type Collector, type CollectorContext, type Reader, type Reading } from '../../collection/collector.js';
import { HOST_READING, IDENTITY_MAX_AGE_MS, SYSFS_PATH, sysfsFiles } from './host-reading.js';
import { SYSFS_PART } from '../parts.js';

const DEVICE = ['device'] as const;
const PORT = ['device', 'port'] as const;

export const PCIE_SWITCH = collectorSwitch(
  'pcie',
  'pcie',
  true,
  'Read the PCIe link of each adapter from sysfs (with its identity, not every reading).',
);

class PcieReader implements Reader<readonly PcieReading[]> {
  private readonly files: SysfsFiles;
  private readonly known = new Map<string, { reading: PcieReading | undefined; readAt: number; states: string }>();
  private last: readonly PcieReading[] = [];

  constructor(private readonly context: CollectorContext) {
    this.files = sysfsFiles(context);
  }

  async read(snapshot: Snapshot): Promise<Reading<readonly PcieReading[]>> {
    const errors: ItemError[] = [];
    const now = this.context.now();
    const names = new Set(snapshot.devices.map((device) => device.name));
    let changed = false;
    for (const name of [...this.known.keys()]) {
      if (names.has(name)) continue;
      this.known.delete(name);
      changed = true;
    }
    for (const device of snapshot.devices) {
      const known = this.known.get(device.name);
      // An adapter reset retrains the PCIe link too: its ports' states change with it.
      const states = device.ports.map((port) => port.state?.id ?? '').join(',');
      if (known && known.states === states && now - known.readAt < IDENTITY_MAX_AGE_MS) continue;
      const read = readPcieLink(this.files, device.name);
      errors.push(...read.errors);
      // A reading with errors is tried again at the next reading.
      this.known.set(device.name, { reading: read.pcie, readAt: read.errors.length > 0 ? Number.NEGATIVE_INFINITY : now, states });
      changed = true;
    }
    // The same part object while nothing was read again: its series are not rendered again for it.
    if (changed) this.last = snapshot.devices.flatMap((device) => this.known.get(device.name)?.reading ?? []);
    return { part: this.last, errors };
  }
}

/** The PCIe link of each adapter's PCI function (collector `pcie`), and what it means for its ports. */
export const PCIE_METRICS = {
  widthLanes: gauge(
    'infiniband_device_pcie_link_width_lanes',
    DEVICE,
    "Lanes the adapter's PCIe link trained at (sysfs current_link_width). Below infiniband_device_pcie_link_width_max_lanes: a wrong slot, a riser or BIOS bifurcation halves what the adapter can move.",
  ),
  widthMaxLanes: gauge(
    'infiniband_device_pcie_link_width_max_lanes',
    DEVICE,
    "Lanes the adapter's PCIe interface can use (sysfs max_link_width).",
  ),
  transferRate: gauge(
    'infiniband_device_pcie_link_transfer_rate',
    DEVICE,
    "Rate per lane the adapter's PCIe link trained at, in GT/s (2.5 Gen1, 5 Gen2, 8 Gen3, 16 Gen4, 32 Gen5, 64 Gen6; sysfs current_link_speed).",
  ),
  maxTransferRate: gauge(
    'infiniband_device_pcie_link_max_transfer_rate',
    DEVICE,
    "Highest rate per lane the adapter's PCIe interface can run, in GT/s (sysfs max_link_speed).",
  ),
  bandwidth: gauge(
    'infiniband_device_pcie_bandwidth_bytes_per_second',
    DEVICE,
    "Usable bandwidth of the adapter's PCIe link in each direction, after line coding (8b/10b Gen1-2, 128b/130b Gen3-5, FLIT Gen6): lanes x GT/s x coding / 8. Everything its InfiniBand ports carry crosses it.",
  ),
  degraded: gauge(
    'infiniband_device_pcie_link_degraded',
    [...DEVICE, 'reason'],
    '1 when the adapter\'s PCIe link trained below what the adapter can do: reason="width" (fewer lanes) or "speed" (a lower generation); 0 when not. Absent where sysfs does not tell.',
  ),
  aerErrors: counter(
    'infiniband_device_pcie_aer_errors_total',
    [...DEVICE, 'severity'],
    'PCIe errors the adapter reported by Advanced Error Reporting since boot (sysfs aer_dev_*, TOTAL_ERR_* lines): severity="correctable" (the link retried; a steady rise means a marginal slot, riser or card), "nonfatal", "fatal". Absent without AER statistics.',
  ),
  portLimited: gauge(
    'infiniband_port_pcie_limited',
    PORT,
    "1 when this active port's adapter has less PCIe bandwidth than the data rates of its active ports add up to: the host cannot feed the link at its rate. 0 when it can. Present for active ports of adapters with a known PCIe link.",
  ),
} as const;

const FAMILIES: readonly MetricSpec[] = Object.values(PCIE_METRICS);

const bit = (flag: boolean): number => (flag ? 1 : 0);

/** The samples of the `pcie` collector: one reading per device that has a PCIe link, the ports' limits. */
export function pcieSamples(readings: readonly PcieReading[], limits: readonly PcieLimit[]): Samples {
  const samples = new Samples();
  const M = PCIE_METRICS;
  // Family by family: a family's samples are contiguous in the text.
  for (const r of readings) samples.add(M.widthLanes, { device: r.device }, r.current.lanes);
  for (const r of readings) samples.add(M.widthMaxLanes, { device: r.device }, r.max.lanes);
  for (const r of readings) samples.add(M.transferRate, { device: r.device }, r.current.gtps);
  for (const r of readings) samples.add(M.maxTransferRate, { device: r.device }, r.max.gtps);
  for (const r of readings) samples.add(M.bandwidth, { device: r.device }, pcieBandwidthBytesPerSecond(r.current));
  for (const r of readings) {
    const degradation = pcieDegradation(r);
    for (const reason of PCIE_DEGRADATION_REASONS) {
      const degraded = degradation[reason];
      if (degraded !== undefined) samples.add(M.degraded, { device: r.device, reason }, bit(degraded));
    }
  }
  for (const r of readings)
    for (const severity of AER_SEVERITIES) samples.add(M.aerErrors, { device: r.device, severity }, r.aer[severity]);
  for (const limit of limits) samples.add(M.portLimited, { device: limit.device, port: String(limit.port) }, bit(limit.limited));
  return samples;
}

function writeMetrics(snapshot: Snapshot, out: ExpositionBuffer): void {
  const readings = PCIE.of(snapshot) ?? [];
  pcieSamples(readings, pcieLimits(readings, portDemands(snapshot.devices))).writeTo(FAMILIES, out);
}

const GB = 1e9;
/** GB/s, rounded down: "at most ~31 GB/s" for 31.5. */
const gigabytes = (bytesPerSecond: number): string => {
  const value = bytesPerSecond / GB;
  return value >= 10 ? String(Math.floor(value)) : (Math.floor(value * 10) / 10).toFixed(1);
};

/** A port's data rate after line coding, bytes/s, while its width and speed are known. */
function dataRate(port: Port): number | undefined {
  return port.width !== undefined && port.speed !== undefined
    ? port.width * LANE_RATES[port.speed].dataGbps * BYTES_PER_GIGABIT
    : undefined;
}

/** The ports of `devices` as pcieLimits() judges them. */
export function portDemands(devices: readonly Device[]) {
  return devices.flatMap((device) =>
    device.ports.map((port) => ({
      device: device.name,
      port: port.port,
      active: port.state?.id === PORT_STATE_ACTIVE,
      dataRateBytesPerSecond: dataRate(port),
    })),
  );
}

/** "its NDR port", "its 2 ports (HDR, HDR)". */
function portsPhrase(ports: readonly Port[]): string {
  const speeds = ports.map((port) => port.speed ?? 'unknown-speed');
  return ports.length === 1 ? `its ${speeds[0]} port` : `its ${ports.length} ports (${speeds.join(', ')})`;
}

const PCIE_CAUSE =
  'A card in a slot wired for fewer lanes or an older generation, a riser or retimer that cannot do the speed, BIOS bifurcation of the slot, a card not fully seated, or a link that retrained down after errors.';

/**
 * The PCIe findings of a host: an adapter whose link trained below what it can do (warning, as
 * InfiniBandPCIeLinkDegraded), an adapter that cannot feed its active ports at their rate although
 * its link is as good as it gets (info: the platform's limit), and uncorrectable AER errors. The
 * entry point for the `pcie` collector's findings; `readings` are that collector's, `devices` the
 * host's.
 */
export function pcieFindings(devices: readonly Device[], readings: readonly PcieReading[]): Finding[] {
  const limits = pcieLimits(readings, portDemands(devices));
  const findings: Finding[] = [];
  for (const reading of readings) {
    const device = devices.find((d) => d.name === reading.device);
    const ports = device?.ports ?? [];
    const subject = { kind: 'device', device: reading.device } as const;
    const limit = limits.find((l) => l.device === reading.device && l.limited);
    const activePorts = ports.filter((port) => port.state?.id === PORT_STATE_ACTIVE && dataRate(port) !== undefined);
    const degradation = pcieDegradation(reading);
    const trained = describePcieRate(reading.current);
    if (degradation.width || degradation.speed) {
      const reasons = [degradation.width ? 'width' : undefined, degradation.speed ? 'speed' : undefined].filter(Boolean).join(' and ');
      const of = degradation.speed ? describePcieRate(reading.max) : `x${reading.max.lanes}`;
      const capacity = limit
        ? `: ${portsPhrase(activePorts)} can move at most ~${gigabytes(limit.bandwidthBytesPerSecond)} GB/s of ${activePorts.length === 1 ? 'its' : 'their'} ${gigabytes(limit.demandBytesPerSecond)}`
        : '';
      const slotLimit = slotLimitOf(reading);
      findings.push({
        condition: 'pcie-link-degraded',
        severity: 'warning',
        subject,
        summary: `${reading.device} runs PCIe ${trained} of ${of}${capacity}`,
        meaning: `The adapter's PCIe link trained below what the adapter can do (by ${reasons}). Its InfiniBand ports still say ACTIVE at full rate, but everything they carry crosses this link${limit ? ', which is slower than they are' : ''}.`,
        cause: slotLimit ? `The slot is the limit: the port above the adapter (${slotLimit}) can do no more. ${PCIE_CAUSE}` : PCIE_CAUSE,
        remedy: slotLimit
          ? `move the card to a slot wired for ${describePcieRate(reading.max)} (see the server's slot map), or accept the limit; lspci -vv shows LnkCap and LnkSta of the card and of the bridge above it`
          : 'reseat the card, remove or replace the riser, check the BIOS slot settings (bifurcation off, link speed Auto); lspci -vv -s <address> shows LnkCap (what it can do) against LnkSta (what it trained at)',
        runbook: 'infinibandpcielinkdegraded',
        alert: 'InfiniBandPCIeLinkDegraded',
      });
    } else if (limit) {
      findings.push({
        condition: 'pcie-limited',
        severity: 'info',
        subject,
        summary: `${reading.device}'s PCIe ${trained} link carries at most ~${gigabytes(limit.bandwidthBytesPerSecond)} GB/s, less than the ${gigabytes(limit.demandBytesPerSecond)} GB/s of the active ports it feeds`,
        meaning:
          "The adapter's PCIe link is as good as the adapter can do, but the ports behind it together can move more: they cannot all run at their rate at once.",
        cause:
          "The card's design (a dual-port card whose ports together exceed its PCIe link), or ports of one card on separate PCI functions that share its link.",
        remedy:
          'nothing to fix on this host: plan jobs and expectations for the PCIe rate, or use a card or slot of a later PCIe generation',
        runbook: 'infinibandpcielinkdegraded',
        alert: undefined,
      });
    }
    const uncorrectable = (reading.aer.nonfatal ?? 0) + (reading.aer.fatal ?? 0);
    if (uncorrectable > 0) {
      findings.push({
        condition: 'pcie-aer-uncorrectable',
        severity: 'warning',
        subject,
        summary: `${reading.device} reported ${[reading.aer.fatal ? `${reading.aer.fatal} fatal` : undefined, reading.aer.nonfatal ? `${reading.aer.nonfatal} non-fatal` : undefined].filter(Boolean).join(' and ')} uncorrectable PCIe error${uncorrectable === 1 ? '' : 's'} since boot (and ${reading.aer.correctable ?? 0} correctable)`,
        meaning:
          'An uncorrectable PCIe error loses a transaction: the driver may have reset the adapter, and jobs using it may have failed.',
        cause: 'A marginal slot, riser or card, a card not fully seated, or a firmware fault.',
        remedy:
          'read dmesg for "AER" and "mlx5_core" around the errors; reseat the card, update its firmware and the BIOS; replace the card if errors recur',
        runbook: 'infinibandpcielinkdegraded',
        alert: undefined,
      });
    }
  }
  return findings;
}

/** The capability of the port above the adapter, when it is what holds the link down. */
function slotLimitOf(reading: PcieReading): string | undefined {
  const up = reading.upstream;
  if (!up) return undefined;
  const narrower = up.lanes !== undefined && reading.max.lanes !== undefined && up.lanes < reading.max.lanes;
  const slower = up.gtps !== undefined && reading.max.gtps !== undefined && up.gtps < reading.max.gtps;
  return narrower || slower ? describePcieRate(up) : undefined;
}

export const PCIE: Collector<readonly PcieReading[]> = defineCollector({
  name: 'pcie',
  checks: 'the PCIe links of the adapters',
  enabledBy: PCIE_SWITCH,
  flags: [PCIE_SWITCH, SYSFS_PATH],
  scope: 'host',
  schedule: { cycle: HOST_READING },
  onOverrun: 'keep',
  setUp: (context) => new PcieReader(context),
  // infiniband_port_pcie_limited follows the ports' states and rates: the sysfs collector's reading.
  metrics: { families: FAMILIES, inputs: [SYSFS_PART], write: writeMetrics },
  findings: (snapshot) => pcieFindings(snapshot.devices, PCIE.of(snapshot) ?? []),
  failure: {
    consequence: "the adapters' PCIe links are unknown",
    meaning: 'An adapter whose PCIe link trained narrow or slow would not show.',
    cause: 'A wrong --path.sysfs, or a driver returning errors.',
  },
});
