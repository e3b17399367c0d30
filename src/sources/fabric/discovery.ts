// Discovery: one `ibnetdiscover --cache FILE` run. Its text gives the nodes and cables, the cache
// file it writes gives every port (unconnected switch ports too) with what it enables. The cache
// is kept for the ports cycle's counter sweeps (ibqueryerrors --load-cache), so that they do not
// discover the fabric again.
import { readFile } from 'node:fs/promises';
import { atOnce, inSlices, pacer, type Work } from '../../event-loop/time-slices.js';
import { fabricPortKey, type DiscoveredPort, type FabricNode, type FabricTopology } from '../../model/fabric.js';
import { PortTable } from '../../model/port-table.js';
import type { LineParser } from '../output-lines.js';
import { commandItem, type FabricCycle } from './commands.js';
import {
  CacheFormatError,
  cachedPortsOf,
  parseDiscoveryCacheSteps,
  type CachedNode,
  type CachedPort,
  type DiscoveryCache,
} from './discovery-cache.js';
import { IbnetdiscoverParser, reportedDuplicateGuids, type IbnetdiscoverTopology } from './ibnetdiscover.js';

/**
 * The cache file of a discovery, for the counter sweeps; absent when it could not be read. Its
 * nodes are kept, not its ports nor its bytes: at 122 880 switch ports those were 150 000 records
 * with their byte ranges, peers and GUIDs (40 MiB), and the bytes 21 MiB, kept for the life of the
 * topology, for a pruning that reads the file and parses it again (`parseDiscoveryCacheSteps`) on
 * the rare cycle it writes a new one. The file stays until the discovery after the next.
 */
export interface TopologyCache {
  file: string;
  nodes: readonly CachedNode[];
}

export interface Discovery {
  topology: FabricTopology;
  cache: TopologyCache | undefined;
  /**
   * The output held the whole fabric: every line understood, every cable listed from both ends,
   * every node of the cache file described. When not, the reasons are recorded as read errors
   * and the cycle has failed; the caller keeps the previous topology if it has one.
   */
  complete: boolean;
  /** The command's item, for the caller's own verdicts on this discovery. */
  item: string;
  /** ibnetdiscover's output as printed (`topology save --format ibnetdiscover` writes it); '' when not kept. */
  text: string;
}

/** The item of the discovery cache file's errors (its path changes with each discovery). */
const CACHE_ITEM = 'ibnetdiscover cache file';

/** Every line handed to a parser, also kept: the output as printed. */
class KeptText<Result> implements LineParser<Result> {
  private readonly lines: string[] = [];

  constructor(private readonly parser: LineParser<Result>) {}

  push(line: string): void {
    this.lines.push(line);
    this.parser.push(line);
  }

  end(): Result {
    return this.parser.end();
  }

  get text(): string {
    return this.lines.join('\n');
  }
}

/**
 * Discover the fabric; undefined when ibnetdiscover failed or printed no node (the caller keeps
 * the previous topology). `names` is the node-name-map. The output is parsed as it arrives, and
 * the topology built from it in time slices: at 120 000 switch ports each is seconds of work.
 * `keepText`: keep the output as printed (`topology save`), megabytes that a server does not need.
 */
export async function discoverFabric(
  cycle: FabricCycle,
  cacheFile: string,
  names: ReadonlyMap<string, string>,
  now: number,
  keepText = true,
): Promise<Discovery | undefined> {
  const parser = keepText ? new KeptText(new IbnetdiscoverParser()) : new IbnetdiscoverParser();
  const result = await cycle.run('ibnetdiscover', ['--cache', cacheFile], undefined, parser);
  if (!result) return undefined;
  const item = commandItem(result);
  const text = parser.end();
  cycle.unparsed(result, text.unparsed);
  if (text.nodes.length === 0) {
    cycle.fail(item, 'no node in the output; keeping the previous topology');
    return undefined;
  }
  cycle.covers((other) => other === CACHE_ITEM);
  let cache: TopologyCache | undefined;
  let parsed: DiscoveryCache | undefined;
  let bytes: Uint8Array | undefined;
  try {
    bytes = await readFile(cacheFile);
    // Its nodes now, its ports one at a time as the topology takes them up.
    parsed = await inSlices(parseDiscoveryCacheSteps(bytes, false));
    cache = { file: cacheFile, nodes: parsed.nodes };
  } catch (error) {
    // The topology from the text stands; only the enabled rates and the cached sweeps are lost.
    const reason = error instanceof CacheFormatError ? error.message : (error as Error).message;
    cycle.note(CACHE_ITEM, `not usable (${reason}): no enabled widths/speeds, counter sweeps discover on their own`);
  }
  const gaps = await inSlices(discoveryGapsSteps(text, parsed));
  if (gaps.length > 0) cycle.fail(item, `the output is incomplete, cut short or garbled on its way: ${gaps.join('; ')}`);
  const withPorts = parsed && bytes && { nodes: parsed.nodes, ports: cachedPortsOf(bytes, parsed) };
  const topology = await inSlices(buildTopologySteps(text, withPorts, names, now, reportedDuplicateGuids(result.stderr)));
  // Each ports cycle looks ports up by port GUID: made once per topology, here.
  await inSlices(nodesByPortGuidSteps(topology));
  return {
    topology,
    cache,
    complete: gaps.length === 0 && text.unparsed.count === 0,
    item,
    text: parser instanceof KeptText ? parser.text : '',
  };
}

