// The cabling plan (--fabric.topology-file) and what the fabric does against it: plain data, made
// by pure functions (sources/fabric/cabling-plan*.ts read and resolve a plan, model/cabling-conformance.ts
// and model/rails.ts judge the fabric against it) and read by the metrics, the findings and the
// fabric map. docs/fabric.md, "Cabling plan, rails and the fabric map", says what each field means
// for a person.
import { atOnce, pacer, type Work } from '../event-loop/time-slices.js';
import type { LinkSpeed, LinkWidth } from '../model/link-rate.js';
import {
  fabricPortKey,
  type FabricNode,
  type FabricNodeType,
  type FabricPortReading,
  type FabricTopology,
  type PortAddress,
} from './fabric.js';

// --- the plan as written --------------------------------------------------------------------------

/** A node as a plan names it: a GUID, or a name (node-name-map name or NodeDescription). */
export interface PlanNodeRef {
  /** As written, without its quotes. */
  text: string;
  /** `0x` + 16 hex digits when the plan wrote a GUID (unquoted); undefined for a name. */
  guid: string | undefined;
}

export interface PlanEnd {
  node: PlanNodeRef;
  port: number;
}

export interface PlannedCable {
  /** 1-based line of the plan file (for ibnetdiscover plans, the first port line naming the cable). */
  line: number;
  ends: readonly [PlanEnd, PlanEnd];
  /** What the link should train to at least; undefined when the plan does not say. */
  width: LinkWidth | undefined;
  speed: LinkSpeed | undefined;
}

export const PLAN_FORMATS = ['plan', 'ibnetdiscover'] as const;
export type PlanFormat = (typeof PLAN_FORMATS)[number];

export interface CablingPlan {
  file: string;
  format: PlanFormat;
  cables: readonly PlannedCable[];
  /** Nodes an ibnetdiscover plan describes (GUID → type and NodeDescription); empty for a cabling plan. */
  nodes: ReadonlyMap<string, { type: FabricNodeType; description: string }>;
}

/** A mistake in a plan file: the line and what was expected (the caller names the file and exits 2). */
export interface PlanError {
  line: number;
  message: string;
}

/** A parsed plan, or the errors that make it unusable (every one, in line order). */
export type ParsedPlan = { plan: CablingPlan; errors: [] } | { plan: undefined; errors: PlanError[] };

// --- the plan against a fabric ----------------------------------------------------------------------

/** One end of a planned cable, resolved: its node's GUID, or undefined when no node of the fabric (and no binding) has that name. */
export interface PlanPort {
  nodeGuid: string | undefined;
  port: number;
  /** The node's name as the plan wrote it. */
  written: string;
}

export interface ResolvedCable {
  line: number;
  /** In the plan's order (ibnetdiscover plans: the switch end first, then the lower GUID). */
  ends: readonly [PlanPort, PlanPort];
  width: LinkWidth | undefined;
  speed: LinkSpeed | undefined;
}

/**
 * A name of the plan that does not name one node of the fabric now, or a cable that resolving left
 * out. Never an exit, not even at start: the fabric is untrusted (any host sets its own
 * NodeDescription, and can copy another's at any time), so the plan's other lines are still judged,
 * and the cabling collector fails with each problem as a finding.
 *   ambiguous  the name is the NodeDescription (or node-name-map name) of several nodes
 *   unknown    no node has the name (a typo, or a host down and unseen since start): a missing node
 *   conflict   two lines cable one port, or a cable joins a node to itself, once the names resolved
 */
export interface PlanProblem {
  kind: 'ambiguous' | 'unknown' | 'conflict';
  /** The name as the plan wrote it. */
  name: string;
  /** The plan lines that use the name (conflict: the cable left out), ascending. */
  lines: readonly number[];
  /** ambiguous: the nodes that share the name; conflict: the node of the port. */
  guids: readonly string[];
  /** ambiguous: the node the name resolved to before, whose cables it still names. */
  boundTo?: string;
  /** What is wrong, for a person (without file and line). */
  message: string;
}

export interface ResolvedPlan {
  plan: CablingPlan;
  /** The cables judged: both ends resolved (or, before any discovery, every cable). */
  cables: readonly ResolvedCable[];
  /** Cables with an end no name resolved (ambiguous or unknown): not judged, their unknown nodes missing. */
  unjudged: readonly ResolvedCable[];
  /** Everything that kept a line of the plan from resolving, in line order. */
  problems: readonly PlanProblem[];
  /** Every node the plan names, by GUID (the name it was written with), resolved ones only. */
  nodes: ReadonlyMap<string, string>;
  /** Names that resolved to no node (absent NodeDescriptions), each once. */
  unresolved: readonly string[];
  /** NodeDescription → GUID as resolved: the next resolution keeps a node that left the fabric under its GUID. */
  bindings: ReadonlyMap<string, string>;
}

