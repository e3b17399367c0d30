// Where a job runs on the fabric: its hosts matched to the fabric's adapters, and its footprint,
// the links its traffic can take: each adapter's link to its switch, and every inter-switch link on
// a minimal-hop path between two of the leaves its hosts hang off (DESIGN.md "Congestion and
// jobs"). Computed on the topology as discovered (a cable that went down since stays in the
// footprints it was in), once per topology and job: `JobPlacement` keeps its indexes and
// footprints for as long as it is given the same topology.
import { fabricPortKey, type FabricTopology, type PortAddress, type Shard } from './fabric.js';
import type { Job } from './jobs.js';

/** One cable of a footprint. */
export interface FootprintLink {
  /** Its two port keys, sorted, joined by a space: one key per cable whichever end it is seen from. */
  key: string;
  /** `host`: an adapter's link; `switch`: an inter-switch link. */
  scope: 'host' | 'switch';
  /**
   * The end whose node's shard reports the link (the switch end of an adapter link, the lower port
   * key of an inter-switch link), so that the shards of a fabric count each link once.
   */
  owner: PortAddress;
  /** The other end. */
  peer: PortAddress;
}

export interface JobOnFabric {
  job: Job;
  /** The job's hosts that have an adapter on the fabric, and those that do not. */
  onFabric: readonly string[];
  notFound: readonly string[];
  /** The adapters' node GUIDs, each with its host. */
  adapters: ReadonlyMap<string, string>;
  links: readonly FootprintLink[];
}

/** The jobs collector's part: the running jobs placed on the fabric. */
export interface JobsPart {
  /** Where the jobs came from. */
  source: 'squeue' | 'file';
  /** Running jobs on at least --jobs.min-hosts hosts, placed on the topology. */
  jobs: readonly JobOnFabric[];
  shard: Shard;
}

/**
 * How a host name is found on the fabric, first match wins: the node-name-map name of an adapter,
 * the first word of its NodeDescription (rdma-ndd's `<hostname> <device>`; a fully qualified name's
 * first label too), the host `fabric.host_pattern` extracts from the NodeDescription (its first
 * capture group, else the whole match).
 */
export class HostIndex {
  private readonly byName = new Map<string, string[]>();
  private readonly byDescription = new Map<string, string[]>();
  private readonly byPattern = new Map<string, string[]>();

  constructor(topology: FabricTopology, hostPattern: RegExp | undefined) {
    const add = (index: Map<string, string[]>, host: string | undefined, guid: string) => {
      if (!host) return;
      const guids = index.get(host);
      if (!guids) index.set(host, [guid]);
      else if (!guids.includes(guid)) guids.push(guid);
    };
    for (const node of topology.nodes.values()) {
      if (node.type !== 'ca') continue;
      add(this.byName, node.name, node.guid);
      const first = node.description.trim().split(/\s+/)[0];
      add(this.byDescription, first, node.guid);
      if (first?.includes('.')) add(this.byDescription, first.split('.')[0], node.guid);
      if (hostPattern) {
        const match = hostPattern.exec(node.description);
        add(this.byPattern, match?.[1] ?? match?.[0], node.guid);
      }
    }
  }

  /** The adapters (node GUIDs) of a host; empty when it is not on the fabric. */
  adapters(host: string): readonly string[] {
    return this.byName.get(host) ?? this.byDescription.get(host) ?? this.byPattern.get(host) ?? [];
  }
}

interface SwitchEdge {
  port: number;
  peer: PortAddress;
}

/** Every switch's cables to other switches. */
function switchGraph(topology: FabricTopology): Map<string, SwitchEdge[]> {
  const graph = new Map<string, SwitchEdge[]>();
  const isSwitch = (guid: string) => topology.nodes.get(guid)?.type === 'switch';
  for (const port of topology.ports.values()) {
    if (!port.peer || !isSwitch(port.nodeGuid) || !isSwitch(port.peer.nodeGuid)) continue;
    let edges = graph.get(port.nodeGuid);
    if (!edges) graph.set(port.nodeGuid, (edges = []));
    edges.push({ port: port.port, peer: port.peer });
  }
  return graph;
}

