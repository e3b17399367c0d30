// A parsed cabling plan against a discovered fabric: each plan node's GUID. GUIDs stand for
// themselves, names go through the node-name-map, then the fabric's NodeDescriptions.
// A name that is the NodeDescription (or node-name-map name) of several nodes, a name no node has,
// and a cable that names one port twice once resolved are problems of the plan against this
// fabric, never errors of the file: the fabric is untrusted (any host sets its own NodeDescription
// and can copy another's at any time), so the plan's other lines are still judged and each problem
// is a finding of the cabling collector. A node named by GUID or node-name-map name that the fabric
// does not have is no problem: it is missing (infiniband_fabric_plan_nodes_missing), its cables have
// no link. Once resolved, a NodeDescription stays bound to its GUID (`bindings`): a host that powers
// off later is missing, not unknown, and a host that copies its description later does not take
// its cables (the copy is still a problem: a restart would no longer know which node is meant).
import type { CablingPlan, PlanEnd, PlanPort, PlanProblem, ResolvedCable, ResolvedPlan } from '../../model/cabling.js';
import { fabricPortKey, type FabricTopology } from '../../model/fabric.js';
import { atOnce, pacer, type Work } from '../../event-loop/time-slices.js';

const ADVICE = 'name the node by GUID or node-name-map name in the plan (infiniband-exporter topology save does)';

/**
 * The plan's nodes by GUID in `topology` (undefined before the first discovery: names are then left
 * unresolved, their cables unjudged, and no problem said). `names` is the node-name-map (GUID →
 * name); `previous` the bindings of the last resolution. Always usable: a cable with an end no name
 * resolved is left unjudged, a cable on a port already planned is left out, and each is in `problems`.
 */
export function resolvePlan(
  plan: CablingPlan,
  topology: FabricTopology | undefined,
  names: ReadonlyMap<string, string>,
  previous: ReadonlyMap<string, string> = new Map(),
): ResolvedPlan {
  return atOnce(resolvePlanSteps(plan, topology, names, previous));
}

