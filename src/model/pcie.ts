// The PCIe link of an adapter's PCI function, from sysfs (`current_link_speed`, `current_link_width`,
// `max_link_speed`, `max_link_width`, `aer_dev_*`): parsing every format kernels have printed,
// what each generation's line coding leaves usable, and whether the link trained below what the
// adapter can do or below what its InfiniBand ports need.
//
// Formats of the speed files (drivers/pci/pci-sysfs.c):
//   - since 5.2 (pci_speed_string): "2.5 GT/s PCIe", "5.0 GT/s PCIe", "8.0 GT/s PCIe",
//     "16.0 GT/s PCIe", "32.0 GT/s PCIe", "64.0 GT/s PCIe"; "Unknown" when the link reports none;
//   - before (a switch in each show function, then PCIE_SPEED2STR): "2.5 GT/s", "5 GT/s", "8 GT/s",
//     "16 GT/s", "32 GT/s"; "Unknown speed";
//   - backports and vendor kernels also print "8.0 GT/s" without the suffix.
// The width files print the lane count as a decimal, "0" when the link reports none (a VF, a
// function whose link registers read 0).
import { BYTES_PER_GIGABIT } from './link-rate.js';

/** A PCIe transfer rate and its line coding, per generation. */
export interface PcieGeneration {
  generation: number;
  /** Transfers per second per lane, in GT/s (one bit per transfer per lane, before coding). */
  gtps: number;
  coding: string;
  /** Share of the raw bits left for data-link traffic after the line coding. */
  efficiency: number;
}

/**
 * Gen1/2 code 8 bits in 10; Gen3-5 128 in 130. Gen6 (64 GT/s, PAM4) sends 256-byte FLITs: 236 bytes
 * of TLPs, 6 of data-link payload, 8 of CRC and 6 of FEC. The CRC and FEC are its coding overhead;
 * the 6 DLP bytes carry the ACK/NAK and flow-control traffic that earlier generations sent as
 * DLLPs after their coding, so 242/256 is the figure comparable with 128b/130b.
 */
export const PCIE_GENERATIONS: readonly PcieGeneration[] = [
  { generation: 1, gtps: 2.5, coding: '8b/10b', efficiency: 8 / 10 },
  { generation: 2, gtps: 5, coding: '8b/10b', efficiency: 8 / 10 },
  { generation: 3, gtps: 8, coding: '128b/130b', efficiency: 128 / 130 },
  { generation: 4, gtps: 16, coding: '128b/130b', efficiency: 128 / 130 },
  { generation: 5, gtps: 32, coding: '128b/130b', efficiency: 128 / 130 },
  { generation: 6, gtps: 64, coding: '242B/256B FLIT', efficiency: 242 / 256 },
];

export function pcieGeneration(gtps: number): PcieGeneration | undefined {
  return PCIE_GENERATIONS.find((generation) => generation.gtps === gtps);
}

/** The text of a speed file: a rate in GT/s, `unknown` (the kernel said so), or undefined (not a speed at all). */
export type ParsedSpeed = number | 'unknown' | undefined;

const SPEED = /^\s*(\d+(?:\.\d+)?)\s*GT\/s(?:\s+PCIe)?\s*$/;
const UNKNOWN_SPEED = /^\s*Unknown(?: speed)?\s*$/;

/** Parse `current_link_speed` or `max_link_speed`. A rate no generation has (e.g. "3 GT/s") is not a speed. */
export function parsePcieSpeed(text: string): ParsedSpeed {
  if (UNKNOWN_SPEED.test(text)) return 'unknown';
  const match = SPEED.exec(text);
  if (!match) return undefined;
  const gtps = Number(match[1]);
  return pcieGeneration(gtps) ? gtps : undefined;
}

/** The lane counts a PCIe link can have. */
export const PCIE_WIDTHS: readonly number[] = [1, 2, 4, 8, 12, 16, 32];

/** Parse `current_link_width` or `max_link_width`: lanes, `unknown` for "0", undefined for anything else. */
export function parsePcieWidth(text: string): number | 'unknown' | undefined {
  const match = /^\s*(\d{1,3})\s*$/.exec(text);
  if (!match) return undefined;
  const lanes = Number(match[1]);
  if (lanes === 0) return 'unknown';
  return PCIE_WIDTHS.includes(lanes) ? lanes : undefined;
}

/** One end's view of a link: rate in GT/s and lanes; undefined where the kernel did not know. */
export interface PcieLinkRate {
  gtps: number | undefined;
  lanes: number | undefined;
}

export const AER_SEVERITIES = ['correctable', 'nonfatal', 'fatal'] as const;
export type AerSeverity = (typeof AER_SEVERITIES)[number];

/** The file of each AER severity, and the name of its total line. */
export const AER_FILES: Readonly<Record<AerSeverity, { file: string; total: string }>> = {
  correctable: { file: 'aer_dev_correctable', total: 'TOTAL_ERR_COR' },
  nonfatal: { file: 'aer_dev_nonfatal', total: 'TOTAL_ERR_NONFATAL' },
  fatal: { file: 'aer_dev_fatal', total: 'TOTAL_ERR_FATAL' },
};

/**
 * Parse an `aer_dev_*` file: one "<error name> <count>" line per error bit (names with spaces on
 * 4.19, "Receiver Error"; single words later, "RxErr"), then "TOTAL_ERR_COR <n>" (or _FATAL,
 * _NONFATAL): the number of ERR_* messages the device sent, which is what is exported. Undefined
 * when the text has no such total or a line is not "<name> <count>".
 */
