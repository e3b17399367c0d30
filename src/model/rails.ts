// Rails of a rail-optimised fabric: adapter i of every GPU host on the leaves of rail i, so that the
// all-reduce of one rail stays on its leaves. One adapter on another rail's leaf sends a whole job's
// traffic through the spines. Which switches make a rail, and which adapter of a host belongs to it:
//   - `fabric.rails` in the config file (collectors/fabric/cabling/rails-section.ts): per rail, globs on the leaves'
//     names and the adapter (`mlx5_3`, matched against the last word of the host adapter's
//     NodeDescription as rdma-ndd writes it, `<hostname> <device>`; or a glob on the whole of it,
//     `* HCA-4`);
//   - without it, inferred from the fabric: hosts with two adapters or more (NodeDescriptions
//     `<host> <adapter>`), each switch's rail is the adapter most of its host cables come from —
//     when the fabric looks rail-optimised at all (at least two rails, and three quarters of those
//     cables agree with their switch's majority). An adapter on a switch of another rail is a
//     violation; a switch without a clear majority judges nobody.
import { atOnce, pacer, type Work } from '../event-loop/time-slices.js';
import { adapterOf, globPattern, compareNames, type RailReport, type RailRule, type RailViolation } from './cabling.js';
import { fabricPortKey, type FabricNode, type FabricTopology, type PortAddress } from './fabric.js';

/** Share of tallied host cables that must agree with their switch's majority for a fabric to count as rail-optimised. */
export const RAIL_AGREEMENT = 0.75;

/** The rail report, or undefined when there is nothing to judge (no topology, or no rails configured and none to infer). */
export function judgeRails(
  topology: FabricTopology | undefined,
  cabling: ReadonlyMap<string, PortAddress>,
  rules: readonly RailRule[] | undefined,
): RailReport | undefined {
  return atOnce(judgeRailsSteps(topology, cabling, rules));
}

/** The same, as work that may pause (every host adapter of a fabric). */
export function* judgeRailsSteps(
  topology: FabricTopology | undefined,
  cabling: ReadonlyMap<string, PortAddress>,
  rules: readonly RailRule[] | undefined,
): Work<RailReport | undefined> {
  if (!topology) return undefined;
  return rules && rules.length > 0 ? yield* configuredRails(topology, cabling, rules) : yield* inferredRails(topology, cabling);
}

/** Each host adapter port with a cable to a switch: the adapter, its port, and the switch port. */
function* hostCables(
  topology: FabricTopology,
  cabling: ReadonlyMap<string, PortAddress>,
): Work<{ node: FabricNode; port: number; leaf: PortAddress }[]> {
  const pace = pacer();
  const cables: { node: FabricNode; port: number; leaf: PortAddress }[] = [];
  for (const node of topology.nodes.values()) {
    if (pace()) yield;
    if (node.type !== 'ca') continue;
    for (let port = 1; port <= node.portCount; port++) {
      const leaf = cabling.get(fabricPortKey(node.guid, port));
      if (leaf && topology.nodes.get(leaf.nodeGuid)?.type === 'switch') cables.push({ node, port, leaf });
    }
  }
  return cables;
}

const byName =
  (topology: FabricTopology) =>
  (a: string, b: string): number => {
    const name = (guid: string): string => topology.nodes.get(guid)?.name || topology.nodes.get(guid)?.description || guid;
    return compareNames(name(a), name(b));
  };