/**
 * What the text of a discovery lacks, as sentences; empty when it is whole. ibnetdiscover prints
 * no end marker, so what its output must hold is checked instead: each node's record lists its
 * connected ports, so every cable appears from both ends; and the cache file, written after the
 * text and checked byte by byte when parsed, holds every node the tool found.
 */
export function discoveryGaps(text: IbnetdiscoverTopology, cache: DiscoveryCache | undefined): string[] {
  return atOnce(discoveryGapsSteps(text, cache));
}

/** The same, as work that may pause. */
export function* discoveryGapsSteps(text: IbnetdiscoverTopology, cache: DiscoveryCache | undefined): Work<string[]> {
  const pace = pacer();
  const gaps: string[] = [];
  const cables = new Map<string, string>();
  for (const port of text.ports) {
    cables.set(fabricPortKey(port.nodeGuid, port.port), fabricPortKey(port.peer.nodeGuid, port.peer.port));
    if (pace()) yield;
  }
  const described = new Set(text.nodes.map((node) => node.guid));
  const oneSided: IbnetdiscoverTopology['ports'] = [];
  for (const port of text.ports) {
    if (cables.get(fabricPortKey(port.peer.nodeGuid, port.peer.port)) !== fabricPortKey(port.nodeGuid, port.port)) oneSided.push(port);
    if (pace()) yield;
  }
  if (oneSided.length > 0) {
    const first = oneSided[0]!;
    const why = described.has(first.peer.nodeGuid) ? 'which does not list it' : 'a node the output never describes';
    gaps.push(
      `${oneSided.length === 1 ? 'a cable is' : `${oneSided.length} cables are`} listed from one end only (first: port ${first.port} of ${first.nodeGuid} to port ${first.peer.port} of ${first.peer.nodeGuid}, ${why})`,
    );
  }
  const missing = cache?.nodes.filter((node) => !described.has(node.guid)) ?? [];
  if (missing.length > 0) {
    gaps.push(
      `it describes ${described.size} of the ${cache!.nodes.length} nodes of the cache file ibnetdiscover wrote (first missing: ${missing[0]!.guid})`,
    );
  }
  return gaps;
}

/** What the topology takes of a cache file: its ports, gone through once (a parse's, or `cachedPortsOf`). */
export interface TopologyPorts {
  ports: Iterable<CachedPort>;
}

/** The topology from ibnetdiscover's text, completed by its cache file when there is one. */
export function buildTopology(
  text: IbnetdiscoverTopology,
  cache: TopologyPorts | undefined,
  names: ReadonlyMap<string, string>,
  now: number,
  reportedDuplicates: readonly string[] = [],
): FabricTopology {
  return atOnce(buildTopologySteps(text, cache, names, now, reportedDuplicates));
}

