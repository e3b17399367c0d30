// A fat-tree fabric of any size, as the infiniband-diags tools and opensm would see it: nodes with
// their GUIDs, descriptions and LIDs, cables, port states, widths and speeds, PMA counters, subnet
// managers and multicast groups. Two tiers (S spines, L leaves, H hosts per leaf, as the ibsim
// fabrics of the tests) or three (H hosts on k-port switches: leaves, pods of k/2 leaves and k/2
// spines, and cores), with faults chosen by a seed: cables pulled, links trained narrower or
// slower than their ends enable, ports with error counters or congestion. Everything is a pure
// function of the spec, so the outputs (outputs.ts, cache.ts) and ibsim's topology (net.ts) of one
// spec describe the same fabric.
import type { LinkSpeed } from '../../src/model/link-rate.js';
import { ERROR_FIELDS, type ErrorField, type PortCounterValues, type TrafficField } from './pma.js';
import { SPEED_CODES, speedCode } from './mad.js';

export interface TwoTierShape {
  tiers: 2;
  spines: number;
  leaves: number;
  hostsPerLeaf: number;
  /** Unconnected ports per leaf (they show as Down/Polling). */
  spareLeafPorts?: number;
}

/**
 * Three tiers of `radix`-port switches: every leaf has radix/2 host ports and radix/2 uplinks to
 * the radix/2 spines of its pod; spine j of every pod has radix/2 uplinks to the cores of group j,
 * spread over them (parallel cables where a group has fewer cores than a spine has uplinks). 24 576
 * hosts on 64-port switches: 768 leaves, 24 pods (768 spines), 384 cores; 1 920 switches.
 */
export interface ThreeTierShape {
  tiers: 3;
  hosts: number;
  radix: number;
}

export type FatTreeShape = TwoTierShape | ThreeTierShape;

/** How ports look: what they support and enable, their IDs, and how a degraded link comes about. */
export interface PortProfile {
  name: string;
  /** The speed every link trains at when healthy. */
  speed: LinkSpeed;
  widthSupported: number;
  widthEnabled: number;
  speedSupported: number;
  speedEnabled: number;
  extSupported: number;
  extEnabled: number;
  /** PortInfo CapabilityMask of a switch's port 0 and of a CA port. */
  switchCapMask: number;
  caCapMask: number;
  /**
   * `enabled`: a degraded link's two ends enable only what it runs at (the only way ibsim degrades
   * a link, which the exporter then does not call degraded without an expectation); `trained`: the
   * ends enable everything and the link came up lower (a bad lane or cable, as on real hardware).
   */
  degradation: 'enabled' | 'trained';
  switchVendorId: number;
  switchDeviceId: number;
  switchRevision: number;
  caVendorId: number;
  caDeviceId: number;
  caRevision: number;
  /** Node descriptions. */
  switchDescription: (role: SwitchRole, number: number) => string;
  hostDescription: (leaf: number, host: number) => string;
  /** PerfMgt ClassPortInfo CapabilityMask and CapabilityMask2 (perfquery prints them). */
  pmaCapMask: number;
  pmaCapMask2: number;
  /** Where a PMA's all-ports sum (AllPortSelect) saturates below the counter's own width. */
  allPortsSumLimits: Partial<Record<ErrorField, number>>;
  /** Counters the PMA always reports as 0. */
  countersReadAsZero: readonly TrafficField[];
  /** PortInfo shows the extended speeds (enabled, supported) only on a port running one. */
  extSpeedsOnlyWhenActive: boolean;
}

