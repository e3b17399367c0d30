// The cabling plan (--fabric.topology-file): the fabric as it should be, in one of two formats.
//
//   plan           one cable a line, `<node> <port> <peer node> <peer port> [width] [speed]`:
//                    # rail 0, leaf 1
//                    rail0-leaf1   1  "gpu01 mlx5_0"  1  4X HDR
//                    rail0-leaf1   4  spine-1         1
//                    0x0002c90200700001 5 0x0002c90200600002 1 4xHDR
//                  A node is a GUID (unquoted, `0x` + hex digits), or a name: its node-name-map name,
//                  else its NodeDescription. A name with spaces, `#`, `"` or `\`, or one that looks
//                  like a GUID, is written in double quotes (`\"` and `\\` inside). Ports are 1–255.
//                  Width `1X 2X 4X 8X 12X` (or the bare number), speed `SDR … XDR`, in either order
//                  or together as ibnetdiscover prints them (`4xHDR`); both optional. `#` starts a
//                  comment outside quotes; blank lines are ignored.
//   ibnetdiscover  a saved `ibnetdiscover` output (a known-good discovery): every cable of it, the
//                  width and speed it trained at as the plan's.
//
// Reading a plan has two steps. `parsePlan` checks the text alone (a malformed line, a port cabled
// twice, an unknown width or speed): every error is the user's, with its line, and the exporter
// refuses the file (exit 2 at start and in `check`; a reload keeps the previous plan). `resolvePlan`
// names each plan node's GUID in a discovered fabric: GUIDs stand for themselves, names go through
// the node-name-map, then the fabric's NodeDescriptions. A name that resolves to no node (not a GUID,
// not in the node-name-map, no node with that NodeDescription) or to several is an error at start,
// in `check` and on reload — a typo must not pass for a missing host. A node named by GUID or
// node-name-map name that the fabric does not have is no error: it is counted in
// infiniband_fabric_plan_nodes_missing and its cables have no link. Once resolved, a NodeDescription
// stays bound to its GUID (`bindings`), so a host that powers off later is missing, not unknown.
//
// `formatPlan` writes a fabric as a plan (`infiniband-exporter topology save FILE`).
import { normaliseGuid } from '../../model/guid.js';
import { formatWidth, parseLinkSpeed, parseLinkWidth, type LinkSpeed, type LinkWidth } from '../../model/link-rate.js';
import { compareNames, currentCabling, type CablingPlan, type PlanEnd, type PlanError, type PlanFormat, type PlanPort, type PlannedCable, type ResolvedCable, type ResolvedPlan } from '../../model/cabling.js';
import { fabricPortKey, type FabricNode, type FabricNodeType, type FabricPortReading, type FabricTopology, type PortAddress } from '../../model/fabric.js';
import { parseIbnetdiscover } from './ibnetdiscover.js';
import { unparsedExample } from '../unparsed-lines.js';

const PLAN_LINE = '"<node> <port> <peer node> <peer port> [width] [speed]"';

/**
 * A plan error as the one line a person reads (exit 2): `source` names where the file was given,
 * `--fabric.topology-file` or the config file's `fabric.topology_file`.
 * `--fabric.topology-file plan.txt:7: expected a port number 1–255 after "node-001", got "HCA-1" …`
 */
export function planErrorMessage(source: string, file: string, error: PlanError): string {
  return `${source} ${file}:${error.line}: ${error.message}`;
}

/** A parsed plan, or the errors that make it unusable (every one, in line order). */
export type ParsedPlan = { plan: CablingPlan; errors: [] } | { plan: undefined; errors: PlanError[] };

// An ibnetdiscover output has node records with its own ids ("S-<guid>"); a cabling plan never does.
const IBNETDISCOVER_RECORD = /^(?:(?:switch|ca|rt)guid=0x[0-9a-f]+|(?:Switch|Ca|Rt)\s+\d+\s+"[SHR]-[0-9a-f]{16}")/im;

/** Which format a plan file is in: an ibnetdiscover output when it has a node record, else a cabling plan. */
export function planFormat(text: string): PlanFormat {
  return IBNETDISCOVER_RECORD.test(text) ? 'ibnetdiscover' : 'plan';
}

/** Parse a plan file's text (either format; `file` is only kept for messages). */
export function parsePlan(text: string, file: string): ParsedPlan {
  return planFormat(text) === 'ibnetdiscover' ? parseIbnetdiscoverPlan(text, file) : parseCablingPlan(text, file);
}

// --- the cabling plan format -------------------------------------------------------------------------------

interface Token {
  text: string;
  quoted: boolean;
}

