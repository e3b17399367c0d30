// The snapshot: plain, immutable data describing one host at one moment. Sources produce its
// parts; metrics are rendered from it; nothing in it refers back to files or processes.
import type { LinkSpeed, LinkWidth } from './link-rate.js';
import type { PhysicalStateName, PortStateName, StateReading } from './port-state.js';
import type { FabricSnapshot } from './fabric.js';

export const COLLECTORS = ['sysfs', 'ipoib', 'perfquery', 'sminfo', 'smpquery', 'fabric_discovery', 'fabric_ports', 'fabric_sa'] as const;
export type CollectorName = (typeof COLLECTORS)[number];

export const DIAG_COMMANDS = ['perfquery', 'sminfo', 'smpquery'] as const;
export type DiagCommand = (typeof DIAG_COMMANDS)[number];

/**
 * The tools fabric mode runs: sminfo asks each subnet manager of the SA's list for its own state;
 * perfquery reads counters switch by switch when the ibqueryerrors sweep cannot run.
 */
export const FABRIC_COMMANDS = ['ibnetdiscover', 'iblinkinfo', 'ibqueryerrors', 'saquery', 'sminfo', 'perfquery'] as const;
export type FabricCommand = (typeof FABRIC_COMMANDS)[number];

/** Any tool whose time-outs are counted in `infiniband_exporter_command_timeouts_total{command}`. */
export type CommandName = DiagCommand | FabricCommand;

/** One thing that could not be read: a log line and a count in `infiniband_exporter_read_errors_total`. */
export interface ReadError {
  collector: CollectorName;
  /** What failed, e.g. `class/infiniband/mlx5_0/ports/1/rate` or `perfquery -x mlx5_0 1`. */
  item: string;
  message: string;
}

export interface PortCounter {
  /** Name fragment, e.g. `symbol_errors`: `infiniband_port_<name>_total`. */
  name: string;
  /** Exported value (data counters already converted from 4-byte words to bytes). */
  value: number;
  /** The counter sits at the maximum of its width (4, 8, 16, 32 or 64 bits): it stopped counting. */
  saturated: boolean;
}

export interface Port {
  device: string;
  port: number;
  linkLayer: string | undefined;
  portGuid: string | undefined;
  state: StateReading<PortStateName> | undefined;
  physicalState: StateReading<PhysicalStateName> | undefined;
  /** Leading number of `rate`, Gb/s. */
  rateGbps: number | undefined;
  width: LinkWidth | undefined;
  speed: LinkSpeed | undefined;
  lid: number | undefined;
  smLid: number | undefined;
  smSl: number | undefined;
  lmc: number | undefined;
  capabilityMask: number | undefined;
  counters: readonly PortCounter[];
  hwCounters: ReadonlyMap<string, number>;
}

export interface Device {
  name: string;
  nodeType: string | undefined;
  nodeGuid: string | undefined;
  sysImageGuid: string | undefined;
  firmwareVersion: string | undefined;
  hcaType: string | undefined;
  boardId: string | undefined;
  hwRev: string | undefined;
  nodeDesc: string | undefined;
  ports: readonly Port[];
}

export interface IpoibInterface {
  name: string;
  /** HCA device and port carrying the interface; undefined when the mapping failed. */
  device: string | undefined;
  port: number | undefined;
  mode: 'datagram' | 'connected' | undefined;
  mtu: number | undefined;
  /** 0 when the carrier is down or unreadable (the kernel refuses the read while admin-down). */
  carrier: 0 | 1;
  pkey: string | undefined;
  parent: string | undefined;
}

/**
 * TCP segmentation offload of an IPoIB interface (`ethtool -k`), read only for interfaces on an
 * adapter with the TSO erratum (infiniband/tso-erratum.ts).
 */
export type TsoReading =
  | { state: 'on' | 'off'; /** The kernel does not let it change. */ fixed: boolean }
  | { state: 'unknown'; /** Why: ethtool not installed, or what it said. */ reason: string };

/** What a link should run at, and where that expectation came from. */
export interface LinkExpectation {
  width: LinkWidth | undefined;
  speed: LinkSpeed | undefined;
  source: 'config' | 'peer';
}

export const SUBNET_MANAGER_STATES = ['NOTACTIVE', 'DISCOVERING', 'STANDBY', 'MASTER'] as const;
export type SubnetManagerState = (typeof SUBNET_MANAGER_STATES)[number];

/** One subnet manager's SMInfo, as sminfo printed it. */
export interface SubnetManagerInfo {
  lid: number;
  /** `0x` + 16 lower-case hex digits. */
  guid: string;
  activityCount: number;
  priority: number;
  /** Undefined for a state number outside 0–3. */
  state: SubnetManagerState | undefined;
}

export interface SubnetManagerReading {
  /** The SM at the port's SM LID answered sminfo. */
  reachable: boolean;
  /** The SM the port follows (its SM LID), when it answered. */
  master: SubnetManagerInfo | undefined;
  /** A subnet manager running on this very port that is not the one it follows (a STANDBY). */
  local: SubnetManagerInfo | undefined;
}

/** The port at the other end of the cable, found by direct route from the local port. */
export interface LinkPeer {
  /** Node GUID of the peer (`0x` + 16 hex digits). */
  guid: string;
  port: number;
  /** LID its PMA answers at (a switch's port 0 LID); undefined while no SM assigned one. */
  lid: number | undefined;
  nodeType: 'CA' | 'Switch' | 'Router' | undefined;
  description: string | undefined;
  /** Error counters of the peer port (perfquery by LID); empty when they could not be read. */
  counters: readonly PortCounter[];
}

/** What the diag collectors learnt about one local port in their last cycle. */
export interface DiagPort {
  device: string;
  port: number;
  subnetManager: SubnetManagerReading | undefined;
  /** Best width and speed both link ends have enabled (PortInfo of both ends). */
  enabledCapability: { width: LinkWidth | undefined; speed: LinkSpeed | undefined } | undefined;
  peer: LinkPeer | undefined;
  /** Local PMA counters read with perfquery, only those sysfs does not provide. */
  counters: readonly PortCounter[];
}

export interface CollectorReport {
  collector: CollectorName;
  success: boolean;
  durationSeconds: number;
  /** Unix time, seconds, at which the cycle finished. */
  finishedAt: number;
  errors: readonly ReadError[];
}

/** Counts that only grow while the exporter runs. */
export interface RunningTotals {
  stateChanges: ReadonlyMap<string, number>;
  readErrors: ReadonlyMap<CollectorName, number>;
  commandTimeouts: ReadonlyMap<CommandName, number>;
}

export interface Snapshot {
  devices: readonly Device[];
  ipoib: readonly IpoibInterface[];
  /** TSO of the IPoIB interfaces on adapters with the TSO erratum, keyed by interface name; empty elsewhere. */
  tso: ReadonlyMap<string, TsoReading>;
  /** Keyed by `portKey(device, port)`. */
  expectations: ReadonlyMap<string, LinkExpectation>;
  /** Diag (infiniband-diags) readings keyed by `portKey(device, port)`; empty when diag is off. */
  diag: ReadonlyMap<string, DiagPort>;
  reports: readonly CollectorReport[];
  totals: RunningTotals;
  /** The whole subnet (fabric mode); undefined when --collector.fabric is off. */
  fabric?: FabricSnapshot;
}

export function portKey(device: string, port: number): string {
  return `${device}/${port}`;
}