/** What ibsim (0.10) shows with `width=3`, `speed=7` (and `extspeed` for FDR–HDR) at the top of its net file. */
export function ibsimProfile(speed: 'QDR' | 'FDR' | 'EDR' | 'HDR' = 'QDR'): PortProfile {
  const ext = SPEED_CODES[speed]!.ext;
  return {
    name: `ibsim-${speed}`,
    speed,
    widthSupported: 0x1f,
    widthEnabled: 0x3,
    speedSupported: 0x7,
    speedEnabled: 0x7,
    // ibsim supports FDR, EDR and HDR on every port that runs an extended speed (sim_net.c, update_portinfo).
    extSupported: ext === 0 ? 0 : 0x7,
    extEnabled: ext === 0 ? 0 : (ext << 1) - 1,
    switchCapMask: 0xc048,
    caCapMask: 0x50c048,
    degradation: 'enabled',
    switchVendorId: 0x02c9,
    switchDeviceId: 0xc738,
    switchRevision: 0xa1,
    caVendorId: 0x02c9,
    caDeviceId: 0x1003,
    caRevision: 0xa1,
    switchDescription: (role, number) => `${role}-${number}`,
    hostDescription: (leaf, host) => `host-${leaf}-${host} HCA-1`,
    pmaCapMask: 0x1300,
    pmaCapMask2: 0,
    // ibsim 0.10 sums PortXmitDiscards with PortXmitConstraintErrors' 8-bit limit (sim_mad.c, pc_sum).
    allPortsSumLimits: { PortXmitDiscards: 0xff },
    // ibsim 0.10's PortCountersExtended answer ends before its last counter: PortMulticastRcvPkts reads 0.
    countersReadAsZero: ['PortMulticastRcvPkts'],
    extSpeedsOnlyWhenActive: true,
  };
}

/** NDR: Quantum-2 (QM9700, 64 ports) switches and ConnectX-7 adapters. */
export const NDR_PROFILE: PortProfile = {
  name: 'ndr',
  speed: 'NDR',
  widthSupported: 0x13,
  widthEnabled: 0x13,
  speedSupported: 0x7,
  speedEnabled: 0x7,
  extSupported: 0xe,
  extEnabled: 0xe,
  switchCapMask: 0xc048,
  caCapMask: 0x50c048,
  degradation: 'trained',
  switchVendorId: 0x02c9,
  switchDeviceId: 0xd2f0,
  switchRevision: 0xa0,
  caVendorId: 0x02c9,
  caDeviceId: 0x1021,
  caRevision: 0,
  switchDescription: (role, number) => `MF0;${role}-${number}:MQM9700/U1`,
  hostDescription: (leaf, host) => `node-${leaf}-${host} mlx5_0`,
  pmaCapMask: 0x1300,
  pmaCapMask2: 0,
  allPortsSumLimits: {},
  countersReadAsZero: [],
  extSpeedsOnlyWhenActive: false,
};

export interface Faults {
  seed?: number;
  /** Host cables pulled: the switch port is Down/Polling and the host is gone from discovery. */
  pulledHostCables?: number;
  /** Inter-switch cables pulled: both ends Down/Polling. */
  pulledSwitchCables?: number;
  /** Links running at 1X (both ends, see PortProfile.degradation). */
  narrowLinks?: number;
  /** Links running one speed below the profile's. */
  slowLinks?: number;
  /** Switch ports with error counters above 0 (one of them at its 16-bit maximum). */
  erroringPorts?: number;
  /** Switch ports with PortXmitWait above 0. */
  congestedPorts?: number;
}

export interface SubnetManagerSpec {
  /** The host (ibsim node id, e.g. `H1_1`) it runs on. */
  host: string;
  priority: number;
  /** SMInfo SMState: 3 master, 2 standby. */
  state: 1 | 2 | 3;
  /** The state the SA's SMInfoRecord holds (the master keeps what it first saw); default `state`. */
  recordState?: 1 | 2 | 3;
  activityCount?: number;
}

export interface FabricSpec {
  shape: FatTreeShape;
  profile?: PortProfile;
  faults?: Faults;
  /** The host the tools run on (discovery starts there); default the second host of leaf 1. */
  origin?: string;
  /** Default: a master on the first host of leaf 1, a standby on the last host. */
  subnetManagers?: SubnetManagerSpec[];
  /**
   * `opensm`: the IPoIB broadcast group opensm creates, nobody joined (as on ibsim); `ipoib`: every
   * host joined to it, to the IPv4 all-hosts and IPv6 all-nodes groups and its own IPv6
   * solicited-node group.
   */
  multicast?: 'opensm' | 'ipoib';
}

export type SwitchRole = 'core' | 'spine' | 'leaf';
export type Role = SwitchRole | 'host';