/** A key for the port of a plan end: the fabric's key, or one of the written name when the node is unresolved. */
export function planPortKey(end: Pick<PlanPort, 'nodeGuid' | 'port' | 'written'>): string {
  return end.nodeGuid === undefined ? `?${end.written}/${end.port}` : fabricPortKey(end.nodeGuid, end.port);
}

// --- what the fabric does -----------------------------------------------------------------------------

/** infiniband_fabric_planned_link_status values. */
export const PLANNED_LINK_STATUS = { asPlanned: 0, noLink: 1, connectedElsewhere: 2, belowPlan: 3 } as const;
export type PlannedLinkStatus = (typeof PLANNED_LINK_STATUS)[keyof typeof PLANNED_LINK_STATUS];

export interface PlannedLinkConformance {
  cable: ResolvedCable;
  status: PlannedLinkStatus;
  /** Where each end's cable goes now (undefined: no link, or the node is not in the fabric). */
  now: readonly [PortAddress | undefined, PortAddress | undefined];
  /** Width and speed the link trained at, when it is up as planned. */
  width: LinkWidth | undefined;
  speed: LinkSpeed | undefined;
}

/** A cable the plan does not have, between nodes of the plan or on a port the plan has a cable for. Switch end first, then the lower GUID. */
export interface UnplannedCable {
  ends: readonly [PortAddress, PortAddress];
}

/** One cable end taken from port `from` and plugged into port `to`; the cable's other end stays at `anchor`. */
export interface CableMove {
  from: PortAddress;
  to: PortAddress;
  anchor: PortAddress;
}

/**
 * What to do with one tangle of cables, the fewest moves that make it as planned:
 *   swap     two cable ends in each other's ports (one finding, "swap the cables of …")
 *   rotate   k ≥ 3 ends each in the next one's port: k − 1 swaps
 *   move     one or more moves in order (a chain ends in a port that is free now)
 * with the cables to unplug first (no place in the plan) and those to plug last (no link now).
 */
export interface CablingAction {
  kind: 'swap' | 'rotate' | 'move';
  moves: readonly CableMove[];
  /** For `swap` and `rotate`: the pairs of ports whose cable ends are exchanged, in order. */
  swaps: readonly (readonly [PortAddress, PortAddress])[];
  unplug: readonly UnplannedCable[];
  /** Planned cables with no link, plugged last (both their nodes are in the fabric). */
  plug: readonly ResolvedCable[];
}

/** A planned cable without a link, not part of any tangle: plug it, or its cable or transceiver is broken. */
export interface MissingLink {
  cable: ResolvedCable;
}

/** A node the plan names that the fabric does not have, with its planned cables. */
export interface MissingPlanNode {
  /** GUID when it resolved (by GUID or node-name-map name), else undefined. */
  guid: string | undefined;
  written: string;
  cables: readonly ResolvedCable[];
}

export interface CablingConformance {
  plan: ResolvedPlan;
  links: readonly PlannedLinkConformance[];
  unplanned: readonly UnplannedCable[];
  actions: readonly CablingAction[];
  missingLinks: readonly MissingLink[];
  missingNodes: readonly MissingPlanNode[];
  /** Cables whose link trained below the plan's width or speed (status 3). */
  belowPlan: readonly PlannedLinkConformance[];
}

// --- rails -------------------------------------------------------------------------------------------------

/** One rail of `fabric.rails` in the config file. */
export interface RailRule {
  name: string;
  /** Globs on a leaf's node-name-map name or NodeDescription. */
  leaves: readonly string[];
  /** Glob on a host adapter's NodeDescription; a value without a space matches its last word (`mlx5_3` ≡ `* mlx5_3`). */
  adapter: string;
}

export interface RailViolation {
  /** The host adapter's port. */
  adapter: PortAddress;
  /** The switch port it is cabled to. */
  leaf: PortAddress;
  /** The adapter's rail. */
  rail: string;
  /** The rail of the switch it is cabled to; empty when that switch belongs to no rail. */
  leafRail: string;
  /** The switches of the adapter's rail (GUIDs), where it belongs. */
  railLeaves: readonly string[];
}

export interface RailReport {
  /** `config`: fabric.rails; `inferred`: the leaf each adapter name of most multi-adapter hosts is cabled to. */
  source: 'config' | 'inferred';
  /** Rail name → its switches' GUIDs. */
  rails: ReadonlyMap<string, readonly string[]>;
  violations: readonly RailViolation[];
}

