// A fabric written as a cabling plan (`infiniband-exporter topology save FILE`).
import { normaliseGuid } from '../../model/guid.js';
import { formatWidth } from '../../model/link-rate.js';
import { compareNames, currentCabling } from '../../model/cabling.js';
import { fabricPortKey, type FabricNode, type FabricNodeType, type FabricPortReading, type FabricTopology, type PortAddress } from '../../model/fabric.js';

/** A name as a plan token: quoted when it has spaces, `#`, `"` or `\`, or could be read as a GUID or be empty. */
export function planToken(name: string): string {
  return /^[^\s#"\\]+$/.test(name) && !/^0x[0-9a-f]{1,16}$/i.test(name) ? name : `"${name.replace(/[\\"]/g, '\\$&')}"`;
}

/**
 * How `formatPlan` names each node: its node-name-map name, else its NodeDescription, else its
 * GUID, whichever names it alone (two nodes with one NodeDescription, say "MT4129 ConnectX7
 * Mellanox Technologies" before rdma-ndd set the hostname, are written by GUID).
 */
export function planNames(topology: FabricTopology): Map<string, string> {
  const candidates = new Map<string, string>();
  for (const node of topology.nodes.values()) {
    const description = node.description.trim();
    candidates.set(node.guid, node.name || (description !== '' && normaliseGuid(description) === undefined ? description : node.guid));
  }
  const uses = new Map<string, number>();
  for (const name of candidates.values()) uses.set(name, (uses.get(name) ?? 0) + 1);
  // A NodeDescription that is also another node's map name would resolve to that node.
  const mapNames = new Set([...topology.nodes.values()].map((node) => node.name).filter(Boolean));
  for (const [guid, name] of candidates) {
    const node = topology.nodes.get(guid)!;
    if (uses.get(name)! > 1 || (name !== node.name && mapNames.has(name))) candidates.set(guid, guid);
  }
  return candidates;
}

/** The end a plan line starts with: a switch before a CA, then the name first in natural order, then the lower port. */
function planOrder(topology: FabricTopology, names: ReadonlyMap<string, string>, a: PortAddress, b: PortAddress): [PortAddress, PortAddress] {
  const rank = (end: PortAddress): number => (topology.nodes.get(end.nodeGuid)?.type === 'switch' ? 0 : 1);
  const order = rank(a) - rank(b) || compareNames(names.get(a.nodeGuid) ?? a.nodeGuid, names.get(b.nodeGuid) ?? b.nodeGuid) || a.port - b.port;
  return order <= 0 ? [a, b] : [b, a];
}

/**
 * Today's fabric as a cabling plan (`infiniband-exporter topology save FILE`): every cable once,
 * its switch end first, sorted by node name (naturally) and port, with the width and speed it
 * trained at when `readings` (a ports cycle) has them. Parsing the text back and comparing it with
 * the same fabric finds nothing.
 */
export function formatPlan(topology: FabricTopology, readings: ReadonlyMap<string, FabricPortReading> = new Map(), savedAt?: Date): string {
  const names = planNames(topology);
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
    '# Use it as --fabric.topology-file: the exporter then reports every cable that is not as written here.',
    '',
  ];
  const lines = table.map((row) => row.map((cell, column) => (column < 4 && cell !== '' ? cell.padEnd(widths[column]!) : cell)).join('  ').trimEnd());
  return `${[...header, ...lines].join('\n')}\n`;
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