/** `resolvePlan`, pausing every few hundred cables (a plan of 16 MiB is 300 000 of them). */
export function* resolvePlanSteps(
  plan: CablingPlan,
  topology: FabricTopology | undefined,
  names: ReadonlyMap<string, string>,
  previous: ReadonlyMap<string, string> = new Map(),
): Work<ResolvedPlan> {
  const pace = pacer();
  const byName = groupBy([...names].map(([guid, name]) => [name, guid]));
  const byDescription = groupBy([...(topology?.nodes.values() ?? [])].map((node) => [node.description.trim(), node.guid]));
  const bindings = new Map<string, string>();
  const unresolved = new Set<string>();
  const refs = new Map<string, { guid: string | undefined; problem?: PlanProblem & { lines: number[] } }>();
  const problems: (PlanProblem & { lines: number[] })[] = [];
  const problem = (
    kind: PlanProblem['kind'],
    name: string,
    guids: string[],
    message: string,
    boundTo?: string,
  ): PlanProblem & { lines: number[] } => {
    const found = { kind, name, lines: [], guids, message, ...(boundTo !== undefined && { boundTo }) };
    problems.push(found);
    return found;
  };

  const resolveName = (text: string): { guid: string | undefined; problem?: PlanProblem & { lines: number[] } } => {
    // Sorted: the same nodes are said the same way whatever order a discovery lists them in.
    const mapped = (byName.get(text) ?? []).sort();
    const described = (byDescription.get(text) ?? []).sort();
    const bound = previous.get(text);
    if (mapped.length === 1) return { guid: mapped[0] };
    if (mapped.length > 1) {
      return {
        guid: undefined,
        problem: problem(
          'ambiguous',
          text,
          mapped,
          `"${text}" is the node-name-map name of ${mapped.length} nodes (${mapped.join(', ')}): its cables are not judged; give each node its own name in the node-name-map, or write the GUID in the plan`,
        ),
      };
    }
    if (described.length === 1) {
      bindings.set(text, described[0]!);
      return { guid: described[0] };
    }
    if (described.length > 1) {
      const shared = `"${text}" is the NodeDescription of ${described.length} nodes (${described.join(', ')})`;
      if (bound !== undefined && described.includes(bound)) {
        bindings.set(text, bound);
        return {
          guid: bound,
          problem: problem(
            'ambiguous',
            text,
            described,
            `${shared}: judged as ${bound}, the node it named before, until the exporter restarts; a host copied another's NodeDescription, or ${ADVICE}`,
            bound,
          ),
        };
      }
      return {
        guid: undefined,
        problem: problem(
          'ambiguous',
          text,
          described,
          `${shared}: its cables are not judged; a host copied another's NodeDescription, or ${ADVICE}`,
        ),
      };
    }
    if (bound !== undefined) {
      bindings.set(text, bound);
      return { guid: bound };
    }
    if (!topology) return { guid: undefined };
    return {
      guid: undefined,
      problem: problem(
        'unknown',
        text,
        [],
        `"${text}" names no node: no node-name-map name or NodeDescription in the fabric is "${text}": a typo, or a host down since the exporter started; ${ADVICE}`,
      ),
    };
  };

  const resolve = (ref: PlanEnd['node'], line: number): string | undefined => {
    if (ref.guid !== undefined) return ref.guid;
    let found = refs.get(ref.text);
    if (!found) refs.set(ref.text, (found = resolveName(ref.text)));
    // Cables come in the order of their lines: a line already noted is the last one.
    if (found.problem && found.problem.lines.at(-1) !== line) found.problem.lines.push(line);
    if (found.guid === undefined) unresolved.add(ref.text);
    return found.guid;
  };

  const cables: ResolvedCable[] = [];
  const unjudged: ResolvedCable[] = [];
  const nodes = new Map<string, string>();
  const planned = new Map<string, number>();
  for (const cable of plan.cables) {
    if (pace()) yield;
    const ends = cable.ends.map((end): PlanPort => {
      const nodeGuid = resolve(end.node, cable.line);
      const written = plan.format === 'ibnetdiscover' ? plan.nodes.get(end.node.text)?.description.trim() || end.node.text : end.node.text;
      if (nodeGuid !== undefined && !nodes.has(nodeGuid)) nodes.set(nodeGuid, written);
      return { nodeGuid, port: end.port, written };
    }) as unknown as [PlanPort, PlanPort];
    const keys = ends.map((end) => (end.nodeGuid === undefined ? undefined : fabricPortKey(end.nodeGuid, end.port)));
    const twice = keys.findIndex((key) => key !== undefined && planned.has(key));
    if (keys[0] !== undefined && keys[0] === keys[1]) {
      problem(
        'conflict',
        ends[0].written,
        [ends[0].nodeGuid!],
        `"${ends[0].written}" and "${ends[1].written}" are the same node (${ends[0].nodeGuid}), port ${ends[0].port} at both ends: this cable is not judged; ${ADVICE}`,
      ).lines.push(cable.line);
      continue;
    }
    if (twice >= 0) {
      const end = ends[twice]!;
      problem(
        'conflict',
        end.written,
        [end.nodeGuid!],
        `port ${end.port} of "${end.written}" (${end.nodeGuid}) is already cabled at line ${planned.get(keys[twice]!)}, under another name: this cable is not judged; ${ADVICE}`,
      ).lines.push(cable.line);
      continue;
    }
    for (const key of keys) if (key !== undefined) planned.set(key, cable.line);
    const resolved = { line: cable.line, ends, width: cable.width, speed: cable.speed };
    (keys.includes(undefined) ? unjudged : cables).push(resolved);
  }
  problems.sort((a, b) => a.lines[0]! - b.lines[0]!);
  return { plan, cables, unjudged, problems, nodes, unresolved: [...unresolved], bindings };
}

function groupBy(pairs: readonly (readonly [string, string])[]): Map<string, string[]> {
  const groups = new Map<string, string[]>();
  for (const [key, value] of pairs) {
    if (key === '') continue;
    const group = groups.get(key);
    if (group) group.push(value);
    else groups.set(key, [value]);
  }
  return groups;
}