export interface GeneratedNode {
  kind: 'switch' | 'ca';
  /** How its ports look (the fabric's profile). */
  profile: PortProfile;
  role: Role;
  /** ibsim node id: `C3`, `S2`, `L7`, `H7_4` (host 4 of leaf 7). */
  id: string;
  guid: bigint;
  description: string;
  portCount: number;
  ports: GeneratedPort[];
  /** A switch's LID, a CA's port 1 LID; 0 for a node discovery cannot reach. */
  lid: number;
  /** Discovery reaches it (a host whose cable is pulled is cut off). */
  reachable: boolean;
  /** The port discovery first reached it through (NodeInfo LocalPortNum); hops from the origin. */
  entryPort: number;
  depth: number;
}

export interface GeneratedPort {
  node: GeneratedNode;
  number: number;
  /** A switch's ports share its port GUID (= node GUID); a CA port's is node GUID + port. */
  guid: bigint;
  /** The cable the fabric was built with (undefined: a spare port). */
  cable: GeneratedPort | undefined;
  /** The cable is pulled: the port is down. */
  pulled: boolean;
  widthEnabled: number;
  speedEnabled: number;
  extEnabled: number;
  /** Active width bit and speed while the link is up. */
  width: number;
  speed: LinkSpeed;
  /** A counter-value stream per port, for deterministic counters. */
  sequence: number;
  errors: Map<ErrorField, number> | undefined;
  /** Counter values set from outside (a test puts what a real PMA reported here). */
  override: Map<ErrorField | TrafficField, number> | undefined;
}

export interface GeneratedSubnetManager extends Required<SubnetManagerSpec> {
  port: GeneratedPort;
}

export interface MulticastGroupRecord {
  mgid: number[];
  mlid: number;
  mtu: number;
  pkey: number;
  rate: number;
  sl: number;
  members: GeneratedPort[];
}

export interface GeneratedFabric {
  spec: FabricSpec;
  profile: PortProfile;
  /** Every node, cores then spines, leaves and hosts. */
  nodes: GeneratedNode[];
  byId: Map<string, GeneratedNode>;
  /** Reachable nodes as libibnetdisc lists them (the reverse of discovery order, breadth first from the origin). */
  listed: GeneratedNode[];
  origin: GeneratedNode;
  maxHops: number;
  subnetManagers: GeneratedSubnetManager[];
  multicastGroups: MulticastGroupRecord[];
  /** Every cable of the design, once. */
  cables: [GeneratedPort, GeneratedPort][];
}

const CORE_GUID_BASE = 0x0002c90200300000n;
export const SPINE_GUID_BASE = 0x0002c90200100000n;
export const LEAF_GUID_BASE = 0x0002c90200200000n;
export const HOST_GUID_BASE = 0x0002c90300000000n;

const hexGuid = (value: bigint): string => `0x${value.toString(16).padStart(16, '0')}`;
export const spineGuid = (spine: number): string => hexGuid(SPINE_GUID_BASE + BigInt(spine - 1));
export const leafGuid = (leaf: number): string => hexGuid(LEAF_GUID_BASE + BigInt(leaf - 1));
export const coreGuid = (core: number): string => hexGuid(CORE_GUID_BASE + BigInt(core - 1));

/** mulberry32: a small seeded PRNG, so that faults, counters and jobs are the same on every run. */
export function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `count` distinct items of `items`, chosen by `next`. */
function pick<T>(items: readonly T[], count: number, next: () => number): T[] {
  if (count > items.length) throw new Error(`cannot pick ${count} of ${items.length}`);
  const copy = [...items];
  for (let i = 0; i < count; i++) {
    const j = i + Math.floor(next() * (copy.length - i));
    [copy[i], copy[j]] = [copy[j]!, copy[i]!];
  }
  return copy.slice(0, count);
}

/** The number of switches and hosts of a shape. */
export function shapeSize(shape: FatTreeShape): { switches: number; hosts: number; switchPorts: number } {
  if (shape.tiers === 2) {
    const leafPorts = shape.hostsPerLeaf + shape.spines + (shape.spareLeafPorts ?? 0);
    return {
      switches: shape.spines + shape.leaves,
      hosts: shape.leaves * shape.hostsPerLeaf,
      switchPorts: shape.spines * shape.leaves + shape.leaves * leafPorts,
    };
  }
  const { leaves, spines, cores } = threeTier(shape);
  return { switches: leaves + spines + cores, hosts: shape.hosts, switchPorts: (leaves + spines + cores) * shape.radix };
}

