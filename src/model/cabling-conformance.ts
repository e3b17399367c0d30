// The fabric against its cabling plan: the status of every planned cable, the cables the plan does
// not have, and what to do about them in the fewest moves.
//
// The planned cables and the cables there now are two matchings of the same ports (each port has at
// most one cable of each). Set aside the cables that are as planned; what is left falls apart into
// chains and cycles that alternate a cable of now and a cable of the plan — the tangles. A tangle is
// fixed by leaving one end of each cable where it is and moving the other end to the port the plan
// gives the end that stays; in a tangle the moving ends are every other port (either set works in a
// cycle; in a chain one is usually cheaper). So:
//   - two cables swapped are a cycle of two: one swap;
//   - k cable ends each in the next one's port are a cycle of k: k − 1 swaps;
//   - a cable in a port the plan leaves free is a chain of one: one move; a longer chain is moves in
//     order, the one into the free port first.
// Of the two sets of ends, the one with fewer moves, unplugs and plugs is taken; on a tie, the one
// whose moves stay within one node (ports of one switch, or adapters of one host), then the one that
// moves switch ends: a person fixes a swap at the leaf, between neighbouring ports, not by carrying
// two host cables across the row.
import { speedRank, type LinkSpeed, type LinkWidth } from '../model/link-rate.js';
import { atOnce, pacer, type Work } from '../event-loop/time-slices.js';
import { judgeRailsSteps } from './rails.js';
import {
  adapterOf,
  currentCabling,
  currentCablingSteps,
  planPortKey,
  PLANNED_LINK_STATUS,
  type CableMove,
  type CablingAction,
  type CablingConformance,
  type CablingReport,
  type MissingLink,
  type MissingPlanNode,
  type PlannedLinkConformance,
  type PlanPort,
  type RailRule,
  type ResolvedCable,
  type ResolvedPlan,
  type UnplannedCable,
} from './cabling.js';
import { fabricPortKey, type FabricPortReading, type FabricTopology, type PortAddress } from './fabric.js';

interface PlannedEnd {
  cable: ResolvedCable;
  /** The other end of the planned cable. */
  peer: PlanPort;
}

const sameAddress = (a: PortAddress | undefined, b: Pick<PlanPort, 'nodeGuid' | 'port'> | undefined): boolean =>
  a !== undefined && b !== undefined && a.nodeGuid === b.nodeGuid && a.port === b.port;

const addressOfPlan = (end: PlanPort): PortAddress | undefined =>
  end.nodeGuid === undefined ? undefined : { nodeGuid: end.nodeGuid, port: end.port };

/** The width and speed of a link as read at either end (the first end read with both). */
function trained(
  readings: ReadonlyMap<string, FabricPortReading>,
  keys: readonly string[],
): { width: LinkWidth | undefined; speed: LinkSpeed | undefined } {
  for (const key of keys) {
    const reading = readings.get(key);
    if (reading?.width !== undefined || reading?.speed !== undefined) return { width: reading.width, speed: reading.speed };
  }
  return { width: undefined, speed: undefined };
}

function belowPlan(cable: ResolvedCable, width: LinkWidth | undefined, speed: LinkSpeed | undefined): boolean {
  return (
    (cable.width !== undefined && width !== undefined && width < cable.width) ||
    (cable.speed !== undefined && speed !== undefined && speedRank(speed) < speedRank(cable.speed))
  );
}

/**
 * Judge the fabric against a resolved plan. `readings` are the last ports cycle's (fresh peers of
 * switch ports), `topology` the last discovery (the rest); `cabling` may be passed when the caller
 * already has it (see currentCabling).
 */
export function judgeConformance(
  plan: ResolvedPlan,
  topology: FabricTopology | undefined,
  readings: ReadonlyMap<string, FabricPortReading>,
  cabling: ReadonlyMap<string, PortAddress> = currentCabling(topology, readings),
): CablingConformance {
  return atOnce(judgeConformanceSteps(plan, topology, readings, cabling));
}

