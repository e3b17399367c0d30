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
  /** Byte range of the whole record, ports list included (for pruning). */
  range: [number, number];
}

export interface CachedPort {
  guid: string;
  port: number;
  nodeGuid: string;
  lid: number;
  enabled: EnabledRates | undefined;
  peer: { guid: string; port: number } | undefined;
  range: [number, number];
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

/** The same, as work that may pause (a 120 000-port fabric's cache holds 150 000 port records). */
export function* parseDiscoveryCacheSteps(bytes: Uint8Array): Work<DiscoveryCache> {
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
    nodes.push({ guid, type, portCount: portCountOfNode, lid, range: [start, offset] });
    if (pace()) yield;
  }
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
  const ports: CachedPort[] = [];
  for (let i = 0; i < portCount; i++) {
    need(offset, PORT_RECORD_BYTES, `port ${i}`);
    const info = bytes.subarray(offset + 13, offset + 13 + PORT_INFO_BYTES);
    const tail = offset + 13 + PORT_INFO_BYTES;
    ports.push({
      guid: hexGuid(view, offset),
      port: bytes[offset + 8]!,
      lid: view.getUint16(offset + 10, true),
      enabled: sharedRates(info),
      nodeGuid: hexGuid(view, tail),
      peer: bytes[tail + 8] ? { guid: hexGuid(view, tail + 9), port: bytes[tail + 17]! } : undefined,
      range: [offset, offset + PORT_RECORD_BYTES],
    });
    offset += PORT_RECORD_BYTES;
    if (pace()) yield;
  }
  if (offset !== bytes.byteLength) throw new CacheFormatError(`${bytes.byteLength - offset} bytes after the last port record`);
  return { fromNodeGuid, nodes, ports };
}

/**
 * A copy of the cache with only the nodes `keep` accepts (and the node discovery started from,
 * which libibnetdisc requires), their ports, and no cable to a node left out: the counter sweeps
 * then query only those nodes.
 */
export function pruneDiscoveryCache(bytes: Uint8Array, cache: DiscoveryCache, keep: (node: CachedNode) => boolean): Uint8Array {
  return atOnce(pruneDiscoveryCacheSteps(bytes, cache, keep));
}

/** The same, as work that may pause. */
export function* pruneDiscoveryCacheSteps(bytes: Uint8Array, cache: DiscoveryCache, keep: (node: CachedNode) => boolean): Work<Uint8Array> {
  const pace = pacer();
  const kept = new Set(cache.nodes.filter((node) => node.guid === cache.fromNodeGuid || keep(node)).map((node) => node.guid));
  const nodes = cache.nodes.filter((node) => kept.has(node.guid));
  const ports = cache.ports.filter((port) => kept.has(port.nodeGuid));
  // A switch's ports all carry its GUID, so a cable end is found by GUID and port number.
  const keptPorts = new Set<string>();
  for (const port of ports) {
    keptPorts.add(`${port.guid}/${port.port}`);
    if (pace()) yield;
  }
  const size = HEADER_BYTES + nodes.reduce((sum, node) => sum + node.range[1] - node.range[0], 0) + ports.length * PORT_RECORD_BYTES;
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  out.set(bytes.subarray(0, HEADER_BYTES), 0);
  view.setUint32(8, nodes.length, true);
  view.setUint32(12, ports.length, true);
  let offset = HEADER_BYTES;
  for (const node of nodes) {
    out.set(bytes.subarray(...node.range), offset);
    offset += node.range[1] - node.range[0];
  }
  for (const port of ports) {
    out.set(bytes.subarray(...port.range), offset);
    const remoteFlag = offset + 13 + PORT_INFO_BYTES + 8;
    if (port.peer && !keptPorts.has(`${port.peer.guid}/${port.peer.port}`)) out.fill(0, remoteFlag, remoteFlag + 10);
    offset += PORT_RECORD_BYTES;
    if (pace()) yield;
  }
  return out;
}