function threeTier(shape: ThreeTierShape): {
  half: number;
  leaves: number;
  pods: number;
  spines: number;
  coresPerGroup: number;
  cores: number;
} {
  if (shape.radix < 4 || shape.radix % 2 !== 0) throw new Error(`radix ${shape.radix}: an even number of ports, at least 4`);
  const half = shape.radix / 2;
  const leaves = Math.ceil(shape.hosts / half);
  const pods = Math.ceil(leaves / half);
  const coresPerGroup = Math.ceil((pods * half) / shape.radix);
  return { half, leaves, pods, spines: pods * half, coresPerGroup, cores: half * coresPerGroup };
}

export function generateFabric(spec: FabricSpec): GeneratedFabric {
  const profile = spec.profile ?? ibsimProfile();
  const nodes: GeneratedNode[] = [];
  const byId = new Map<string, GeneratedNode>();
  const cables: [GeneratedPort, GeneratedPort][] = [];
  let sequence = 0;

  const node = (
    kind: GeneratedNode['kind'],
    role: Role,
    id: string,
    guid: bigint,
    description: string,
    portCount: number,
  ): GeneratedNode => {
    const made: GeneratedNode = {
      kind,
      profile,
      role,
      id,
      guid,
      description,
      portCount,
      ports: [],
      lid: 0,
      reachable: false,
      entryPort: 0,
      depth: 0,
    };
    for (let number = 1; number <= portCount; number++) {
      made.ports[number] = {
        node: made,
        number,
        guid: kind === 'switch' ? guid : guid + BigInt(number),
        cable: undefined,
        pulled: false,
        widthEnabled: profile.widthEnabled,
        speedEnabled: profile.speedEnabled,
        extEnabled: profile.extEnabled,
        width: 2,
        speed: profile.speed,
        sequence: sequence++,
        errors: undefined,
        override: undefined,
      };
    }
    nodes.push(made);
    byId.set(id, made);
    return made;
  };
  const cable = (a: GeneratedNode, aPort: number, b: GeneratedNode, bPort: number): void => {
    const [one, two] = [a.ports[aPort], b.ports[bPort]];
    if (!one || !two) throw new Error(`no port ${a.id}[${aPort}] or ${b.id}[${bPort}]`);
    if (one.cable || two.cable) throw new Error(`${a.id}[${aPort}] or ${b.id}[${bPort}] cabled twice`);
    one.cable = two;
    two.cable = one;
    cables.push([one, two]);
  };
  const switchNode = (role: SwitchRole, number: number, base: bigint, ports: number): GeneratedNode =>
    node('switch', role, `${role[0]!.toUpperCase()}${number}`, base + BigInt(number - 1), profile.switchDescription(role, number), ports);
  // CA port GUIDs are the node GUID + port: room between hosts.
  let hostIndex = 0;
  const host = (leaf: number, number: number): GeneratedNode =>
    node('ca', 'host', `H${leaf}_${number}`, HOST_GUID_BASE + BigInt(hostIndex++ * 4), profile.hostDescription(leaf, number), 1);

  const { shape } = spec;
  if (shape.tiers === 2) {
    const leafPorts = shape.hostsPerLeaf + shape.spines + (shape.spareLeafPorts ?? 0);
    const spines = Array.from({ length: shape.spines }, (_, s) => switchNode('spine', s + 1, SPINE_GUID_BASE, shape.leaves));
    const leaves = Array.from({ length: shape.leaves }, (_, l) => switchNode('leaf', l + 1, LEAF_GUID_BASE, leafPorts));
    for (const [l, leaf] of leaves.entries()) {
      for (const [s, spine] of spines.entries()) cable(leaf, shape.hostsPerLeaf + s + 1, spine, l + 1);
    }
    for (const [l, leaf] of leaves.entries()) {
      for (let h = 1; h <= shape.hostsPerLeaf; h++) cable(host(l + 1, h), 1, leaf, h);
    }
  } else {
    const { half, leaves: leafCount, spines: spineCount, coresPerGroup, cores: coreCount } = threeTier(shape);
    const cores = Array.from({ length: coreCount }, (_, c) => switchNode('core', c + 1, CORE_GUID_BASE, shape.radix));
    const spines = Array.from({ length: spineCount }, (_, s) => switchNode('spine', s + 1, SPINE_GUID_BASE, shape.radix));
    const leaves = Array.from({ length: leafCount }, (_, l) => switchNode('leaf', l + 1, LEAF_GUID_BASE, shape.radix));
    // Spine j of pod p is spines[p * half + j]; its uplink u goes to core (p * half + u) mod G of
    // group j, on that core's port ⌊(p * half + u) / G⌋ + 1.
    for (const [s, spine] of spines.entries()) {
      const pod = Math.floor(s / half);
      const group = s % half;
      for (let u = 0; u < half; u++) {
        const slot = pod * half + u;
        cable(spine, half + u + 1, cores[group * coresPerGroup + (slot % coresPerGroup)]!, Math.floor(slot / coresPerGroup) + 1);
      }
    }
    for (const [l, leaf] of leaves.entries()) {
      const pod = Math.floor(l / half);
      for (let j = 0; j < half; j++) {
        const spine = spines[pod * half + j];
        if (spine) cable(leaf, half + j + 1, spine, (l % half) + 1);
      }
    }
    let placed = 0;
    for (const [l, leaf] of leaves.entries()) {
      for (let h = 1; h <= half && placed < shape.hosts; h++, placed++) cable(host(l + 1, h), 1, leaf, h);
    }
  }

  const hosts = nodes.filter((n) => n.kind === 'ca');
  const origin = byId.get(spec.origin ?? 'H1_2');
  if (origin?.kind !== 'ca') throw new Error(`origin ${spec.origin ?? 'H1_2'} is not a host of this fabric`);
  const smSpecs = spec.subnetManagers ?? [
    { host: hosts[0]!.id, priority: 5, state: 3 },
    { host: hosts.at(-1)!.id, priority: 5, state: 2 },
  ];
  const smHosts = smSpecs.map((sm) => byId.get(sm.host));
  if (smHosts.some((n) => n?.kind !== 'ca'))
    throw new Error(`a subnet manager host is not a host of this fabric: ${smSpecs.map((sm) => sm.host).join(', ')}`);
  // The hosts the tools and the SMs run on keep their cables.
  applyFaults(spec.faults ?? {}, cables, profile, new Set([origin, ...smHosts.map((n) => n!)]));
  const { listed, maxHops } = discover(origin, profile);
  if (smHosts.some((n) => !n!.reachable)) throw new Error('a subnet manager host is cut off from the origin by the faults');
  assignLids(nodes, smHosts[smSpecs.findIndex((sm) => sm.state === 3)] ?? smHosts[0]!);
  const subnetManagers = smSpecs.map((sm, i) => ({
    ...sm,
    recordState: sm.recordState ?? sm.state,
    activityCount: sm.activityCount ?? 1000 + i * 7,
    port: smHosts[i]!.ports[1]!,
  }));

  return {
    spec,
    profile,
    nodes,
    byId,
    listed,
    origin,
    maxHops,
    subnetManagers,
    cables,
    multicastGroups: multicast(
      spec.multicast ?? 'opensm',
      hosts.filter((n) => n.reachable),
    ),
  };
}

