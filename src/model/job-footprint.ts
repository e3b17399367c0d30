// Where a job runs on the fabric: its hosts matched to the fabric's adapters, and its footprint,
// the links its traffic can take: each adapter's link to its switch, and every inter-switch link on
// a minimal-hop path between two of the leaves its hosts hang off (DESIGN.md "Congestion and
// jobs"). Computed on the topology as discovered (a cable that went down since stays in the
// footprints it was in), once per topology and job: `JobPlacement` keeps its indexes and
// footprints for as long as it is given the same topology.
import { atOnce, pacer, type Work } from '../event-loop/time-slices.js';
import { fabricPortKey, type FabricTopology, type PortAddress, type Shard } from './fabric.js';
import type { Job } from './jobs.js';

/** One cable of a footprint. */
export interface FootprintLink {
  /**
   * Its number among the links of the placement's topology (inter-switch cables first, then adapter
   * links as jobs take them): one object per cable, shared by every footprint that holds it.
   */
  readonly id: number;
  /** Its two port keys, sorted, joined by a space: one key per cable whichever end it is seen from. */
  readonly key: string;
  /** `host`: an adapter's link; `switch`: an inter-switch link. */
  readonly scope: 'host' | 'switch';
  /**
   * The end whose node's shard reports the link (the switch end of an adapter link, the lower port
   * key of an inter-switch link), so that the shards of a fabric count each link once.
   */
  readonly owner: PortAddress;
  /** The other end. */
  readonly peer: PortAddress;
}

/**
 * A FootprintLink as it is kept: its ends' GUIDs and ports as fields, its key and its ends as
 * objects made when asked. At 2 000 jobs a placement holds 74 000 cables (the 24 576-host tree):
 * two end objects and a key string each came to 10 MiB, read only for the few impaired links
 * (findings) and a job's map.
 */
class Link implements FootprintLink {
  constructor(
    readonly id: number,
    readonly scope: FootprintLink['scope'],
    private readonly ownerGuid: string,
    private readonly ownerPort: number,
    private readonly peerGuid: string,
    private readonly peerPort: number,
  ) {}

  get owner(): PortAddress {
    return { nodeGuid: this.ownerGuid, port: this.ownerPort };
  }

  get peer(): PortAddress {
    return { nodeGuid: this.peerGuid, port: this.peerPort };
  }

  get key(): string {
    const owner = fabricPortKey(this.ownerGuid, this.ownerPort);
    const peer = fabricPortKey(this.peerGuid, this.peerPort);
    return owner < peer ? `${owner} ${peer}` : `${peer} ${owner}`;
  }
}

/**
 * A job's footprint: its links as their ids (4 bytes a link: at 2 000 jobs on the 24 576-host tree
 * the footprints hold 1.2 million, 12 MiB as arrays of references), each looked up in the links of
 * its placement. Adapter links first, then inter-switch links by cable number.
 */
export class Footprint implements Iterable<FootprintLink> {
  constructor(
    private readonly ids: Uint32Array,
    private readonly links: { link(id: number): FootprintLink },
  ) {}

  get length(): number {
    return this.ids.length;
  }

  at(i: number): FootprintLink {
    return this.links.link(this.ids[i]!);
  }

  *[Symbol.iterator](): Iterator<FootprintLink> {
    for (let i = 0; i < this.ids.length; i++) yield this.at(i);
  }
}

/**
 * A job's adapters (node GUIDs) with the host each belongs to, as two lists: a Map per job held
 * 143 000 entries at 2 000 jobs on the 24 576-host tree (5.4 MiB); a host is looked up only for an
 * impaired adapter link.
 */
export class JobAdapters {
  private readonly guids: readonly string[];
  private readonly hosts: readonly string[];

  /** From each adapter's host, in the order found; an adapter given twice keeps its last host. */
  constructor(hostOf: ReadonlyMap<string, string>) {
    this.guids = [...hostOf.keys()];
    this.hosts = [...hostOf.values()];
  }

  get size(): number {
    return this.guids.length;
  }

  keys(): IterableIterator<string> {
    return this.guids.values();
  }

  /** The host of an adapter of the job; undefined for another adapter. */
  get(guid: string): string | undefined {
    const at = this.guids.indexOf(guid);
    return at < 0 ? undefined : this.hosts[at];
  }
}

