// Fabric mode (--collector.fabric): the whole subnet as seen from one host. The topology comes from
// discovery (every node, port and cable, and what each port enables), the port readings from the
// last ports cycle (state, width, speed, peer and PMA counters of every switch port, connected or
// not), and the subnet administrator's records (subnet managers, multicast groups). Plain data,
// replaced whole by each cycle; `Snapshot.fabric` is undefined when fabric mode is off.
import type { EnabledRates, LinkExpectation, LinkSpeed, LinkWidth } from './link-rate.js';
import type { PhysicalStateName, PortStateName, StateReading } from './port-state.js';
import type { CounterRow } from './counter-row.js';
import type { SubnetManagerState } from './host.js';

export const FABRIC_NODE_TYPES = ['switch', 'ca', 'router'] as const;
export type FabricNodeType = (typeof FABRIC_NODE_TYPES)[number];

export interface FabricNode {
  /** Node GUID, `0x` + 16 lower-case hex digits. */
  guid: string;
  type: FabricNodeType;
  /** NodeDescription as the node reports it (a switch's is often its model; a host's `<hostname> HCA-1`). */
  description: string;
  /** Name from --fabric.node-name-map; undefined when the map does not list the node. */
  name: string | undefined;
  /** A switch's LID (that of its management port 0); for a CA or router, that of its first port with one. */
  lid: number | undefined;
  /** Number of physical ports (NodeInfo NumPorts). */
  portCount: number;
  vendorId: number | undefined;
  deviceId: number | undefined;
}

/** One end of a cable: a node and its port number. */
export interface PortAddress {
  nodeGuid: string;
  port: number;
}

/** A port as discovery found it. Switch ports without a cable are present too. */
export interface DiscoveredPort extends PortAddress {
  /** Port GUID (every port of a switch has the GUID of its port 0). */
  portGuid: string | undefined;
  /** The port's own LID (CA and router ports; a switch answers at its node's LID). */
  lid: number | undefined;
  /** The port at the other end of the cable, when discovery saw one. */
  peer: PortAddress | undefined;
  /** Widths and speeds this end has enabled (PortInfo); undefined when unknown. */
  enabled: EnabledRates | undefined;
}

export interface FabricTopology {
  /** By node GUID. */
  nodes: ReadonlyMap<string, FabricNode>;
  /** By `fabricPortKey`. */
  ports: ReadonlyMap<string, DiscoveredPort>;
  /** GUIDs claimed by more than one node or port (a copied or mis-burnt GUID hides a device). */
  duplicateGuids: number;
  /** LIDs assigned to more than one port (the subnet manager's bookkeeping is broken). */
  duplicateLids: number;
  /** Unix time, seconds, of the discovery that produced it. */
  discoveredAt: number;
}

/** A port as the last ports cycle read it. */
export interface FabricPortReading extends PortAddress {
  /** Undefined when this cycle's scan failed (the counters may still have been read). */
  state: StateReading<PortStateName> | undefined;
  physicalState: StateReading<PhysicalStateName> | undefined;
  /** Active width and speed; undefined while the port is down (PortInfo leaves them undefined then). */
  width: LinkWidth | undefined;
  speed: LinkSpeed | undefined;
  /** The port at the other end of the cable now; undefined for a port without a link. */
  peer: PortAddress | undefined;
  /** PMA counters read this cycle; a counter whose query failed is absent, not zero. */
  counters: CounterRow;
}

/** One subnet manager of the subnet (an SA SMInfoRecord, refreshed from the SM itself when it answers). */
export interface FabricSubnetManager {
  guid: string;
  lid: number;
  priority: number;
  /** Undefined for a state number outside 0–3. */
  state: SubnetManagerState | undefined;
  activityCount: number;
}

/** One multicast group of the SA (MCMemberRecord). */
export interface MulticastGroup {
  /** As saquery prints it, e.g. `ff12:401b:ffff::ffff:ffff` (the IPoIB broadcast group of P_Key 0xffff). */
  mgid: string;
  /** `0x` + 4 lower-case hex digits. */
  pkey: string;
  mtuBytes: number | undefined;
  rateGbps: number | undefined;
  /** Ports joined; undefined when the member records could not be read. */
  members: number | undefined;
}