function applyFaults(
  faults: Faults,
  cables: readonly [GeneratedPort, GeneratedPort][],
  profile: PortProfile,
  keep: ReadonlySet<GeneratedNode>,
): void {
  const next = random(faults.seed ?? 1);
  const hostCables = cables.filter(([a, b]) => (a.node.kind === 'ca' || b.node.kind === 'ca') && !keep.has(a.node) && !keep.has(b.node));
  const switchCables = cables.filter(([a, b]) => a.node.kind === 'switch' && b.node.kind === 'switch');
  for (const [a, b] of pick(hostCables, faults.pulledHostCables ?? 0, next)) a.pulled = b.pulled = true;
  for (const [a, b] of pick(switchCables, faults.pulledSwitchCables ?? 0, next)) a.pulled = b.pulled = true;
  const up = cables.filter(([a]) => !a.pulled);
  const degraded = pick(up, (faults.narrowLinks ?? 0) + (faults.slowLinks ?? 0), next);
  const enabledOnly = profile.degradation === 'enabled';
  for (const [a, b] of degraded.slice(0, faults.narrowLinks ?? 0)) {
    for (const end of [a, b]) {
      end.width = 1;
      if (enabledOnly) end.widthEnabled = 1;
    }
  }
  const slower = slowerSpeed(profile.speed);
  for (const [a, b] of degraded.slice(faults.narrowLinks ?? 0)) {
    for (const end of [a, b]) {
      end.speed = slower;
      if (enabledOnly) {
        const code = speedCode(slower);
        // Enable up to the slower speed only: legacy bits below it, extended bits up to it.
        end.speedEnabled = code.ext === 0 ? (code.legacy << 1) - 1 : profile.speedEnabled;
        end.extEnabled = code.ext === 0 ? 0 : (code.ext << 1) - 1;
      }
    }
  }
  const switchPorts = up.flat().filter((port) => port.node.kind === 'switch');
  const erroring = pick(switchPorts, faults.erroringPorts ?? 0, next);
  for (const [i, port] of erroring.entries()) {
    const errors = new Map<ErrorField, number>();
    // The first erroring port has a saturated 16-bit SymbolErrorCounter.
    if (i === 0) errors.set('SymbolErrorCounter', 65535);
    const count = 1 + Math.floor(next() * 3);
    for (const field of pick(
      ERROR_FIELDS.filter((f) => f.name !== 'PortXmitWait'),
      count,
      next,
    )) {
      if (!errors.has(field.name)) errors.set(field.name, 1 + Math.floor(next() * Math.min(field.max - 1, 5000)));
    }
    port.errors = errors;
  }
  for (const port of pick(switchPorts, faults.congestedPorts ?? 0, next)) {
    port.errors ??= new Map();
    port.errors.set('PortXmitWait', 1 + Math.floor(next() * 2 ** 31));
  }
}