export function parseAerTotal(text: string, severity: AerSeverity): number | undefined {
  let total: number | undefined;
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const match = /^\s*(\S.*?)\s+(\d+)\s*$/.exec(line);
    if (!match) return undefined;
    if (match[1] === AER_FILES[severity].total) total = Number(match[2]);
  }
  return total;
}

/** What sysfs says of one InfiniBand device's PCI function. */
export interface PcieReading {
  device: string;
  /** The function's PCI address (`0000:3b:00.0`), from the `device` symlink; undefined when it does not name one. */
  address: string | undefined;
  current: PcieLinkRate;
  /** What the adapter can do (its Link Capabilities). */
  max: PcieLinkRate;
  /**
   * What the port above can do (the `max_link_*` of the bridge or switch port the function hangs
   * from): tells a slot that cannot do more from a link that trained down. Undefined when absent.
   */
  upstream: PcieLinkRate | undefined;
  /** AER message totals, per severity, where the kernel has AER statistics for the function. */
  aer: Partial<Record<AerSeverity, number>>;
}

/** Usable bytes per second of a link after its line coding: lanes x GT/s x efficiency / 8. */
export function pcieBandwidthBytesPerSecond(rate: PcieLinkRate): number | undefined {
  if (rate.gtps === undefined || rate.lanes === undefined) return undefined;
  const generation = pcieGeneration(rate.gtps);
  return generation && rate.lanes * rate.gtps * generation.efficiency * BYTES_PER_GIGABIT;
}

export const PCIE_DEGRADATION_REASONS = ['width', 'speed'] as const;
export type PcieDegradationReason = (typeof PCIE_DEGRADATION_REASONS)[number];

/**
 * Per reason: true when the link trained below what the adapter can do, false when it did not,
 * absent when either side is unknown. The adapter's own maximum is the reference, not the slot's:
 * a x16 card in a slot wired x8 is exactly the wrong slot this is meant to catch (`upstream` then
 * says that the slot is the limit).
 */
export function pcieDegradation(reading: Pick<PcieReading, 'current' | 'max'>): Partial<Record<PcieDegradationReason, boolean>> {
  const result: Partial<Record<PcieDegradationReason, boolean>> = {};
  const { current, max } = reading;
  if (current.lanes !== undefined && max.lanes !== undefined) result.width = current.lanes < max.lanes;
  if (current.gtps !== undefined && max.gtps !== undefined) result.speed = current.gtps < max.gtps;
  return result;
}

/** `Gen5 x8` (generation from the rate; `x?` when the lanes are unknown). */
export function describePcieRate(rate: PcieLinkRate): string {
  const generation = rate.gtps === undefined ? undefined : pcieGeneration(rate.gtps);
  const gen = generation ? `Gen${generation.generation}` : rate.gtps === undefined ? 'Gen?' : `${rate.gtps} GT/s`;
  return `${gen} x${rate.lanes ?? '?'}`;
}

/** The PCI slot of a function: its address without the function number (functions of one card share one link). */
export function pciSlot(address: string): string {
  return address.replace(/\.[0-7]$/, '');
}

/** A port as the PCIe limit judges it. */
export interface PortDemand {
  device: string;
  port: number;
  /** Logical state ACTIVE: the port can carry traffic. */
  active: boolean;
  /** Data rate after the InfiniBand line coding, bytes/s (width x per-lane data rate); undefined while unknown. */
  dataRateBytesPerSecond: number | undefined;
}

export interface PcieLimit {
  device: string;
  port: number;
  /** The adapter's PCIe link cannot carry what its active ports can. */
  limited: boolean;
  /** Usable PCIe bandwidth of the slot, and the sum of the data rates of its active ports, bytes/s. */
  bandwidthBytesPerSecond: number;
  demandBytesPerSecond: number;
}

/**
 * `infiniband_port_pcie_limited` for every active port with a known data rate whose adapter's PCIe
 * bandwidth is known: limited when that bandwidth is below the sum of the data rates of the active
 * ports it feeds. The functions of one card (mlx5's one device per port, on functions .0 and .1)
 * share one PCIe link, so devices are grouped by PCI slot, and the slot's bandwidth is the widest
 * of its functions' (a VF reports none).
 */
export function pcieLimits(readings: readonly PcieReading[], ports: readonly PortDemand[]): PcieLimit[] {
  const slotOf = new Map<string, string>();
  const bandwidthOf = new Map<string, number>();
  for (const reading of readings) {
    const bandwidth = pcieBandwidthBytesPerSecond(reading.current);
    if (bandwidth === undefined) continue;
    const slot = reading.address === undefined ? `device ${reading.device}` : pciSlot(reading.address);
    slotOf.set(reading.device, slot);
    bandwidthOf.set(slot, Math.max(bandwidth, bandwidthOf.get(slot) ?? 0));
  }
  const counted = ports.filter((port) => port.active && port.dataRateBytesPerSecond !== undefined && slotOf.has(port.device));
  const demandOf = new Map<string, number>();
  for (const port of counted) {
    const slot = slotOf.get(port.device)!;
    demandOf.set(slot, (demandOf.get(slot) ?? 0) + port.dataRateBytesPerSecond!);
  }
  return counted.map((port) => {
    const slot = slotOf.get(port.device)!;
    const bandwidthBytesPerSecond = bandwidthOf.get(slot)!;
    const demandBytesPerSecond = demandOf.get(slot)!;
    return {
      device: port.device,
      port: port.port,
      limited: bandwidthBytesPerSecond < demandBytesPerSecond,
      bandwidthBytesPerSecond,
      demandBytesPerSecond,
    };
  });
}