function link(a: PortAddress, b: PortAddress, scope: FootprintLink['scope']): FootprintLink {
  const ka = fabricPortKey(a.nodeGuid, a.port);
  const kb = fabricPortKey(b.nodeGuid, b.port);
  const [owner, peer] = scope === 'host' ? [a, b] : ka < kb ? [a, b] : [b, a];
  return { key: ka < kb ? `${ka} ${kb}` : `${kb} ${ka}`, scope, owner, peer };
}

/** Inter-switch links on minimal-hop paths from `source` to each of `targets`: a breadth-first search, then back from each target along the edges that go one hop nearer. */
function minimalHopLinks(
  graph: Map<string, SwitchEdge[]>,
  source: string,
  targets: readonly string[],
  into: Map<string, FootprintLink>,
): void {
  const distance = new Map<string, number>([[source, 0]]);
  const queue = [source];
  for (let i = 0; i < queue.length; i++) {
    const node = queue[i]!;
    for (const edge of graph.get(node) ?? []) {
      if (distance.has(edge.peer.nodeGuid)) continue;
      distance.set(edge.peer.nodeGuid, distance.get(node)! + 1);
      queue.push(edge.peer.nodeGuid);
    }
  }
  const back = targets.filter((target) => distance.has(target));
  const visited = new Set(back);
  for (let i = 0; i < back.length; i++) {
    const node = back[i]!;
    const here = distance.get(node)!;
    for (const edge of graph.get(node) ?? []) {
      if (distance.get(edge.peer.nodeGuid) !== here - 1) continue;
      const found = link({ nodeGuid: node, port: edge.port }, edge.peer, 'switch');
      into.set(found.key, found);
      if (!visited.has(edge.peer.nodeGuid)) {
        visited.add(edge.peer.nodeGuid);
        back.push(edge.peer.nodeGuid);
      }
    }
  }
}

/** The footprint of a set of adapters on a topology. */
export function footprint(topology: FabricTopology, adapters: readonly string[], graph = switchGraph(topology)): FootprintLink[] {
  const links = new Map<string, FootprintLink>();
  const leaves = new Set<string>();
  for (const guid of adapters) {
    const node = topology.nodes.get(guid);
    if (!node) continue;
    for (let port = 1; port <= node.portCount; port++) {
      const peer = topology.ports.get(fabricPortKey(guid, port))?.peer;
      if (!peer) continue;
      // The switch end owns the link (a back-to-back cable between two adapters has none: either end).
      const found = link(peer, { nodeGuid: guid, port }, 'host');
      links.set(found.key, found);
      if (topology.nodes.get(peer.nodeGuid)?.type === 'switch') leaves.add(peer.nodeGuid);
    }
  }
  const ordered = [...leaves].sort();
  // Paths are symmetric: from each leaf to the leaves after it.
  for (const [i, leaf] of ordered.entries()) minimalHopLinks(graph, leaf, ordered.slice(i + 1), links);
  return [...links.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/** Jobs placed on one topology, each job's footprint computed once while the topology and its hosts stay the same. */
export class JobPlacement {
  private topology: FabricTopology | undefined;
  private index: HostIndex | undefined;
  private graph: Map<string, SwitchEdge[]> | undefined;
  private placed = new Map<string, JobOnFabric>();

  constructor(private readonly hostPattern: RegExp | undefined) {}

  place(topology: FabricTopology, jobs: readonly Job[]): JobOnFabric[] {
    if (topology !== this.topology) {
      this.topology = topology;
      this.index = new HostIndex(topology, this.hostPattern);
      this.graph = switchGraph(topology);
      this.placed = new Map();
    }
    const placed = new Map<string, JobOnFabric>();
    const result = jobs.map((job) => {
      const before = this.placed.get(job.id);
      const same =
        before !== undefined && before.job.hosts.length === job.hosts.length && before.job.hosts.every((host, i) => host === job.hosts[i]);
      const onFabric: string[] = [];
      const notFound: string[] = [];
      const adapters = new Map<string, string>();
      if (!same) {
        for (const host of job.hosts) {
          const found = this.index!.adapters(host);
          (found.length > 0 ? onFabric : notFound).push(host);
          for (const guid of found) adapters.set(guid, host);
        }
      }
      const entry: JobOnFabric = same
        ? { ...before, job }
        : { job, onFabric, notFound, adapters, links: footprint(topology, [...adapters.keys()], this.graph) };
      placed.set(job.id, entry);
      return entry;
    });
    this.placed = placed;
    return result;
  }
}