/** The same, as work that may pause. */
export function* buildTopologySteps(
  text: IbnetdiscoverTopology,
  cache: TopologyPorts | undefined,
  names: ReadonlyMap<string, string>,
  now: number,
  reportedDuplicates: readonly string[] = [],
): Work<FabricTopology> {
  const pace = pacer();
  const nodes = new Map<string, FabricNode>();
  const duplicateGuids = new Set<string>(reportedDuplicates);
  for (const node of text.nodes) {
    if (nodes.has(node.guid)) duplicateGuids.add(node.guid);
    nodes.set(node.guid, {
      guid: node.guid,
      type: node.type,
      description: node.description,
      name: names.get(node.guid),
      lid: node.lid,
      portCount: node.portCount,
      vendorId: node.vendorId,
      deviceId: node.deviceId,
    });
    if (pace()) yield;
  }

  // As columns: a shard keeps the whole fabric's topology (docs/benchmarks.md, "eighth pass").
  const ports = new PortTable();
  // How many port numbers a node has room for in the table: its NumPorts and port 0.
  const room = (node: FabricNode | undefined): number => (node?.portCount ?? 0) + 1;
  const switchPortGuids = new Map(text.nodes.filter((node) => node.portGuid !== undefined).map((node) => [node.guid, node.portGuid]));
  // Who claims each far end: two local ports with the same peer mean two devices share its GUID.
  const peerClaims = new Map<string, string>();
  for (const port of text.ports) {
    const key = fabricPortKey(port.nodeGuid, port.port);
    const peerKey = fabricPortKey(port.peer.nodeGuid, port.peer.port);
    const claimant = peerClaims.get(peerKey);
    if (claimant !== undefined && claimant !== key) duplicateGuids.add(port.peer.nodeGuid);
    peerClaims.set(peerKey, key);
    const node = nodes.get(port.nodeGuid);
    ports.set(
      {
        nodeGuid: port.nodeGuid,
        port: port.port,
        portGuid: port.portGuid ?? switchPortGuids.get(port.nodeGuid),
        lid: port.lid,
        peer: port.peer,
        enabled: undefined,
      },
      room(node),
    );
    // A CA or router answers at the LID of its first port that has one.
    // (Set in place: the node is this build's own object, not shared yet.)
    if (node && node.lid === undefined && port.lid !== undefined && port.lid > 0) node.lid = port.lid;
    if (pace()) yield;
  }

  if (cache) {
    const portOwners = new Map<string, string>();
    for (const cached of cache.ports) {
      // Ports of one node share nothing but a switch's port GUID; anything else claimed twice is a duplicate.
      const owner = portOwners.get(cached.guid);
      if (owner !== undefined && owner !== cached.nodeGuid) duplicateGuids.add(cached.guid);
      portOwners.set(cached.guid, cached.nodeGuid);
      const node = nodes.get(cached.nodeGuid);
      if (cached.port === 0 || !node) continue;
      // A port the text listed gets its enabled rates in place.
      if (!ports.enable(cached.nodeGuid, cached.port, cached.enabled))
        ports.set(
          { nodeGuid: cached.nodeGuid, port: cached.port, portGuid: cached.guid, lid: undefined, peer: undefined, enabled: cached.enabled },
          room(node),
        );
      if (pace()) yield;
    }
  }

  ports.seal();
  return { nodes, ports, duplicateGuids: duplicateGuids.size, duplicateLids: yield* countDuplicateLids(nodes, ports), discoveredAt: now };
}

/** LIDs held by more than one port: a switch holds one for all its ports, a CA port its own. */
function* countDuplicateLids(nodes: ReadonlyMap<string, FabricNode>, ports: ReadonlyMap<string, DiscoveredPort>): Work<number> {
  const pace = pacer();
  const owners = new Map<number, Set<string>>();
  const claim = (lid: number | undefined, owner: string): void => {
    if (lid === undefined || lid === 0) return;
    let set = owners.get(lid);
    if (!set) owners.set(lid, (set = new Set()));
    set.add(owner);
  };
  for (const node of nodes.values()) if (node.type === 'switch') claim(node.lid, node.guid);
  for (const port of ports.values()) {
    if (nodes.get(port.nodeGuid)?.type !== 'switch') claim(port.lid, port.portGuid ?? fabricPortKey(port.nodeGuid, port.port));
    if (pace()) yield;
  }
  return [...owners.values()].filter((set) => set.size > 1).length;
}

const portGuidIndex = new WeakMap<FabricTopology, ReadonlyMap<string, string>>();

/**
 * Port GUID (as iblinkinfo and ibqueryerrors print it) → node GUID, for every port of the
 * topology; made once per topology.
 */
export function nodesByPortGuid(topology: FabricTopology): ReadonlyMap<string, string> {
  return atOnce(nodesByPortGuidSteps(topology));
}

/** The same, as work that may pause. */
export function* nodesByPortGuidSteps(topology: FabricTopology): Work<ReadonlyMap<string, string>> {
  const known = portGuidIndex.get(topology);
  if (known) return known;
  const pace = pacer();
  const byPort = new Map<string, string>();
  for (const node of topology.nodes.values()) byPort.set(node.guid, node.guid);
  for (const port of topology.ports.values()) {
    if (port.portGuid !== undefined) byPort.set(port.portGuid, port.nodeGuid);
    if (pace()) yield;
  }
  portGuidIndex.set(topology, byPort);
  return byPort;
}
