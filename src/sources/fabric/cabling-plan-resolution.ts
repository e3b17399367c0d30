// A parsed cabling plan against a discovered fabric: each plan node's GUID. GUIDs stand for
// themselves, names go through the node-name-map, then the fabric's NodeDescriptions.
// A name that resolves to no node (not a GUID, not in the node-name-map, no node with that
// NodeDescription) or to several is an error at start, in `check` and on reload — a typo must not
// pass for a missing host. A node named by GUID or node-name-map name that the fabric does not have
// is no error: it is counted in infiniband_fabric_plan_nodes_missing and its cables have no link.
// Once resolved, a NodeDescription stays bound to its GUID (`bindings`), so a host that powers off
// later is missing, not unknown.
import type { CablingPlan, PlanEnd, PlanError, PlanPort, ResolvedCable, ResolvedPlan } from '../../model/cabling.js';
import { fabricPortKey, type FabricTopology } from '../../model/fabric.js';

/**
 * The plan's nodes by GUID in `topology` (undefined before the first discovery: names are then left
 * unresolved, and not judged). `names` is the node-name-map (GUID → name); `previous` the bindings
 * of the last resolution. The plan always comes back usable (unresolved nodes have no GUID, a cable
 * on a port already planned is left out); `errors` are what make the file unacceptable at start, in
 * `check` and on reload.
 */
export function resolvePlan(
  plan: CablingPlan,
  topology: FabricTopology | undefined,
  names: ReadonlyMap<string, string>,
  previous: ReadonlyMap<string, string> = new Map(),
): { resolved: ResolvedPlan; errors: PlanError[] } {
  const errors: PlanError[] = [];
  const byName = groupBy([...names].map(([guid, name]) => [name, guid]));
  const byDescription = groupBy([...(topology?.nodes.values() ?? [])].map((node) => [node.description.trim(), node.guid]));
  const bindings = new Map<string, string>();
  const unresolved = new Set<string>();
  const refs = new Map<string, string | undefined>();

  const resolve = (ref: PlanEnd['node'], line: number): string | undefined => {
    if (ref.guid !== undefined) return ref.guid;
    if (refs.has(ref.text)) return refs.get(ref.text);
    let guid: string | undefined;
    const mapped = byName.get(ref.text) ?? [];
    const described = byDescription.get(ref.text) ?? [];
    const bound = previous.get(ref.text);
    if (mapped.length === 1) {
      guid = mapped[0];
    } else if (mapped.length > 1) {
      errors.push({ line, message: `"${ref.text}" names ${mapped.length} nodes in the node-name-map (${mapped.join(', ')}): expected a name of one node, or its GUID` });
    } else if (described.length === 1) {
      guid = described[0];
      bindings.set(ref.text, guid!);
    } else if (described.length > 1) {
      guid = bound !== undefined && described.includes(bound) ? bound : undefined;
      if (guid === undefined) errors.push({ line, message: `"${ref.text}" is the NodeDescription of ${described.length} nodes (${described.join(', ')}): expected the GUID or node-name-map name of one` });
      else bindings.set(ref.text, guid);
    } else if (bound !== undefined) {
      guid = bound;
      bindings.set(ref.text, guid);
    } else if (topology) {
      errors.push({ line, message: `"${ref.text}" names no node: expected a GUID, a name of the node-name-map, or the NodeDescription of a node in the fabric (a node not cabled yet is named by GUID or node-name-map name)` });
    }
    if (guid === undefined) unresolved.add(ref.text);
    refs.set(ref.text, guid);
    return guid;
  };

  const cables: ResolvedCable[] = [];
  const nodes = new Map<string, string>();
  const planned = new Map<string, number>();
  for (const cable of plan.cables) {
    const ends = cable.ends.map((end): PlanPort => {
      const nodeGuid = resolve(end.node, cable.line);
      const written = plan.format === 'ibnetdiscover' ? plan.nodes.get(end.node.text)?.description.trim() || end.node.text : end.node.text;
      if (nodeGuid !== undefined && !nodes.has(nodeGuid)) nodes.set(nodeGuid, written);
      return { nodeGuid, port: end.port, written };
    }) as unknown as [PlanPort, PlanPort];
    const keys = ends.map((end) => (end.nodeGuid === undefined ? undefined : fabricPortKey(end.nodeGuid, end.port)));
    const twice = keys.findIndex((key) => key !== undefined && planned.has(key));
    if (keys[0] !== undefined && keys[0] === keys[1]) {
      errors.push({ line: cable.line, message: `"${ends[0].written}" and "${ends[1].written}" are the same node: expected two different ports, got port ${ends[0].port} at both ends` });
      continue;
    }
    if (twice >= 0) {
      const end = ends[twice]!;
      errors.push({ line: cable.line, message: `port ${end.port} of "${end.written}" (${end.nodeGuid}) is already cabled at line ${planned.get(keys[twice]!)}, under another name: expected each port in one cable at most` });
      continue;
    }
    for (const key of keys) if (key !== undefined) planned.set(key, cable.line);
    cables.push({ line: cable.line, ends, width: cable.width, speed: cable.speed });
  }
  return { resolved: { plan, cables, nodes, unresolved: [...unresolved], bindings }, errors: errors.sort((a, b) => a.line - b.line) };
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
