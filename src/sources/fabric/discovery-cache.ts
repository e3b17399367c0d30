// The cache file `ibnetdiscover --cache FILE` writes (rdma-core libibnetdisc/ibnetdisc_cache.c,
// format version 1, little-endian): a header, one record per node, one record per port. Each port
// record holds the port's raw PortInfo, which is where the widths and speeds a port *enables* are
// (the text output has only the active ones). The same file is handed to ibqueryerrors
// (--load-cache) so that its counter sweeps skip a discovery of their own; for a shard, or when
// switches vanished since discovery, a pruned copy is written with `pruneDiscoveryCache`.
import { decodeEnabledRates, PORT_INFO_BYTES } from '../../model/port-info.js';
import { sharedGuid } from '../../model/guid.js';
import type { EnabledRates } from '../../model/link-rate.js';
import { atOnce, pacer, type Work } from '../../event-loop/time-slices.js';

export const CACHE_MAGIC = 0x8fe7832b;
export const CACHE_VERSION = 1;

const HEADER_BYTES = 28;
const SMP_DATA_BYTES = 64;
/** smalid(2) smalmc(1) smaenhsp0(1) switchinfo(64) guid(8) type(1) numports(1) info(64) nodedesc(64) ports-stored(1). */
const NODE_HEADER_BYTES = 15 + SMP_DATA_BYTES * 3;
const PORT_KEY_BYTES = 9;
/** guid(8) portnum(1) ext portnum(1) base lid(2) lmc(1) info(64) node guid(8) remote flag(1) remote guid(8) remote port(1). */
const PORT_RECORD_BYTES = 31 + SMP_DATA_BYTES;
const NODE_TYPES: Readonly<Record<number, CachedNode['type']>> = { 1: 'ca', 2: 'switch', 3: 'router' };

export interface CachedNode {
  guid: string;
  type: 'ca' | 'switch' | 'router' | undefined;
  portCount: number;
  /** A switch's LID (its management port 0). */
  lid: number;
  /** Byte range [start, end) of the whole record, ports list included (for pruning): two numbers, not a pair (an array each, 1.2 MiB for 26 000 nodes). */
  start: number;
  end: number;
}

export interface CachedPort {
  guid: string;
  port: number;
  nodeGuid: string;
  lid: number;
  enabled: EnabledRates | undefined;
  peer: { guid: string; port: number } | undefined;
  start: number;
  end: number;
}

export interface DiscoveryCache {
  fromNodeGuid: string;
  nodes: CachedNode[];
  ports: CachedPort[];
}

export class CacheFormatError extends Error {
  override readonly name = 'CacheFormatError';
}

function hexGuid(view: DataView, offset: number): string {
  return sharedGuid(`0x${view.getBigUint64(offset, true).toString(16).padStart(16, '0')}`);
}

/** Parse a cache file; throws CacheFormatError naming what is wrong (unknown magic or version, truncation). */
export function parseDiscoveryCache(bytes: Uint8Array): DiscoveryCache {
  return atOnce(parseDiscoveryCacheSteps(bytes));
}

/**
 * The same, as work that may pause (a 120 000-port fabric's cache holds 150 000 port records).
 * Without `withPorts`, the port records are checked for their number and size but not read
 * (`ports` is empty; `cachedPortsOf` reads them).
 */