const SLOWER: Readonly<Partial<Record<LinkSpeed, LinkSpeed>>> = { DDR: 'SDR', QDR: 'DDR', FDR: 'QDR', EDR: 'FDR', HDR: 'EDR', NDR: 'HDR' };

function slowerSpeed(speed: LinkSpeed): LinkSpeed {
  const slower = SLOWER[speed];
  if (!slower) throw new Error(`no speed below ${speed}`);
  return slower;
}

/** libibnetdisc asks these (Mellanox) devices for their vendor PortInfo too (is_mlnx_ext_port_info_supported). */
function mellanoxExtPortInfo(vendorId: number, deviceId: number): boolean {
  const bull = vendorId === 0x119f;
  const switchX =
    (deviceId >= 0xc738 && deviceId <= 0xc73b) ||
    [0xc839, 0xcb20, 0xcf08, 0xcf09, 0xd2f0].includes(deviceId) ||
    (bull && ([0x1b02, 0x1b50, 0x1ba0, 0x1bf0].includes(deviceId) || (deviceId >= 0x1bd0 && deviceId <= 0x1bd5)));
  const connectX =
    (deviceId >= 0x1003 && deviceId <= 0x101b) ||
    deviceId === 0xa2d2 ||
    (bull &&
      ([0x1b33, 0x1b73, 0x1b40, 0x1b41, 0x1b60, 0x1b61, 0x1b83, 0x1b93, 0x1b94, 0x1bb4, 0x1bb5].includes(deviceId) ||
        (deviceId >= 0x1bc4 && deviceId <= 0x1bc6)));
  return switchX || connectX;
}

type Smp =
  | { kind: 'node'; at: GeneratedPort; hops: number }
  | { kind: 'other' }
  | { kind: 'port' | 'vendor-port'; node: GeneratedNode; number: number; hops: number };

/**
 * Discovery as libibnetdisc runs it (ibnetdisc.c, query_smp.c), to get its order: SMPs queued in
 * order, at most two on the wire, answered in order (as ibsim answers them). A new node gets
 * NodeDescription, SwitchInfo and PortInfo queries; every port of a switch that is LinkUp (but the
 * one the query came in by) leads to a NodeInfo query of its far end; a QDR port of a Mellanox
 * device is asked for its vendor PortInfo first, which delays that. Nodes are listed newest first.
 */