/** The same, as work that may pause (a plan of every cable of a fabric). */
function* judgeConformanceSteps(
  plan: ResolvedPlan,
  topology: FabricTopology | undefined,
  readings: ReadonlyMap<string, FabricPortReading>,
  cabling: ReadonlyMap<string, PortAddress>,
): Work<CablingConformance> {
  const pace = pacer();
  const present = (guid: string | undefined): boolean => guid !== undefined && topology?.nodes.has(guid) === true;
  const nowOf = (end: PlanPort): PortAddress | undefined => (end.nodeGuid === undefined ? undefined : cabling.get(planPortKey(end)));

  const planned = new Map<string, PlannedEnd>();
  for (const cable of plan.cables) {
    if (pace()) yield;
    planned.set(planPortKey(cable.ends[0]), { cable, peer: cable.ends[1] });
    planned.set(planPortKey(cable.ends[1]), { cable, peer: cable.ends[0] });
  }

  // Every planned cable's status.
  const links: PlannedLinkConformance[] = [];
  const asPlanned = new Set<ResolvedCable>();
  for (const cable of plan.cables) {
    if (pace()) yield;
    const [a, b] = cable.ends;
    const now: [PortAddress | undefined, PortAddress | undefined] = [nowOf(a), nowOf(b)];
    if (sameAddress(now[0], b)) {
      const rate = trained(readings, [planPortKey(a), planPortKey(b)]);
      links.push({
        cable,
        status: belowPlan(cable, rate.width, rate.speed) ? PLANNED_LINK_STATUS.belowPlan : PLANNED_LINK_STATUS.asPlanned,
        now,
        ...rate,
      });
      asPlanned.add(cable);
    } else {
      links.push({
        cable,
        status: now[0] || now[1] ? PLANNED_LINK_STATUS.connectedElsewhere : PLANNED_LINK_STATUS.noLink,
        now,
        width: undefined,
        speed: undefined,
      });
    }
  }

  // The cables there now that the plan does not have: on a planned port, or between two nodes of
  // the plan (a plan of the inter-switch links alone says nothing about the host cables).
  const unplanned: UnplannedCable[] = [];
  const tangled = new Map<string, PortAddress>();
  for (const [key, peer] of cabling) {
    if (pace()) yield;
    const peerKey = fabricPortKey(peer.nodeGuid, peer.port);
    if (key > peerKey) continue;
    const here = planned.get(key);
    if (here && sameAddress(peer, here.peer)) continue;
    const there = planned.get(peerKey);
    const self = addressFromKey(key);
    if (!here && !there && !(plan.nodes.has(self.nodeGuid) && plan.nodes.has(peer.nodeGuid))) continue;
    unplanned.push({ ends: switchFirst(topology, self, peer) });
    if (here || there) {
      tangled.set(key, peer);
      tangled.set(peerKey, self);
    }
  }

  const actions: CablingAction[] = [];
  const plugged = new Set<ResolvedCable>();
  const visited = new Set<string>();
  const components: string[][] = [];
  // Tangles: start from every planned port that is not as planned, in plan order.
  for (const cable of plan.cables) {
    if (pace()) yield;
    if (asPlanned.has(cable)) continue;
    for (const end of cable.ends) {
      const key = planPortKey(end);
      if (!visited.has(key)) components.push(walk(key, planned, tangled, visited));
    }
  }
  for (const ports of components) {
    if (pace()) yield;
    const action = untangle(ports, planned, tangled, present, topology);
    for (const cable of action.plug) plugged.add(cable);
    if (action.moves.length > 0 || action.unplug.length > 0) actions.push(action);
    else for (const cable of action.plug) plugged.delete(cable);
  }

  // Planned cables with no link that no action plugs, between two nodes of the fabric: missing links.
  const missingLinks: MissingLink[] = [];
  for (const link of links) {
    if (pace()) yield;
    if (link.status === PLANNED_LINK_STATUS.noLink && !plugged.has(link.cable) && link.cable.ends.every((end) => present(end.nodeGuid)))
      missingLinks.push({ cable: link.cable });
  }
  // Nodes of the plan the fabric does not have, with every cable the plan gives them: those of the
  // cables not judged too (a name no node has). A name several nodes have is not missing: it is a
  // problem of the plan (ResolvedPlan.problems), its own finding.
  const missing = new Map<string, MissingPlanNode & { cables: ResolvedCable[] }>();
  const ambiguous = new Set(plan.problems.filter((problem) => problem.kind === 'ambiguous').map((problem) => problem.name));
  for (const cable of [...plan.cables, ...plan.unjudged]) {
    if (pace()) yield;
    for (const end of cable.ends) {
      if (present(end.nodeGuid) || (end.nodeGuid === undefined && ambiguous.has(end.written))) continue;
      const id = end.nodeGuid ?? `?${end.written}`;
      let node = missing.get(id);
      if (!node) missing.set(id, (node = { guid: end.nodeGuid, written: end.written, cables: [] }));
      node.cables.push(cable);
    }
  }

  unplanned.sort((x, y) => compareAddresses(x.ends[0], y.ends[0]));
  return {
    plan,
    links,
    unplanned,
    actions,
    missingLinks,
    missingNodes: [...missing.values()],
    belowPlan: links.filter((link) => link.status === PLANNED_LINK_STATUS.belowPlan),
  };
}