function* configuredRails(
  topology: FabricTopology,
  cabling: ReadonlyMap<string, PortAddress>,
  rules: readonly RailRule[],
): Work<RailReport> {
  const pace = pacer();
  const compiled = rules.map((rule) => ({
    rule,
    leaves: rule.leaves.map(globPattern),
    adapter: globPattern(/\s/.test(rule.adapter) ? rule.adapter : `* ${rule.adapter}`),
  }));
  // A switch belongs to the first rail whose globs match its name or NodeDescription.
  const railOfSwitch = new Map<string, string>();
  const rails = new Map<string, string[]>(rules.map((rule) => [rule.name, []]));
  for (const node of topology.nodes.values()) {
    if (pace()) yield;
    if (node.type !== 'switch') continue;
    const names = [node.name, node.description.trim()].filter((name): name is string => Boolean(name));
    const rail = compiled.find(({ leaves }) => leaves.some((leaf) => names.some((name) => leaf.test(name))));
    if (!rail) continue;
    railOfSwitch.set(node.guid, rail.rule.name);
    rails.get(rail.rule.name)!.push(node.guid);
  }
  for (const leaves of rails.values()) leaves.sort(byName(topology));
  const violations: RailViolation[] = [];
  for (const { node, port, leaf } of yield* hostCables(topology, cabling)) {
    if (pace()) yield;
    const rail = compiled.find(({ adapter }) => adapter.test(node.description.trim()))?.rule.name;
    const leafRail = railOfSwitch.get(leaf.nodeGuid) ?? '';
    if (rail !== undefined && rail !== leafRail)
      violations.push({ adapter: { nodeGuid: node.guid, port }, leaf, rail, leafRail, railLeaves: rails.get(rail)! });
  }
  return { source: 'config', rails, violations };
}

function* inferredRails(topology: FabricTopology, cabling: ReadonlyMap<string, PortAddress>): Work<RailReport | undefined> {
  const pace = pacer();
  // Hosts with two adapters or more: only they say anything about rails.
  const adapters = new Map<string, Set<string>>();
  for (const node of topology.nodes.values()) {
    if (pace()) yield;
    const adapter = adapterOf(node);
    if (adapter) adapters.set(adapter.host, (adapters.get(adapter.host) ?? new Set()).add(adapter.adapter));
  }
  const railKey = (node: FabricNode, port: number): string | undefined => {
    const adapter = adapterOf(node);
    if (!adapter || adapters.get(adapter.host)!.size < 2) return undefined;
    return node.portCount > 1 ? `${adapter.adapter}/${port}` : adapter.adapter;
  };
  const cables = (yield* hostCables(topology, cabling)).flatMap((cable) => {
    const key = railKey(cable.node, cable.port);
    return key === undefined ? [] : [{ ...cable, key }];
  });
  const tallies = new Map<string, Map<string, number>>();
  for (const { leaf, key } of cables) {
    if (pace()) yield;
    const tally = tallies.get(leaf.nodeGuid) ?? new Map<string, number>();
    tallies.set(leaf.nodeGuid, tally.set(key, (tally.get(key) ?? 0) + 1));
  }
  // Each switch's rail: the adapter of more than half of its host cables.
  const railOfSwitch = new Map<string, string>();
  let agreeing = 0;
  for (const [guid, tally] of tallies) {
    const total = [...tally.values()].reduce((sum, count) => sum + count, 0);
    const [top, count] = [...tally].reduce((best, entry) => (entry[1] > best[1] ? entry : best));
    if (count * 2 > total) {
      railOfSwitch.set(guid, top);
      agreeing += count;
    }
  }
  const rails = new Map<string, string[]>();
  for (const [guid, rail] of railOfSwitch) rails.set(rail, [...(rails.get(rail) ?? []), guid]);
  if (rails.size < 2 || agreeing < RAIL_AGREEMENT * cables.length) return undefined;
  for (const leaves of rails.values()) leaves.sort(byName(topology));
  const violations: RailViolation[] = [];
  for (const { node, port, leaf, key } of cables) {
    if (pace()) yield;
    const leafRail = railOfSwitch.get(leaf.nodeGuid);
    if (leafRail !== undefined && leafRail !== key)
      violations.push({ adapter: { nodeGuid: node.guid, port }, leaf, rail: key, leafRail, railLeaves: rails.get(key) ?? [] });
  }
  return { source: 'inferred', rails: new Map([...rails].sort(([a], [b]) => compareNames(a, b))), violations };
}