function discover(origin: GeneratedNode, profile: PortProfile): { listed: GeneratedNode[]; maxHops: number } {
  const created: GeneratedNode[] = [];
  const queue: Smp[] = [];
  const wire: Smp[] = [];
  let queued = 0;
  let maxHops = 0;
  const issue = (smp: Smp): void => {
    queue.push(smp);
    while (wire.length < 2 && queued < queue.length) wire.push(queue[queued++]!);
  };
  const vendorQuery = (node: GeneratedNode): boolean =>
    node.kind === 'switch'
      ? mellanoxExtPortInfo(profile.switchVendorId, profile.switchDeviceId)
      : mellanoxExtPortInfo(profile.caVendorId, profile.caDeviceId);
  const extend = (port: GeneratedPort, hops: number): void => {
    if (hops + 1 > maxHops) maxHops += 1;
    issue({ kind: 'node', at: port.cable!, hops: hops + 1 });
  };
  const onward = (node: GeneratedNode, number: number, hops: number): void => {
    const port = node.ports[number]!;
    if (!linkUp(port)) return;
    if (node.kind === 'switch' && number !== node.entryPort) {
      extend(port, hops);
    } else if (node === origin && number === node.entryPort) {
      if (hops > 1) {
        // Back at the origin through its own link: the path is shortened to reach its neighbour.
        maxHops += 1;
        issue({ kind: 'node', at: port.cable!, hops: hops - 1 });
      } else {
        extend(port, hops);
      }
    }
  };
  origin.entryPort = 1;
  issue({ kind: 'node', at: origin.ports[1]!, hops: 0 });
  while (wire.length > 0) {
    const smp = wire.shift()!;
    while (wire.length < 2 && queued < queue.length) wire.push(queue[queued++]!);
    if (smp.kind === 'node') {
      const node = smp.at.node;
      if (!node.reachable) {
        node.reachable = true;
        node.entryPort = smp.at.number;
        node.depth = smp.hops;
        created.push(node);
        issue({ kind: 'other' });
        if (node.kind === 'switch') {
          issue({ kind: 'other' });
          issue({ kind: 'port', node, number: 0, hops: smp.hops });
        }
      }
      if (node.kind !== 'switch') issue({ kind: 'port', node, number: smp.at.number, hops: smp.hops });
    } else if (smp.kind === 'port') {
      const { node, number, hops } = smp;
      if (number === 0) {
        for (let i = 1; i <= node.portCount; i++) issue({ kind: 'port', node, number: i, hops });
        continue;
      }
      const port = node.ports[number]!;
      // Port 0 of a switch (and so a port that is down) never runs QDR here.
      if (vendorQuery(node) && linkUp(port) && speedCode(port.speed).ext === 0 && speedCode(port.speed).legacy === 4) {
        issue({ kind: 'vendor-port', node, number, hops });
        continue;
      }
      onward(node, number, hops);
    } else if (smp.kind === 'vendor-port') {
      onward(smp.node, smp.number, smp.hops);
    }
  }
  return { listed: created.reverse(), maxHops };
}

/** The byte-swapped value of a GUID: opensm orders its port table by the GUID in network byte order read as a host (little-endian) integer. */
function swapped(guid: bigint): bigint {
  let out = 0n;
  for (let i = 0; i < 8; i++) out = (out << 8n) | ((guid >> BigInt(i * 8)) & 0xffn);
  return out;
}

/** LIDs as opensm hands them out on a fresh subnet: its own port 1, then every other port in its port-GUID table order. */
function assignLids(nodes: readonly GeneratedNode[], sm: GeneratedNode): void {
  sm.lid = 1;
  const holders = nodes
    .filter((n) => n.reachable && n !== sm)
    .map((n) => ({ node: n, key: swapped(n.kind === 'switch' ? n.guid : n.ports[1]!.guid) }));
  holders.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  let lid = 2;
  for (const { node } of holders) node.lid = lid++;
}

const BROADCAST = [0xff12, 0x401b, 0xffff, 0, 0, 0, 0xffff, 0xffff];
const ALL_HOSTS = [0xff12, 0x401b, 0xffff, 0, 0, 0, 0, 1];
const ALL_NODES_V6 = [0xff12, 0x601b, 0xffff, 0, 0, 0, 0, 1];