export interface FabricSnapshot {
  /** The last good discovery; kept when a later one fails. Undefined before the first succeeded. */
  topology: FabricTopology | undefined;
  /** The last ports cycle's readings, by `fabricPortKey` (this instance's shard only). */
  ports: ReadonlyMap<string, FabricPortReading>;
  /** What each read port's link should run at, by `fabricPortKey`: a config expectation or the best both ends enable. */
  expectations: ReadonlyMap<string, LinkExpectation>;
  subnetManagers: readonly FabricSubnetManager[];
  multicastGroups: readonly MulticastGroup[];
  /** This instance's --fabric.shard: it reports only the nodes of that shard (see `inShard`). */
  shard: Shard;
}

/** Shard `index` (from 1) of `count` instances splitting one fabric. */
export interface Shard {
  index: number;
  count: number;
}

/**
 * Whether a node belongs to a shard: FNV-1a (32-bit) of its GUID as exported (`0x` + 16 lower-case
 * hex digits), modulo the number of shards. Stable across restarts, hosts and versions.
 */
export function inShard(guid: string, shard: Shard): boolean {
  if (shard.count <= 1) return true;
  let hash = 0x811c9dc5;
  for (let i = 0; i < guid.length; i++) {
    hash ^= guid.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return (hash % shard.count) + 1 === shard.index;
}

/** Whether two sets of node GUIDs hold the same nodes (undefined holds none to compare). */
export function sameNodes(a: ReadonlySet<string>, b: ReadonlySet<string> | undefined): boolean {
  if (b === undefined || a.size !== b.size) return false;
  for (const guid of a) if (!b.has(guid)) return false;
  return true;
}

/**
 * The keys of the ports this instance reads (`keepPortKeys`), by node GUID then port: one string
 * per port shared by every map that keys on it (the readings, the expectations, each cycle's scan
 * and sweeps), not a new string per map and cycle. Only those: a shard walks the whole topology
 * (the verdict's links, the scan of every switch), and keeping a key for each of the 147 000 ports
 * it meets held 8.2 MiB in one shard of four of the 122 880-port fabric for strings nothing else
 * kept (docs/benchmarks.md, "tenth pass"); another node's key is made anew each time. Forgotten
 * whole past a bound, so GUIDs that come and go cannot grow it for ever.
 */
const PORT_KEYS = new Map<string, string[]>();
const MAX_KEYED_NODES = 200_000;
const MAX_KEYED_PORT = 1024;

export function fabricPortKey(nodeGuid: string, port: number): string {
  const keys = PORT_KEYS.get(nodeGuid);
  // Joined, one flat string: a template literal makes a tree of two concatenations, flattened into a third string when hashed.
  if (keys === undefined || !Number.isInteger(port) || port < 0 || port >= keys.length) return [nodeGuid, port].join('/');
  return (keys[port] ??= [nodeGuid, port].join('/'));
}

/** Keep the keys of a node's ports 0 to `portCount` once made: a node whose ports this instance reads. */
export function keepPortKeys(nodeGuid: string, portCount: number): void {
  if (PORT_KEYS.has(nodeGuid)) return;
  if (PORT_KEYS.size >= MAX_KEYED_NODES) PORT_KEYS.clear();
  PORT_KEYS.set(nodeGuid, new Array<string>(Math.min(Math.max(0, portCount), MAX_KEYED_PORT - 1) + 1));
}

/** A fabric snapshot from the fabric collectors' parts, those that have one (an empty fabric for the others). */
export function composeFabric(
  topology: FabricTopology | undefined,
  ports: Pick<FabricSnapshot, 'ports' | 'expectations'> | undefined,
  sa: Pick<FabricSnapshot, 'subnetManagers' | 'multicastGroups'> | undefined,
  shard: Shard,
): FabricSnapshot {
  return {
    topology,
    ports: ports?.ports ?? new Map(),
    expectations: ports?.expectations ?? new Map(),
    subnetManagers: sa?.subnetManagers ?? [],
    multicastGroups: sa?.multicastGroups ?? [],
    shard,
  };
}