export function* parseDiscoveryCacheSteps(bytes: Uint8Array, withPorts = true): Work<DiscoveryCache> {
  const pace = pacer();
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const need = (offset: number, length: number, what: string): void => {
    if (offset + length > bytes.byteLength)
      throw new CacheFormatError(`truncated at byte ${offset}: ${what} needs ${length} bytes, ${bytes.byteLength - offset} left`);
  };
  need(0, HEADER_BYTES, 'the header');
  const magic = view.getUint32(0, true);
  if (magic !== CACHE_MAGIC)
    throw new CacheFormatError(`not an ibnetdiscover cache (magic 0x${magic.toString(16)}, expected 0x${CACHE_MAGIC.toString(16)})`);
  const version = view.getUint32(4, true);
  if (version !== CACHE_VERSION)
    throw new CacheFormatError(`unknown ibnetdiscover cache version ${version} (this exporter reads version ${CACHE_VERSION})`);
  const nodeCount = view.getUint32(8, true);
  const portCount = view.getUint32(12, true);
  const fromNodeGuid = hexGuid(view, 16);

  let offset = HEADER_BYTES;
  const nodes: CachedNode[] = [];
  for (let i = 0; i < nodeCount; i++) {
    const start = offset;
    need(offset, NODE_HEADER_BYTES, `node ${i}`);
    const lid = view.getUint16(offset, true);
    const guidOffset = offset + 4 + SMP_DATA_BYTES;
    const guid = hexGuid(view, guidOffset);
    const type = NODE_TYPES[bytes[guidOffset + 8]!];
    const portCountOfNode = bytes[guidOffset + 9]!;
    const stored = bytes[offset + NODE_HEADER_BYTES - 1]!;
    offset += NODE_HEADER_BYTES;
    need(offset, stored * PORT_KEY_BYTES, `the port list of node ${guid}`);
    offset += stored * PORT_KEY_BYTES;
    nodes.push({ guid, type, portCount: portCountOfNode, lid, start, end: offset });
    if (pace()) yield;
  }
  checkPortRecords(bytes, offset, portCount);
  if (!withPorts) return { fromNodeGuid, nodes, ports: [] };
  const ports: CachedPort[] = [];
  for (const port of cachedPorts(bytes, offset, portCount)) {
    ports.push(port);
    if (pace()) yield;
  }
  return { fromNodeGuid, nodes, ports };
}

/** That `bytes` hold `count` port records from `start` and nothing after them; throws CacheFormatError saying where not. */
function checkPortRecords(bytes: Uint8Array, start: number, count: number): void {
  const end = start + count * PORT_RECORD_BYTES;
  if (end > bytes.byteLength) {
    const offset = start + Math.floor((bytes.byteLength - start) / PORT_RECORD_BYTES) * PORT_RECORD_BYTES;
    const index = (offset - start) / PORT_RECORD_BYTES;
    throw new CacheFormatError(
      `truncated at byte ${offset}: port ${index} needs ${PORT_RECORD_BYTES} bytes, ${bytes.byteLength - offset} left`,
    );
  }
  if (end !== bytes.byteLength) throw new CacheFormatError(`${bytes.byteLength - end} bytes after the last port record`);
}

/**
 * The port records of a cache whose nodes were parsed (`parseDiscoveryCacheSteps(bytes, false)`),
 * made one at a time as they are taken: discovery goes through them once, and at 122 880 switch
 * ports the 150 000 of them held at once were 27 MiB. Throws CacheFormatError if the bytes do not
 * end with the header's number of port records.
 */
export function cachedPortsOf(bytes: Uint8Array, cache: { nodes: readonly CachedNode[] }): Iterable<CachedPort> {
  const start = cache.nodes.at(-1)?.end ?? HEADER_BYTES;
  const count = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(12, true);
  checkPortRecords(bytes, start, count);
  return cachedPorts(bytes, start, count);
}

function* cachedPorts(bytes: Uint8Array, start: number, count: number): Generator<CachedPort, void, undefined> {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  // One object per set of enabled rates, shared by every port that has it (the topology keeps
  // them): a fabric has a handful of sets for 150 000 ports.
  const rateSets = new Map<string, EnabledRates>();
  const sharedRates = (info: Uint8Array): EnabledRates | undefined => {
    const rates = decodeEnabledRates(info);
    if (rates === undefined) return undefined;
    const key = `${rates.widthEnabled.join()}/${rates.speedEnabled.join()}`;
    const known = rateSets.get(key);
    if (known !== undefined) return known;
    rateSets.set(key, rates);
    return rates;
  };
  for (let i = 0, offset = start; i < count; i++, offset += PORT_RECORD_BYTES) {
    const info = bytes.subarray(offset + 13, offset + 13 + PORT_INFO_BYTES);
    const tail = offset + 13 + PORT_INFO_BYTES;
    yield {
      guid: hexGuid(view, offset),
      port: bytes[offset + 8]!,
      lid: view.getUint16(offset + 10, true),
      enabled: sharedRates(info),
      nodeGuid: hexGuid(view, tail),
      peer: bytes[tail + 8] ? { guid: hexGuid(view, tail + 9), port: bytes[tail + 17]! } : undefined,
      start: offset,
      end: offset + PORT_RECORD_BYTES,
    };
  }
}