/** A line's fields: whitespace-separated, `"…"` with `\"` and `\\` inside, up to a `#` outside quotes. */
function tokenize(line: string): Token[] | string {
  const tokens: Token[] = [];
  let i = 0;
  while (i < line.length) {
    const c = line[i]!;
    if (c === ' ' || c === '\t' || c === '\r') {
      i++;
    } else if (c === '#') {
      break;
    } else if (c === '"') {
      let text = '';
      i++;
      for (;;) {
        if (i >= line.length) return 'a closing " for the quoted name';
        const q = line[i]!;
        if (q === '\\' && (line[i + 1] === '"' || line[i + 1] === '\\')) {
          text += line[i + 1];
          i += 2;
        } else if (q === '"') {
          i++;
          break;
        } else {
          text += q;
          i++;
        }
      }
      if (i < line.length && !/[ \t\r#]/.test(line[i]!)) return 'a space after the closing " of a quoted name';
      tokens.push({ text, quoted: true });
    } else {
      const start = i;
      while (i < line.length && !/[ \t\r#"]/.test(line[i]!)) i++;
      if (line[i] === '"') return `a space before the " after "${line.slice(start, i)}"`;
      tokens.push({ text: line.slice(start, i), quoted: false });
    }
  }
  return tokens;
}

function nodeRef(token: Token): PlanEnd['node'] {
  const guid = token.quoted || !/^0x[0-9a-f]{1,16}$/i.test(token.text) ? undefined : normaliseGuid(token.text);
  return { text: token.text, guid };
}

function portNumber(token: Token): number | undefined {
  if (token.quoted || !/^\d{1,3}$/.test(token.text)) return undefined;
  const port = Number(token.text);
  return port >= 1 && port <= 255 ? port : undefined;
}

/** Width and speed from the optional fields: `4X HDR`, `HDR 4X`, `4xHDR`, `4`, `HDR`. */
function linkRate(tokens: readonly Token[]): { width: LinkWidth | undefined; speed: LinkSpeed | undefined } | string {
  let width: LinkWidth | undefined;
  let speed: LinkSpeed | undefined;
  const expected = `a width (${['1X', '2X', '4X', '8X', '12X'].join(' ')}) and/or a speed (SDR DDR QDR FDR10 FDR EDR HDR NDR XDR)`;
  for (const token of tokens) {
    const combined = /^(\d{1,2})x([a-z0-9]+)$/i.exec(token.text);
    const widthText = combined?.[1] ?? /^(\d{1,2})x?$/i.exec(token.text)?.[1];
    const speedText = combined?.[2] ?? (widthText === undefined ? token.text : undefined);
    if (token.quoted) return `${expected}, got "${token.text}" in quotes`;
    if (widthText !== undefined) {
      const parsed = parseLinkWidth(Number(widthText));
      if (parsed === undefined || width !== undefined) return `${expected}, got "${token.text}"`;
      width = parsed;
    }
    if (speedText !== undefined) {
      const parsed = parseLinkSpeed(speedText);
      if (parsed === undefined || speed !== undefined) return `${expected}, got "${token.text}"`;
      speed = parsed;
    }
  }
  return { width, speed };
}

/** "port 12 of leaf07" for messages about the plan's text. */
const portText = (end: PlanEnd): string => `port ${end.port} of ${end.node.text}`;

/** The key of a plan end as written: a GUID, or the name (so `leaf07` and its GUID are told apart only by resolvePlan). */
const writtenKey = (end: PlanEnd): string => `${end.node.guid ?? `name:${end.node.text}`}/${end.port}`;

function parseCablingPlan(text: string, file: string): ParsedPlan {
  const cables: PlannedCable[] = [];
  const errors: PlanError[] = [];
  const seen = new Map<string, number>();
  text.split('\n').forEach((raw, index) => {
    const line = index + 1;
    const tokens = tokenize(raw);
    if (typeof tokens === 'string') {
      errors.push({ line, message: `expected ${tokens}` });
      return;
    }
    if (tokens.length === 0) return;
    if (tokens.length < 4 || tokens.length > 6) {
      errors.push({ line, message: `expected ${PLAN_LINE} (a node name with spaces in double quotes), got ${tokens.length} field${tokens.length === 1 ? '' : 's'}` });
      return;
    }
    const ends: PlanEnd[] = [];
    for (const [nodeToken, portToken] of [[tokens[0]!, tokens[1]!], [tokens[2]!, tokens[3]!]] as const) {
      const port = portNumber(portToken);
      if (nodeToken.text === '') {
        errors.push({ line, message: `expected a node (a GUID, a node-name-map name or a NodeDescription), got ""` });
        return;
      }
      if (port === undefined) {
        const hint = portToken.quoted ? ' in quotes' : /^\d+$/.test(portToken.text) ? '' : ' (a node name with spaces goes in double quotes)';
        errors.push({ line, message: `expected a port number 1–255 after "${nodeToken.text}", got "${portToken.text}"${hint}` });
        return;
      }
      ends.push({ node: nodeRef(nodeToken), port });
    }
    const rate = linkRate(tokens.slice(4));
    if (typeof rate === 'string') {
      errors.push({ line, message: `expected ${rate} after the ports` });
      return;
    }
    const [a, b] = ends as [PlanEnd, PlanEnd];
    if (writtenKey(a) === writtenKey(b)) {
      errors.push({ line, message: `expected two different ports, got ${portText(a)} at both ends` });
      return;
    }
    for (const end of ends) {
      const earlier = seen.get(writtenKey(end));
      if (earlier !== undefined) {
        errors.push({ line, message: `${portText(end)} is already cabled at line ${earlier}: expected each port in one cable at most` });
        return;
      }
    }
    for (const end of ends) seen.set(writtenKey(end), line);
    cables.push({ line, ends: [a, b], width: rate.width, speed: rate.speed });
  });
  if (errors.length > 0) return { plan: undefined, errors };
  return { plan: { file, format: 'plan', cables, nodes: new Map() }, errors: [] };
}

// --- a saved ibnetdiscover output ---------------------------------------------------------------------------

function parseIbnetdiscoverPlan(text: string, file: string): ParsedPlan {
  const parsed = parseIbnetdiscover(text);
  const errors: PlanError[] = [];
  // The parser returns the lines it did not understand in order: find their numbers.
  const lines = text.split('\n');
  let next = 0;
  for (const unparsed of parsed.unparsed.examples) {
    while (next < lines.length && unparsedExample(lines[next]!.trimEnd()) !== unparsed) next++;
    errors.push({ line: next + 1, message: `expected an ibnetdiscover line (a node record, or a port line such as [1] "S-0002c90200400000"[3] # "desc" lid 2 4xQDR), got "${unparsed.slice(0, 80)}"` });
    next++;
  }
  if (parsed.nodes.length === 0 && errors.length === 0) errors.push({ line: 1, message: 'expected a saved ibnetdiscover output with at least one node record' });

  const nodes = new Map<string, { type: FabricNodeType; description: string }>();
  for (const node of parsed.nodes) nodes.set(node.guid, { type: node.type, description: node.description });
  const typeOf = (guid: string, fallback: FabricNodeType): FabricNodeType => nodes.get(guid)?.type ?? fallback;
  const refOf = (guid: string): PlanEnd['node'] => ({ text: guid, guid });

  const cables: PlannedCable[] = [];
  // Every cable is printed from both of its ends: each port is in one cable, and both lines agree.
  const peers = new Map<string, { peer: string; line: number }>();
  for (const port of parsed.ports) {
    const key = fabricPortKey(port.nodeGuid, port.port);
    const peerKey = fabricPortKey(port.peer.nodeGuid, port.peer.port);
    const known = peers.get(key);
    const knownPeer = peers.get(peerKey);
    if ((known && known.peer !== peerKey) || (knownPeer && knownPeer.peer !== key)) {
      const earlier = known && known.peer !== peerKey ? known : knownPeer!;
      errors.push({ line: port.line, message: `port ${port.port} of ${port.nodeGuid} is cabled to port ${port.peer.port} of ${port.peer.nodeGuid} here, but line ${earlier.line} cables one of these ports elsewhere: expected each port in one cable at most` });
      continue;
    }
    if (known) continue;
    peers.set(key, { peer: peerKey, line: port.line });
    peers.set(peerKey, { peer: key, line: port.line });
    const here = { node: refOf(port.nodeGuid), port: port.port, type: typeOf(port.nodeGuid, 'switch') };
    const there = { node: refOf(port.peer.nodeGuid), port: port.peer.port, type: typeOf(port.peer.nodeGuid, port.peer.type) };
    // The switch end first, then the lower GUID: stable label order for the series.
    const rank = (end: typeof here): string => `${end.type === 'switch' ? 0 : 1}${end.node.text}/${String(end.port).padStart(3, '0')}`;
    const [a, b] = rank(here) <= rank(there) ? [here, there] : [there, here];
    cables.push({ line: port.line, ends: [{ node: a.node, port: a.port }, { node: b.node, port: b.port }], width: port.width, speed: port.speed });
  }
  if (errors.length > 0) return { plan: undefined, errors: errors.sort((x, y) => x.line - y.line) };
  return { plan: { file, format: 'ibnetdiscover', cables, nodes }, errors: [] };
}

// --- resolution against a fabric -----------------------------------------------------------------------------

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

// --- writing a fabric as a plan -----------------------------------------------------------------------------------

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