const compareAddresses = (a: PortAddress, b: PortAddress): number =>
  a.nodeGuid < b.nodeGuid ? -1 : a.nodeGuid > b.nodeGuid ? 1 : a.port - b.port;

/**
 * The cabling report of one cycle, the collector's one call: the plan's conformance (with a plan)
 * and the rails (`fabric.rails`, else inferred, when there is a plan or rails), both judged on the
 * same view of where every cable is now. Undefined without a plan and without rails: nothing of it
 * runs, no series exists.
 */
export function judgeCabling(
  plan: ResolvedPlan | undefined,
  rails: readonly RailRule[] | undefined,
  topology: FabricTopology | undefined,
  readings: ReadonlyMap<string, FabricPortReading>,
): CablingReport | undefined {
  return atOnce(judgeCablingSteps(plan, rails, topology, readings));
}

/** The same, as work that may pause. */
export function* judgeCablingSteps(
  plan: ResolvedPlan | undefined,
  rails: readonly RailRule[] | undefined,
  topology: FabricTopology | undefined,
  readings: ReadonlyMap<string, FabricPortReading>,
): Work<CablingReport | undefined> {
  if (!plan && !rails?.length) return undefined;
  const cabling = yield* currentCablingSteps(topology, readings);
  return {
    conformance: plan && (yield* judgeConformanceSteps(plan, topology, readings, cabling)),
    rails: yield* judgeRailsSteps(topology, cabling, rails),
  };
}

function addressFromKey(key: string): PortAddress {
  const slash = key.lastIndexOf('/');
  return { nodeGuid: key.slice(0, slash), port: Number(key.slice(slash + 1)) };
}

/** A cable's ends for its labels: the switch end first, then the lower GUID, then the lower port. */
export function switchFirst(topology: FabricTopology | undefined, a: PortAddress, b: PortAddress): [PortAddress, PortAddress] {
  const rank = (end: PortAddress): number => (topology?.nodes.get(end.nodeGuid)?.type === 'switch' ? 0 : 1);
  const order = rank(a) - rank(b) || (a.nodeGuid < b.nodeGuid ? -1 : a.nodeGuid > b.nodeGuid ? 1 : 0) || a.port - b.port;
  return order <= 0 ? [a, b] : [b, a];
}

/** The ports of one tangle in order along it: from one end of a chain, or around a cycle. */
function walk(
  start: string,
  planned: ReadonlyMap<string, PlannedEnd>,
  tangled: ReadonlyMap<string, PortAddress>,
  visited: Set<string>,
): string[] {
  const edges = (key: string): { plan: string | undefined; cable: string | undefined } => {
    const end = planned.get(key);
    const peer = tangled.get(key);
    return { plan: end && planPortKey(end.peer), cable: peer && fabricPortKey(peer.nodeGuid, peer.port) };
  };
  // Every port of the tangle (each has at most one edge of each kind).
  const members: string[] = [];
  const seen = new Set([start]);
  for (let i = 0, queue = [start]; i < queue.length; i++) {
    members.push(queue[i]!);
    const { plan, cable } = edges(queue[i]!);
    for (const next of [plan, cable]) {
      if (next !== undefined && !seen.has(next)) {
        seen.add(next);
        queue.push(next);
      }
    }
  }
  // A chain is walked from a port with one edge; a cycle from anywhere.
  const degree = (key: string): number => Object.values(edges(key)).filter((next) => next !== undefined).length;
  const first = members.find((key) => degree(key) === 1) ?? start;
  const ports = [first];
  visited.add(first);
  let viaPlan: boolean | undefined;
  for (let current = first; ; ) {
    const { plan, cable } = edges(current);
    const next =
      viaPlan !== true && plan !== undefined && !visited.has(plan)
        ? plan
        : viaPlan !== false && cable !== undefined && !visited.has(cable)
          ? cable
          : undefined;
    if (next === undefined) break;
    viaPlan = next === plan;
    ports.push(next);
    visited.add(next);
    current = next;
  }
  return ports;
}

interface Plan {
  moves: CableMove[];
  unplug: UnplannedCable[];
  plug: ResolvedCable[];
  cost: number;
}