/**
 * A copy of the cache with only the nodes `keep` accepts (and the node discovery started from,
 * which libibnetdisc requires), their ports, and no cable to a node left out: the counter sweeps
 * then query only those nodes. The ports are read from the bytes as they are copied, not parsed
 * into records first (150 000 of them at 122 880 switch ports, 27 MiB): `cache` needs only the
 * nodes of a parse of the same bytes.
 */
export function pruneDiscoveryCache(
  bytes: Uint8Array,
  cache: { nodes: readonly CachedNode[] },
  keep: (node: CachedNode) => boolean,
): Uint8Array {
  return atOnce(pruneDiscoveryCacheSteps(bytes, cache, keep));
}

/** The same, as work that may pause. */
export function* pruneDiscoveryCacheSteps(
  bytes: Uint8Array,
  cache: { nodes: readonly CachedNode[] },
  keep: (node: CachedNode) => boolean,
): Work<Uint8Array> {
  const pace = pacer();
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const fromNodeGuid = view.getBigUint64(16, true);
  const portCount = view.getUint32(12, true);
  // Node records follow the header back to back; port records follow them.
  const portsStart = cache.nodes.at(-1)?.end ?? HEADER_BYTES;
  checkPortRecords(bytes, portsStart, portCount);
  const nodes = cache.nodes.filter((node) => BigInt(node.guid) === fromNodeGuid || keep(node));
  const kept = new Set(nodes.map((node) => BigInt(node.guid)));
  // Port records of the kept nodes, and their ends (GUID and port number: a switch's ports all carry its GUID).
  const keptRecords: number[] = [];
  const keptEnds = new Set<bigint>();
  const tailOf = (offset: number): number => offset + 13 + PORT_INFO_BYTES;
  for (let i = 0, offset = portsStart; i < portCount; i++, offset += PORT_RECORD_BYTES) {
    if (!kept.has(view.getBigUint64(tailOf(offset), true))) continue;
    keptRecords.push(offset);
    keptEnds.add((view.getBigUint64(offset, true) << 8n) | BigInt(bytes[offset + 8]!));
    if (pace()) yield;
  }
  const size = HEADER_BYTES + nodes.reduce((sum, node) => sum + node.end - node.start, 0) + keptRecords.length * PORT_RECORD_BYTES;
  const out = new Uint8Array(size);
  const outView = new DataView(out.buffer);
  out.set(bytes.subarray(0, HEADER_BYTES), 0);
  outView.setUint32(8, nodes.length, true);
  outView.setUint32(12, keptRecords.length, true);
  let offset = HEADER_BYTES;
  for (const node of nodes) {
    out.set(bytes.subarray(node.start, node.end), offset);
    offset += node.end - node.start;
  }
  for (const record of keptRecords) {
    out.set(bytes.subarray(record, record + PORT_RECORD_BYTES), offset);
    const tail = tailOf(record);
    const remoteEnd = (view.getBigUint64(tail + 9, true) << 8n) | BigInt(bytes[tail + 17]!);
    if (bytes[tail + 8] && !keptEnds.has(remoteEnd)) out.fill(0, tailOf(offset) + 8, tailOf(offset) + 18);
    offset += PORT_RECORD_BYTES;
    if (pace()) yield;
  }
  return out;
}