export interface JobOnFabric {
  job: Job;
  /** The job's hosts that have an adapter on the fabric, and those that do not. */
  onFabric: readonly string[];
  notFound: readonly string[];
  /** The adapters' node GUIDs, each with its host. */
  adapters: JobAdapters;
  links: Footprint;
}

/** The jobs collector's part: the running jobs placed on the fabric. */
export interface JobsPart {
  /** Where the jobs came from. */
  source: 'squeue' | 'file';
  /** Running jobs on at least --jobs.min-hosts hosts, placed on the topology. */
  jobs: readonly JobOnFabric[];
  shard: Shard;
  /** The numbering of the jobs' link ids (`FootprintLink.id`): the same object while the links are numbered the same. */
  linkIds: object;
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

  constructor(topology?: FabricTopology, hostPattern?: RegExp) {
    if (topology) atOnce(this.index(topology, hostPattern));
  }

  /** Index a topology's adapters, as work that may pause (24 000 hosts). */
  *index(topology: FabricTopology, hostPattern: RegExp | undefined): Work<void> {
    const add = (index: Map<string, string[]>, host: string | undefined, guid: string) => {
      if (!host) return;
      const guids = index.get(host);
      if (!guids) index.set(host, [guid]);
      else if (!guids.includes(guid)) guids.push(guid);
    };
    const pace = pacer(1024);
    for (const node of topology.nodes.values()) {
      if (pace()) yield;
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

/** Hops no breadth-first search reaches (a switch cut off from the source). */
const UNREACHED = 255;

/**
 * A topology's switches and inter-switch cables, numbered and kept in typed arrays for the
 * breadth-first searches of the footprints (at 1 920 switches and 49 000 cables, a search over
 * objects and strings took seconds per job across the tree), with one `FootprintLink` per cable,
 * made when a footprint first takes it and shared by every job that crosses it. Each source
 * leaf's hop counts are kept for the life of the topology (one byte a switch).
 */
class SwitchGraph {
  readonly numbers = new Map<string, number>();
  private readonly guids: string[] = [];
  /** Switch i's edges are first[i] … first[i + 1] - 1. */
  private first = new Uint32Array(0);
  /** Per edge: the switch it leads to, the ports at its two ends, its cable. */
  private to = new Uint32Array(0);
  private localPort = new Uint16Array(0);
  private peerPort = new Uint16Array(0);
  private cable = new Uint32Array(0);
  /** Per cable: one of its edges, and its link once a footprint took it. */
  private cableEdge = new Uint32Array(0);
  private links: (FootprintLink | undefined)[] = [];
  private readonly hops = new Map<number, Uint8Array>();
  private queue = new Uint32Array(0);
  /** Search marks: a switch is visited in the current search when its mark is the search's stamp. */
  private marks = new Uint32Array(0);
  private stamp = 0;

  get cables(): number {
    return this.links.length;
  }

  *build(topology: FabricTopology): Work<void> {
    const pace = pacer(4096);
    const isSwitch = (guid: string) => topology.nodes.get(guid)?.type === 'switch';
    const edges: [number, number, number, number][] = [];
    const numberOf = (guid: string): number => {
      let number = this.numbers.get(guid);
      if (number === undefined) {
        this.numbers.set(guid, (number = this.guids.length));
        this.guids.push(guid);
      }
      return number;
    };
    for (const port of topology.ports.values()) {
      if (pace()) yield;
      if (!port.peer || !isSwitch(port.nodeGuid) || !isSwitch(port.peer.nodeGuid)) continue;
      edges.push([numberOf(port.nodeGuid), numberOf(port.peer.nodeGuid), port.port, port.peer.port]);
    }
    // Each switch's edges together (a counting sort by switch, ports in the order discovery listed them).
    const count = this.guids.length;
    this.first = new Uint32Array(count + 1);
    for (const [from] of edges) this.first[from + 1]! += 1;
    for (let i = 1; i <= count; i++) this.first[i]! += this.first[i - 1]!;
    const filled = this.first.slice(0, count);
    this.to = new Uint32Array(edges.length);
    this.localPort = new Uint16Array(edges.length);
    this.peerPort = new Uint16Array(edges.length);
    this.cable = new Uint32Array(edges.length).fill(0xffffffff);
    const from = new Uint32Array(edges.length);
    for (const [source, to, local, peer] of edges) {
      if (pace()) yield;
      const i = filled[source]!++;
      from[i] = source;
      this.to[i] = to;
      this.localPort[i] = local;
      this.peerPort[i] = peer;
    }
    // A cable's two directions share its number: the reverse edge is the peer's edge on the peer port.
    const cableEdges: number[] = [];
    for (let e = 0; e < edges.length; e++) {
      if (pace()) yield;
      if (this.cable[e] !== 0xffffffff) continue;
      const cable = cableEdges.length;
      cableEdges.push(e);
      this.cable[e] = cable;
      const peer = this.to[e]!;
      for (let r = this.first[peer]!; r < this.first[peer + 1]!; r++) {
        if (this.localPort[r] === this.peerPort[e] && this.peerPort[r] === this.localPort[e] && this.to[r] === from[e]) {
          this.cable[r] = cable;
          break;
        }
      }
    }
    this.cableEdge = Uint32Array.from(cableEdges);
    this.links = new Array<FootprintLink | undefined>(cableEdges.length).fill(undefined);
    this.queue = new Uint32Array(count);
    this.marks = new Uint32Array(count);
  }

  /** Hops from one switch to every other, by breadth-first search; kept. */
  private hopsFrom(source: number): Uint8Array {
    let hops = this.hops.get(source);
    if (hops) return hops;
    hops = new Uint8Array(this.guids.length).fill(UNREACHED);
    hops[source] = 0;
    const queue = this.queue;
    queue[0] = source;
    for (let head = 0, tail = 1; head < tail; head++) {
      const node = queue[head]!;
      const next = hops[node]! + 1;
      for (let e = this.first[node]!; e < this.first[node + 1]!; e++) {
        const peer = this.to[e]!;
        if (hops[peer] !== UNREACHED) continue;
        hops[peer] = Math.min(next, UNREACHED - 1);
        queue[tail++] = peer;
      }
    }
    this.hops.set(source, hops);
    return hops;
  }

  /**
   * The cables on minimal-hop paths from `source` to each of `targets` from index `from` on: back
   * from every target along the edges that go one hop nearer, each switch walked once. `take` gets
   * each cable's number (a cable may come more than once).
   */
  minimalHopCables(source: number, targets: readonly number[], from: number, take: (cable: number) => void): void {
    const hops = this.hopsFrom(source);
    const { queue, marks } = this;
    const stamp = ++this.stamp;
    let tail = 0;
    for (let t = from; t < targets.length; t++) {
      const target = targets[t]!;
      if (hops[target] === UNREACHED || marks[target] === stamp) continue;
      marks[target] = stamp;
      queue[tail++] = target;
    }
    for (let head = 0; head < tail; head++) {
      const node = queue[head]!;
      const nearer = hops[node]! - 1;
      for (let e = this.first[node]!; e < this.first[node + 1]!; e++) {
        const peer = this.to[e]!;
        if (hops[peer] !== nearer) continue;
        take(this.cable[e]!);
        if (marks[peer] !== stamp) {
          marks[peer] = stamp;
          queue[tail++] = peer;
        }
      }
    }
  }

  /** The link of a cable, made the first time a footprint takes it. */
  link(cable: number): FootprintLink {
    let found = this.links[cable];
    if (found) return found;
    const e = this.cableEdge[cable]!;
    const from = this.guids[this.edgeSource(e)]!;
    found = link(
      { nodeGuid: from, port: this.localPort[e]! },
      { nodeGuid: this.guids[this.to[e]!]!, port: this.peerPort[e]! },
      'switch',
      cable,
    );
    this.links[cable] = found;
    return found;
  }

  private edgeSource(edge: number): number {
    // The switch whose edges hold `edge`: a binary search over `first`.
    let low = 0;
    let high = this.guids.length - 1;
    while (low < high) {
      const middle = (low + high + 1) >> 1;
      if (this.first[middle]! <= edge) low = middle;
      else high = middle - 1;
    }
    return low;
  }
}

function link(a: PortAddress, b: PortAddress, scope: FootprintLink['scope'], id: number): FootprintLink {
  const [owner, peer] = scope === 'host' || fabricPortKey(a.nodeGuid, a.port) < fabricPortKey(b.nodeGuid, b.port) ? [a, b] : [b, a];
  return new Link(id, scope, owner.nodeGuid, owner.port, peer.nodeGuid, peer.port);
}

/**
 * What the footprints of one topology are made from: its switch graph, its hosts by name, and the
 * adapter links made so far (one per adapter port, shared by the jobs on that host).
 */
class FootprintIndex {
  readonly graph = new SwitchGraph();
  hosts: HostIndex | undefined;
  /** Each adapter's links, one link as itself (nearly every adapter has one cable): no wrapper or array per adapter. */
  private readonly adapterLinks = new Map<string, FootprintLink | readonly FootprintLink[]>();
  /** The adapter links by id, less the number of cables (their ids follow the cables'). */
  private readonly hostLinks: FootprintLink[] = [];
  private nextHostLinkId = 0;
  /** Per cable: the last footprint (its serial) that took it, so that a footprint takes each once. */
  private taken = new Uint32Array(0);
  private serial = 0;
  /**
   * Where a footprint's ids are gathered before it keeps a copy of its own size: gathered in arrays
   * of numbers, the 2 000 jobs' 1.24 million ids left some 40 MB of garbage at the first reading's
   * memory peak.
   */
  private scratch = new Uint32Array(0);

  *build(topology: FabricTopology, hostPattern: RegExp | undefined): Work<void> {
    yield* this.graph.build(topology);
    this.hosts = new HostIndex();
    yield* this.hosts.index(topology, hostPattern);
    this.nextHostLinkId = this.graph.cables;
    this.taken = new Uint32Array(this.graph.cables);
  }

  /** An adapter's links (the switch end owns each: a back-to-back cable between two adapters has none, either end). */
  private adapter(topology: FabricTopology, guid: string): FootprintLink | readonly FootprintLink[] {
    const known = this.adapterLinks.get(guid);
    if (known) return known;
    const links: FootprintLink[] = [];
    const node = topology.nodes.get(guid);
    for (let port = 1; port <= (node?.portCount ?? 0); port++) {
      const peer = topology.ports.get(fabricPortKey(guid, port))?.peer;
      if (!peer) continue;
      const made = link({ nodeGuid: peer.nodeGuid, port: peer.port }, { nodeGuid: guid, port }, 'host', this.nextHostLinkId++);
      this.hostLinks.push(made);
      links.push(made);
    }
    const found = links.length === 1 ? links[0]! : links;
    this.adapterLinks.set(guid, found);
    return found;
  }

  /** The footprint of a set of adapters: their links, then the inter-switch links on minimal-hop paths between their leaves. */
  *footprint(topology: FabricTopology, adapters: Iterable<string>): Work<Footprint> {
    let count = 0;
    const gather = (id: number) => {
      if (count === this.scratch.length) {
        const larger = new Uint32Array(Math.max(1024, 2 * count));
        larger.set(this.scratch);
        this.scratch = larger;
      }
      this.scratch[count++] = id;
    };
    const seen = new Set<FootprintLink>();
    const leaves = new Set<number>();
    const takeAdapterLink = (found: FootprintLink) => {
      if (seen.has(found)) return;
      seen.add(found);
      gather(found.id);
      // Its leaf: the switch end (the graph numbers switches only).
      const leaf = this.graph.numbers.get(found.owner.nodeGuid);
      if (leaf !== undefined) leaves.add(leaf);
    };
    for (const guid of adapters) {
      const own = this.adapter(topology, guid);
      // One link as itself: no array made for it per job.
      if ('id' in own) takeAdapterLink(own);
      else for (const found of own) takeAdapterLink(found);
    }
    const hostLinks = count;
    const ordered = [...leaves].sort((a, b) => a - b);
    const serial = ++this.serial;
    // A cable's number is its link's id.
    const take = (cable: number) => {
      if (this.taken[cable] === serial) return;
      this.taken[cable] = serial;
      gather(cable);
    };
    // Paths are symmetric: from each leaf to the leaves after it, a pause between two searches.
    for (let i = 0; i + 1 < ordered.length; i++) {
      this.graph.minimalHopCables(ordered[i]!, ordered, i + 1, take);
      yield;
    }
    // The inter-switch links by cable number, after the adapter links.
    this.scratch.subarray(hostLinks, count).sort();
    return new Footprint(this.scratch.slice(0, count), this);
  }

  /** The link of an id of this index's footprints, made the first time a footprint's link is asked for. */
  link(id: number): FootprintLink {
    return id < this.graph.cables ? this.graph.link(id) : this.hostLinks[id - this.graph.cables]!;
  }
}

/** The footprint of a set of adapters on a topology (a placement keeps its index; this builds one). */
export function footprint(topology: FabricTopology, adapters: readonly string[]): FootprintLink[] {
  const index = new FootprintIndex();
  atOnce(index.build(topology, undefined));
  return [...atOnce(index.footprint(topology, adapters))];
}

/**
 * What the footprints of a topology depend on, as a value that is the same for two discoveries of
 * the same fabric: every node's GUID, type, name, NodeDescription and port count, every port's
 * peer, hashed in any order (two 32-bit sums of each entry's FNV-1a and djb2 hashes, and the counts).
 */
function* wiringSignature(topology: FabricTopology): Work<string> {
  const pace = pacer(2048);
  let fnv = 0;
  let djb = 0;
  const add = (text: string) => {
    let a = 0x811c9dc5;
    let b = 5381;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      a = Math.imul(a ^ c, 0x01000193);
      b = Math.imul(b, 33) ^ c;
    }
    fnv = (fnv + (a >>> 0)) >>> 0;
    djb = (djb + (b >>> 0)) >>> 0;
  };
  for (const node of topology.nodes.values()) {
    if (pace()) yield;
    add(`${node.guid}\u0000${node.type}\u0000${node.name ?? ''}\u0000${node.description}\u0000${node.portCount}`);
  }
  for (const port of topology.ports.values()) {
    if (pace()) yield;
    if (port.peer) add(`${port.nodeGuid}\u0000${port.port}\u0000${port.peer.nodeGuid}\u0000${port.peer.port}`);
  }
  return `${topology.nodes.size}/${topology.ports.size}/${fnv}/${djb}`;
}

/** Whether a job read again is the one read before (a new object from every squeue or file reading). */
function sameJob(a: Job, b: Job): boolean {
  return (
    a === b ||
    (a.id === b.id &&
      a.user === b.user &&
      a.partition === b.partition &&
      a.name === b.name &&
      a.hosts.length === b.hosts.length &&
      a.hosts.every((host, i) => host === b.hosts[i]))
  );
}

/**
 * Jobs placed on the fabric, each job's footprint computed once while its hosts and the topology's
 * wiring stay the same: a new discovery of the same fabric keeps every footprint (a discovery
 * every 10 minutes would otherwise compute them all again).
 */
export class JobPlacement {
  private topology: FabricTopology | undefined;
  private signature = '';
  private index: FootprintIndex | undefined;
  private placed = new Map<string, JobOnFabric>();
  /** Footprints computed since this placement was made (tests count them). */
  computed = 0;

  /** The numbering of the links' ids: a new one when the wiring changed. */
  get linkIds(): object {
    return this.index ?? this;
  }

  constructor(private readonly hostPattern: RegExp | undefined) {}

  place(topology: FabricTopology, jobs: readonly Job[]): JobOnFabric[] {
    return atOnce(this.placeSteps(topology, jobs));
  }

  *placeSteps(topology: FabricTopology, jobs: readonly Job[]): Work<JobOnFabric[]> {
    let index = this.index;
    if (topology !== this.topology || !index) {
      const signature = yield* wiringSignature(topology);
      if (signature !== this.signature || !index) {
        index = new FootprintIndex();
        yield* index.build(topology, this.hostPattern);
        this.index = index;
        this.placed = new Map();
        this.signature = signature;
      }
      // The same wiring: the index and footprints stand; only the new topology is kept (the old one is let go).
      this.topology = topology;
    }
    const placed = new Map<string, JobOnFabric>();
    const result: JobOnFabric[] = [];
    const pace = pacer(64);
    for (const job of jobs) {
      if (pace()) yield;
      const before = this.placed.get(job.id);
      const same =
        before !== undefined && before.job.hosts.length === job.hosts.length && before.job.hosts.every((host, i) => host === job.hosts[i]);
      let entry: JobOnFabric;
      // The same job as before stays the same object, so that what was counted of it stands.
      if (same) entry = sameJob(before.job, job) ? before : { ...before, job };
      else {
        const onFabric: string[] = [];
        const notFound: string[] = [];
        const adapters = new Map<string, string>();
        for (const host of job.hosts) {
          const found = index.hosts!.adapters(host);
          (found.length > 0 ? onFabric : notFound).push(host);
          for (const guid of found) adapters.set(guid, host);
        }
        entry = {
          job,
          // Every host found (most jobs): the job's own list, not a copy.
          onFabric: notFound.length === 0 ? job.hosts : onFabric,
          notFound,
          adapters: new JobAdapters(adapters),
          links: yield* index.footprint(topology, adapters.keys()),
        };
        this.computed += 1;
        yield;
      }
      placed.set(job.id, entry);
      result.push(entry);
    }
    this.placed = placed;
    return result;
  }
}