/** opensm's defaults for groups it makes: MTU 2048 (0x84), rate 10 Gb/s (0x83), P_Key 0xffff. */
function multicast(mode: 'opensm' | 'ipoib', hosts: readonly GeneratedNode[]): MulticastGroupRecord[] {
  const group = (mgid: number[], index: number, members: GeneratedPort[]): MulticastGroupRecord => ({
    mgid,
    mlid: 0xc000 + index,
    mtu: 0x84,
    pkey: 0xffff,
    rate: 0x83,
    sl: 0,
    members,
  });
  if (mode === 'opensm') return [group(BROADCAST, 0, [])];
  const ports = hosts.map((h) => h.ports[1]!);
  return [
    group(BROADCAST, 0, ports),
    group(ALL_HOSTS, 1, ports),
    group(ALL_NODES_V6, 2, ports),
    // IPv6 solicited-node group of each host: ff02::1:ffXX:XXXX in the IPoIB P_Key 0xffff scope.
    ...ports.map((port, i) => {
      const low = Number(port.guid & 0xffffffn);
      return group([0xff12, 0x601b, 0xffff, 0, 0, 1, 0xff00 | (low >> 16), low & 0xffff], 3 + i, [port]);
    }),
  ];
}

/** A port's counters, from its sequence number (deterministic), its errors and any override. */
export function portCounters(port: GeneratedPort): PortCounterValues {
  const errors = port.errors;
  // A port that never had a cable never moved a packet.
  const moved = port.cable !== undefined;
  const next = random(0x9e3779b9 ^ port.sequence);
  const words = moved ? Math.floor(next() * 2 ** 40) : 0;
  const received = moved ? Math.floor(next() * 2 ** 40) : 0;
  const xmitPackets = Math.floor(words / (16 + Math.floor(next() * 240)));
  const rcvPackets = Math.floor(received / (16 + Math.floor(next() * 240)));
  const values: PortCounterValues = {
    SymbolErrorCounter: errors?.get('SymbolErrorCounter') ?? 0,
    LinkErrorRecoveryCounter: errors?.get('LinkErrorRecoveryCounter') ?? 0,
    LinkDownedCounter: errors?.get('LinkDownedCounter') ?? 0,
    PortRcvErrors: errors?.get('PortRcvErrors') ?? 0,
    PortRcvRemotePhysicalErrors: errors?.get('PortRcvRemotePhysicalErrors') ?? 0,
    PortRcvSwitchRelayErrors: errors?.get('PortRcvSwitchRelayErrors') ?? 0,
    PortXmitDiscards: errors?.get('PortXmitDiscards') ?? 0,
    PortXmitConstraintErrors: errors?.get('PortXmitConstraintErrors') ?? 0,
    PortRcvConstraintErrors: errors?.get('PortRcvConstraintErrors') ?? 0,
    LocalLinkIntegrityErrors: errors?.get('LocalLinkIntegrityErrors') ?? 0,
    ExcessiveBufferOverrunErrors: errors?.get('ExcessiveBufferOverrunErrors') ?? 0,
    VL15Dropped: errors?.get('VL15Dropped') ?? 0,
    PortXmitWait: errors?.get('PortXmitWait') ?? 0,
    PortXmitData: words,
    PortRcvData: received,
    PortXmitPkts: xmitPackets,
    PortRcvPkts: rcvPackets,
    PortUnicastXmitPkts: xmitPackets - Math.floor(xmitPackets / 1000),
    PortUnicastRcvPkts: rcvPackets - Math.floor(rcvPackets / 1000),
    PortMulticastXmitPkts: Math.floor(xmitPackets / 1000),
    PortMulticastRcvPkts: Math.floor(rcvPackets / 1000),
  };
  for (const field of port.node.profile.countersReadAsZero) values[field] = 0;
  for (const [field, value] of port.override ?? []) values[field] = value;
  return values;
}

/** Whether the port's link is up (a cable plugged in). */
export function linkUp(port: GeneratedPort): boolean {
  return port.cable !== undefined && !port.pulled;
}
