// A fabric written as a cabling plan (`infiniband-exporter topology save FILE`).
import { normaliseGuid } from '../../model/guid.js';
import { formatWidth } from '../../model/link-rate.js';
import { compareNames, currentCabling } from '../../model/cabling.js';
import {
  fabricPortKey,
  type FabricNode,
  type FabricNodeType,
  type FabricPortReading,
  type FabricTopology,
  type PortAddress,
} from '../../model/fabric.js';

/** A name as a plan token: quoted when it has spaces, `#`, `"` or `\`, or could be read as a GUID or be empty. */
export function planToken(name: string): string {
  return /^[^\s#"\\]+$/.test(name) && !/^0x[0-9a-f]{1,16}$/i.test(name) ? name : `"${name.replace(/[\\"]/g, '\\$&')}"`;
}

/** How `formatPlan` names the nodes, and how many it wrote by GUID, by why. */
export interface PlanNames {
  /** GUID → the name written (the GUID itself where no name is the node's alone). */
  names: Map<string, string>;
  /** Written by GUID: NodeDescription shared with another node (or another's node-name-map name); none at all (or one that reads as a GUID). */
  byGuid: { shared: number; nameless: number };
}

/**
 * How `formatPlan` names each node, so that reading the plan back resolves every name to it alone:
 * its node-name-map name where no other node has it, else its NodeDescription where no other node of
 * the fabric has it (as description or map name), else its GUID. Any host sets its own description:
 * two adapters still named "MT4129 ConnectX7 Mellanox Technologies" before rdma-ndd set the
 * hostname, or a host that copied another's, are written by GUID.
 */
export function planNames(topology: FabricTopology): PlanNames {
  const count = (values: Iterable<string>): Map<string, number> => {
    const uses = new Map<string, number>();
    for (const value of values) if (value !== '') uses.set(value, (uses.get(value) ?? 0) + 1);
    return uses;
  };
  const nodes = [...topology.nodes.values()];
  const mapNames = count(nodes.map((node) => node.name ?? ''));
  const descriptions = count(nodes.map((node) => node.description.trim()));
  const names = new Map<string, string>();
  const byGuid = { shared: 0, nameless: 0 };
  for (const node of nodes) {
    const description = node.description.trim();
    if (node.name && mapNames.get(node.name) === 1) {
      names.set(node.guid, node.name);
    } else if (description === '' || normaliseGuid(description) !== undefined) {
      names.set(node.guid, node.guid);
      byGuid.nameless += 1;
    } else if (descriptions.get(description) === 1 && !mapNames.has(description)) {
      names.set(node.guid, description);
    } else {
      names.set(node.guid, node.guid);
      byGuid.shared += 1;
    }
  }
  return { names, byGuid };
}

/** The end a plan line starts with: a switch before a CA, then the name first in natural order, then the lower port. */
function planOrder(
  topology: FabricTopology,
  names: ReadonlyMap<string, string>,
  a: PortAddress,
  b: PortAddress,
): [PortAddress, PortAddress] {
  const rank = (end: PortAddress): number => (topology.nodes.get(end.nodeGuid)?.type === 'switch' ? 0 : 1);
  const order =
    rank(a) - rank(b) || compareNames(names.get(a.nodeGuid) ?? a.nodeGuid, names.get(b.nodeGuid) ?? b.nodeGuid) || a.port - b.port;
  return order <= 0 ? [a, b] : [b, a];
}

/**
 * Today's fabric as a cabling plan (`infiniband-exporter topology save FILE`): every cable once,
 * its switch end first, sorted by node name (naturally) and port, with the width and speed it
 * trained at when `readings` (a ports cycle) has them. Parsing the text back and comparing it with
 * the same fabric finds nothing.
 */
export function formatPlan(topology: FabricTopology, readings: ReadonlyMap<string, FabricPortReading> = new Map(), savedAt?: Date): string {
  const { names, byGuid } = planNames(topology);
  const cabling = currentCabling(topology, readings);
  const rows: { ends: [PortAddress, PortAddress]; rate: string }[] = [];
  for (const [key, peer] of cabling) {
    const [a, b] = planOrder(topology, names, addressOf(key), peer);
    if (fabricPortKey(a.nodeGuid, a.port) !== key) continue;
    rows.push({ ends: [a, b], rate: rateText(readings.get(key) ?? readings.get(fabricPortKey(peer.nodeGuid, peer.port))) });
  }
  rows.sort((x, y) => compareNames(names.get(x.ends[0].nodeGuid)!, names.get(y.ends[0].nodeGuid)!) || x.ends[0].port - y.ends[0].port);
  const token = (guid: string): string => (names.get(guid) === guid ? guid : planToken(names.get(guid)!));
  const table = rows.map(({ ends: [a, b], rate }) => [token(a.nodeGuid), String(a.port), token(b.nodeGuid), String(b.port), rate]);
  const widths = [0, 1, 2, 3].map((column) => Math.max(0, ...table.map((row) => row[column]!.length)));
  const counts = countTypes(topology.nodes.values());
  const header = [
    `# Cabling plan of an InfiniBand fabric${savedAt ? `, saved ${savedAt.toISOString()}` : ''} by infiniband-exporter topology save:`,
    `# ${counts.switch} switches, ${counts.ca} CAs${counts.router > 0 ? `, ${counts.router} routers` : ''}, ${rows.length} cables.`,
    '# One cable a line: <node> <port> <peer node> <peer port> [width] [speed]; a node by its',
    '# node-name-map name, else its NodeDescription (in double quotes when it has spaces), else its GUID.',
    ...(byGuid.shared + byGuid.nameless > 0 ? [`# ${planNamesByGuid(byGuid)}.`] : []),
    '# Use it as --fabric.topology-file: the exporter then reports every cable that is not as written here.',
    '',
  ];
  const lines = table.map((row) =>
    row
      .map((cell, column) => (column < 4 && cell !== '' ? cell.padEnd(widths[column]!) : cell))
      .join('  ')
      .trimEnd(),
  );
  return `${[...header, ...lines].join('\n')}\n`;
}

/** "3 nodes by GUID, as no name is theirs alone: 2 share their NodeDescription with another node, 1 has none". */
export function planNamesByGuid(byGuid: PlanNames['byGuid']): string {
  const why = [
    byGuid.shared > 0 ? `${byGuid.shared} ${byGuid.shared === 1 ? 'shares its' : 'share their'} NodeDescription with another node` : '',
    byGuid.nameless > 0 ? `${byGuid.nameless} ${byGuid.nameless === 1 ? 'has' : 'have'} none` : '',
  ].filter(Boolean);
  const total = byGuid.shared + byGuid.nameless;
  return `${total} ${total === 1 ? 'node' : 'nodes'} by GUID, as no name is ${total === 1 ? 'its' : 'theirs'} alone: ${why.join(', ')}`;
}

function addressOf(key: string): PortAddress {
  const slash = key.lastIndexOf('/');
  return { nodeGuid: key.slice(0, slash), port: Number(key.slice(slash + 1)) };
}

function rateText(reading: FabricPortReading | undefined): string {
  if (!reading) return '';
  return [formatWidth(reading.width), reading.speed ?? ''].filter(Boolean).join(' ');
}

function countTypes(nodes: Iterable<FabricNode>): Record<FabricNodeType, number> {
  const counts: Record<FabricNodeType, number> = { switch: 0, ca: 0, router: 0 };
  for (const node of nodes) counts[node.type] += 1;
  return counts;
}