/** Everything the cabling collector adds to a fabric snapshot: undefined parts when there is no plan or no rails. */
export interface CablingReport {
  conformance: CablingConformance | undefined;
  rails: RailReport | undefined;
}

// --- shared helpers ----------------------------------------------------------------------------------

/**
 * Where every port's cable goes now: the last ports cycle's reading where the port was read (fresh),
 * else the last discovery (CA ports without --fabric.hca-ports, switches of other shards). A
 * discovered cable that a fresher reading contradicts (one of its ports now reads another peer or
 * none) is left out. Ports without a link are absent; every cable is there from both ends.
 */
export function currentCabling(
  topology: FabricTopology | undefined,
  readings: ReadonlyMap<string, FabricPortReading>,
): Map<string, PortAddress> {
  return atOnce(currentCablingSteps(topology, readings));
}

/** The same, as work that may pause (a fabric's every port). */
export function* currentCablingSteps(
  topology: FabricTopology | undefined,
  readings: ReadonlyMap<string, FabricPortReading>,
): Work<Map<string, PortAddress>> {
  const pace = pacer();
  const now = new Map<string, PortAddress>();
  const read = new Set<string>();
  for (const [key, reading] of readings) {
    if (pace()) yield;
    // A port whose scan failed this cycle tells nothing about its cable.
    if (reading.state === undefined && reading.physicalState === undefined) continue;
    read.add(key);
    if (reading.peer) now.set(key, reading.peer);
  }
  // Both ends of every cable; a port read with a peer wins over that peer read without one (the
  // ends of one scan agree; a port that just lost its link may not).
  for (const [key, reading] of readings) {
    if (pace()) yield;
    if (!read.has(key) || !reading.peer) continue;
    const peerKey = fabricPortKey(reading.peer.nodeGuid, reading.peer.port);
    if (!now.has(peerKey)) now.set(peerKey, { nodeGuid: reading.nodeGuid, port: reading.port });
  }
  for (const [key, port] of topology?.ports ?? []) {
    if (pace()) yield;
    if (!port.peer || read.has(key) || now.has(key)) continue;
    const peerKey = fabricPortKey(port.peer.nodeGuid, port.peer.port);
    if (read.has(peerKey) || now.has(peerKey)) continue;
    now.set(key, port.peer);
    now.set(peerKey, { nodeGuid: port.nodeGuid, port: port.port });
  }
  return now;
}

/**
 * The fabric's links: the cables with a link now (currentCabling), each counted once. The one count
 * of the landing page, `/fabric` and `check`, so that every page says the same number.
 */
export function* linkCountSteps(topology: FabricTopology | undefined, readings: ReadonlyMap<string, FabricPortReading>): Work<number> {
  const cables = yield* currentCablingSteps(topology, readings);
  const pace = pacer();
  const pairs = new Set<string>();
  for (const [key, peer] of cables) {
    if (pace()) yield;
    pairs.add([key, fabricPortKey(peer.nodeGuid, peer.port)].sort().join(' '));
  }
  return pairs.size;
}

/** A host adapter's NodeDescription as rdma-ndd writes it by default, `<hostname> <device>` (`gpu01 mlx5_3`); undefined otherwise. */
export function adapterOf(node: Pick<FabricNode, 'type' | 'description'>): { host: string; adapter: string } | undefined {
  if (node.type !== 'ca') return undefined;
  const match = /^(\S.*?)\s+(\S+)$/.exec(node.description.trim());
  return match ? { host: match[1]!, adapter: match[2]! } : undefined;
}

/** Natural order of names: `leaf2` before `leaf10`. */
export function compareNames(a: string, b: string): number {
  const split = (text: string): (string | number)[] => text.split(/(\d+)/).map((part, i) => (i % 2 === 1 ? Number(part) : part));
  const left = split(a);
  const right = split(b);
  for (let i = 0; i < Math.min(left.length, right.length); i++) {
    const x = left[i]!;
    const y = right[i]!;
    if (x === y) continue;
    if (typeof x === 'number' && typeof y === 'number') return x - y;
    return String(x) < String(y) ? -1 : 1;
  }
  return left.length - right.length;
}

/** A glob (`*`, `?`) as an anchored regular expression. */
export function globPattern(glob: string): RegExp {
  return new RegExp(
    `^${glob
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.')}$`,
  );
}

/**
 * How the cabling findings, the map and the messages name a node: its node-name-map name, else its
 * NodeDescription, else the name a plan gave it, else its GUID.
 */
export function nodeLabel(topology: FabricTopology | undefined, guid: string, written?: string): string {
  const node = topology?.nodes.get(guid);
  return node?.name || node?.description.trim() || written || guid;
}
