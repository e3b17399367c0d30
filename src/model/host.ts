// One host's InfiniBand hardware as the readers found it: devices and their ports, IPoIB
// interfaces, and what the infiniband-diags tools learnt about each local port. Plain data.
import type { XmitWaitTick } from './congestion.js';
import type { LinkExpectation, LinkSpeed, LinkWidth } from './link-rate.js';
import type { PhysicalStateName, PortStateName, StateReading } from './port-state.js';

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
 * adapter with the TSO erratum (model/tso-erratum.ts).
 */
export type TsoReading =
  | { state: 'on' | 'off' /** The kernel does not let it change. */; fixed: boolean }
  | { state: 'unknown' /** Why: ethtool not installed, or what it said. */; reason: string };

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
}

/** What the smpquery collector learnt about the link of one local port. */
export interface PortLink {
  /** Best width and speed both link ends have enabled (PortInfo of both ends). */
  enabledCapability: { width: LinkWidth | undefined; speed: LinkSpeed | undefined } | undefined;
  peer: LinkPeer | undefined;
}

/** What the perfquery collector read for one local port. */
export interface PortPma {
  /** Local PMA counters, only those sysfs does not provide. */
  counters: readonly PortCounter[];
  /** Error counters of the link peer's port (by its LID); empty when they could not be read. */
  peerCounters: readonly PortCounter[];
  /** The port's PortXmitWait tick (perfquery -c, or its generation's documented one); undefined when not read. */
  tick?: XmitWaitTick;
}

/** `device/port`: how host ports are keyed in every map of a snapshot. */
export function portKey(device: string, port: number): string {
  return `${device}/${port}`;
}

/** The port speaks InfiniBand: RoCE and iWARP (link layer Ethernet) never get SM or INIT findings. Old kernels lack the file. */
export function isInfinibandPort(port: Pick<Port, 'linkLayer'>): boolean {
  return port.linkLayer === undefined || port.linkLayer === 'InfiniBand';
}

/** A host port as people write it: `mlx5_0/1`. */
export function portName(device: string, port: number): string {
  return `${device}/${port}`;
}

/** The best width and speed both link ends have enabled, as an expectation (smpquery found it; sysfs falls back on it). */
export function peerExpectation(link: PortLink | undefined): LinkExpectation | undefined {
  const capability = link?.enabledCapability;
  if (!capability || (capability.width === undefined && capability.speed === undefined)) return undefined;
  return { width: capability.width, speed: capability.speed, source: 'peer' };
}