/** The cheaper way to untangle one tangle (see the head of this file). */
function untangle(
  ports: readonly string[],
  planned: ReadonlyMap<string, PlannedEnd>,
  tangled: ReadonlyMap<string, PortAddress>,
  present: (guid: string | undefined) => boolean,
  topology: FabricTopology | undefined,
): CablingAction {
  // The cables of the tangle as [first, second] in walk order (a cycle closes from its last port to its first).
  const cables: [string, string][] = [];
  for (let i = 0; i < ports.length; i++) {
    const next = ports[(i + 1) % ports.length]!;
    const peer = tangled.get(ports[i]!);
    if (peer && fabricPortKey(peer.nodeGuid, peer.port) === next && (i + 1 < ports.length || ports.length > 2))
      cables.push([ports[i]!, next]);
  }
  const cablesOfPlan = new Set<ResolvedCable>();
  for (const key of ports) {
    const end = planned.get(key);
    if (end) cablesOfPlan.add(end.cable);
  }
  const hostOf = (guid: string): string => {
    const node = topology?.nodes.get(guid);
    return (node && adapterOf(node)?.host) ?? guid;
  };
  const isSwitch = (guid: string): boolean => topology?.nodes.get(guid)?.type === 'switch';

  const evaluate = (movingIndex: 0 | 1): Plan => {
    const moves: CableMove[] = [];
    const unplug: UnplannedCable[] = [];
    const satisfied = new Set<ResolvedCable>();
    let cost = 0;
    for (const cable of cables) {
      const moving = cable[movingIndex];
      const kept = cable[1 - movingIndex]!;
      const target = planned.get(kept);
      const to = target && addressOfPlan(target.peer);
      if (target && to && present(to.nodeGuid)) {
        const from = addressFromKey(moving);
        moves.push({ from, to, anchor: addressFromKey(kept) });
        satisfied.add(target.cable);
        cost += 1;
        // Ties: a move within one node or host, and of a switch end, is the easier one.
        if (from.nodeGuid !== to.nodeGuid && hostOf(from.nodeGuid) !== hostOf(to.nodeGuid)) cost += 0.01;
        if (!isSwitch(from.nodeGuid)) cost += 0.001;
      } else {
        unplug.push({ ends: switchFirst(topology, addressFromKey(cable[0]), addressFromKey(cable[1])) });
        cost += 1;
      }
    }
    const plug = [...cablesOfPlan].filter((cable) => !satisfied.has(cable) && cable.ends.every((end) => present(end.nodeGuid)));
    return { moves, unplug, plug, cost: cost + plug.length };
  };
  const [first, second] = [evaluate(0), evaluate(1)];
  const best = second.cost < first.cost ? second : first;
  return describe(best);
}

/** Name the action: a cycle of two is a swap, a longer one k − 1 swaps; otherwise moves in the order they can be done. */
function describe({ moves, unplug, plug }: Plan): CablingAction {
  const key = (address: PortAddress): string => fabricPortKey(address.nodeGuid, address.port);
  const byFrom = new Map(moves.map((move) => [key(move.from), move]));
  const isCycle = moves.length >= 2 && unplug.length === 0 && moves.every((move) => byFrom.has(key(move.to)));
  if (isCycle) {
    // Follow the cycle from its first port (by GUID and port): p1 → p2 → … → pk → p1; swap p1 with
    // p2, then p3, …, pk.
    const start = [...moves].sort((a, b) => compareAddresses(a.from, b.from))[0]!;
    const cycle: CableMove[] = [start];
    while (cycle.length < moves.length) cycle.push(byFrom.get(key(cycle.at(-1)!.to))!);
    if (cycle.length === moves.length && key(cycle.at(-1)!.to) === key(cycle[0]!.from)) {
      const swaps = cycle.slice(1).map((move) => [cycle[0]!.from, move.from] as const);
      return { kind: cycle.length === 2 ? 'swap' : 'rotate', moves: cycle, swaps, unplug, plug };
    }
  }
  // A move can be made once its target port is free: after the move out of it.
  const ordered: CableMove[] = [];
  const pending = new Set(moves);
  while (pending.size > 0) {
    const ready = [...pending].filter((move) => ![...pending].some((other) => other !== move && key(other.from) === key(move.to)));
    const next = ready.length > 0 ? ready : [pending.values().next().value!];
    for (const move of next) {
      ordered.push(move);
      pending.delete(move);
    }
  }
  return { kind: 'move', moves: ordered, swaps: [], unplug, plug };
}
