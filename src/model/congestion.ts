// Congestion as time lost. PortXmitWait counts ticks in which a port had data to send and sent
// nothing. IBA: a tick is (Tick + 1) symbol times, Tick being PortSamplesControl's 8-bit field,
// and a symbol time is the time one byte takes on one lane (4 ns at SDR). NVIDIA's ibdiagnet
// manual ("Congestion Assessment on InfiniBand Links") says how its devices count: Switch-X,
// Switch-IB and Switch-IB 2 count 32 bytes per lane (Tick 31: the IBA reading), Quantum,
// Quantum-2 and Quantum-3 count 8 bytes per port whatever its width (Tick 7, one tick being
// 8 bytes at the port's whole rate). Pure functions: the collectors read Tick and the port rate.
import { LANE_RATES, type LinkSpeed, type LinkWidth } from './link-rate.js';

/** How a device counts a tick: IBA's symbol time per lane, or (NVIDIA Quantum) bytes at the port's whole rate. */
export type TickCounting = 'lane' | 'port';

/** Where a node's tick comes from: read from the device (PortSamplesControl), or its generation's documented value. */
export type TickSource = 'device' | 'default';

export interface XmitWaitTick {
  /** PortSamplesControl Tick, 0–255: a tick is Tick + 1 symbol times (bytes). */
  tick: number;
  counting: TickCounting;
  source: TickSource;
}

/** NodeInfo DeviceIDs of the switches whose counting the manual documents. */
const QUANTUM_DEVICE_IDS = new Set([0xd2f0, 0xd2f2, 0xd2f4]); // Quantum, Quantum-2, Quantum-3
const SWITCH_IB_DEVICE_IDS = new Set([0xc738, 0xcb20, 0xcf08]); // Switch-X(-2), Switch-IB, Switch-IB 2

/** Whether a device counts ticks over the port's whole rate (NVIDIA Quantum switches). */
export function tickCounting(deviceId: number | undefined): TickCounting {
  return deviceId !== undefined && QUANTUM_DEVICE_IDS.has(deviceId) ? 'port' : 'lane';
}

/**
 * The documented tick of a device's generation, for devices that do not answer PortSamplesControl
 * (ibsim never does). Quantum: 7 (8 bytes per port); Switch-X/Switch-IB: 31 (32 bytes per lane).
 * Other devices (adapters, other vendors' switches) are not in the table: Tick 0, one symbol time,
 * the shortest tick IBA allows, so that the ratio is a lower bound rather than an overstatement.
 */
export function defaultTick(deviceId: number | undefined): XmitWaitTick {
  const counting = tickCounting(deviceId);
  if (counting === 'port') return { tick: 7, counting, source: 'default' };
  if (deviceId !== undefined && SWITCH_IB_DEVICE_IDS.has(deviceId)) return { tick: 31, counting, source: 'default' };
  return { tick: 0, counting, source: 'default' };
}

/** A tick read from the device: its Tick field, counted as its generation counts. */
export function deviceTick(tick: number, deviceId: number | undefined): XmitWaitTick {
  return { tick, counting: tickCounting(deviceId), source: 'device' };
}

/** Seconds one PortXmitWait tick stands for on a port of `width` lanes at `speed`. */
export function xmitWaitTickSeconds(tick: XmitWaitTick, width: LinkWidth, speed: LinkSpeed): number {
  const bytes = tick.tick + 1;
  const laneBitsPerSecond = LANE_RATES[speed].dataGbps * 1e9;
  const bitsPerSecond = tick.counting === 'port' ? laneBitsPerSecond * width : laneBitsPerSecond;
  return (bytes * 8) / bitsPerSecond;
}

/** The largest value the 32-bit PortXmitWait of PortCounters holds: a counter there has stopped counting. */
export const XMIT_WAIT_MAX = 0xffffffff;

/**
 * The fraction of `elapsedSeconds` a port was stalled between two readings of PortXmitWait, clamped
 * to [0, 1]; undefined when no time passed, the counter went down (reset) or is saturated (the
 * ticks since are unknown). `saturated`: the reading's own flag (a 64-bit PortXmitWait of
 * PortCountersExtended passes 2^32); by default, the 32-bit counter at its maximum.
 */
export function stalledFraction(
  before: number,
  after: number,
  tickSeconds: number,
  elapsedSeconds: number,
  saturated = after >= XMIT_WAIT_MAX,
): number | undefined {
  if (!(elapsedSeconds > 0) || !(tickSeconds > 0) || after < before || saturated) return undefined;
  const ratio = ((after - before) * tickSeconds) / elapsedSeconds;
  return Math.min(1, Math.max(0, ratio));
}

/** Per port only from this share on: idle or barely waiting ports are left to the per-tier aggregates. */
export const CONGESTION_PORT_FLOOR = 0.01;

/** The share of time stalled from which a link counts as congested (InfiniBandFabricLinkCongested, job footprints). */
export const CONGESTED_LINK_RATIO = 0.3;

/** `down` toward the hosts, `up` away from them. */
export type CongestionDirection = 'down' | 'up';
