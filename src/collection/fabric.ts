// Fabric mode's loops (--collector.fabric), loaded only when it is on:
//   fabric_discovery  ibnetdiscover at start and every --fabric.discovery-interval (early when the
//                     ports cycle sees the fabric changed); a failed run keeps the last topology,
//                     and so does one whose output was incomplete, or that lost most of the
//                     fabric until the next discovery confirms it
//   fabric_ports      every --fabric.interval: state, width, speed, peer and PMA counters of every
//                     switch port of this instance's shard (CA ports too with --fabric.hca-ports)
//   fabric_sa         every --fabric.interval: subnet managers and multicast groups from the SA
// Each cycle reports to the host Collection (success, duration, read errors, time-outs) and hands
// it a new FabricSnapshot.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Logger } from 'pino';
import type { FabricSettings } from '../config/settings.js';
import { parseNodeNameMap } from '../config/node-name-map.js';
import { bestCommonEnabled } from '../infiniband/link-rate.js';
import {
  fabricPortKey,
  inShard,

  type FabricPortReading,
  type FabricSnapshot,
  type FabricSubnetManager,
  type FabricTopology,
  type MulticastGroup,
  type PortAddress,
} from '../snapshot/fabric.js';
import type { CollectorName, FabricCommand, LinkExpectation } from '../snapshot/types.js';
import type { CommandRunner } from '../sources/command-runner.js';
import { FabricCycle, type FabricCycleReport } from '../sources/fabric/commands.js';
import { discoverFabric, type Discovery, type TopologyCache } from '../sources/fabric/discovery.js';
import { readFabricPorts, type CounterSource } from '../sources/fabric/ports.js';
import { readSubnetAdministration, type SubnetAdministrationBefore } from '../sources/fabric/sa-records.js';
import type { Collection } from './collection.js';
import { FabricExpectationRules, type LinkEnd } from './expectation-rules.js';
import { Periodic } from './periodic.js';

export interface FabricModeOptions {
  settings: FabricSettings;
  /** --diag.timeout: the time limit of every command. */
  timeoutMs: number;
  runner: CommandRunner<FabricCommand>;
  collection: Collection;
  logger: Logger;
  now?: () => number;
}

export class FabricMode {
  private topology: FabricTopology | undefined;
  private cache: TopologyCache | undefined;
  private names: ReadonlyMap<string, string> = new Map();
  private ports: ReadonlyMap<string, FabricPortReading> = new Map();
  private expectations: ReadonlyMap<string, LinkExpectation> = new Map();
  private subnetManagers: readonly FabricSubnetManager[] = [];
  private multicastGroups: readonly MulticastGroup[] = [];
  private scratch: Promise<string> | undefined;
  private discoveries = 0;
  /** The file of the current topology, and the one before it (removed at the next discovery). */
  private cacheFile: string | undefined;
  private retiredCacheFile: string | undefined;
  private counterSource: CounterSource = 'sweep';
  /** Nodes the last scan did not see at their discovered LID; cleared by each discovery. */
  private unreachable: ReadonlySet<string> = new Set();
  /**
   * The topology in use may not be the fabric as it is (it came from an incomplete discovery, or
   * a discovery found far fewer nodes and awaits confirmation): each ports cycle asks for a
   * discovery, as without any topology.
   */
  private rediscoverSoon = false;
  /** The nodes of a discovery that found less than half of the topology's, until one confirms it. */
  private shrunkTo: ReadonlySet<string> | undefined;
  /** What the last SA cycle that succeeded read: an SM or all groups gone since may be an incomplete answer. */
  private saBefore: SubnetAdministrationBefore = { subnetManagers: [], multicastGroups: 0 };
  private lastDiscoveryStart = Number.NEGATIVE_INFINITY;
  private readonly rules: FabricExpectationRules;
  private expectationCache: { topology: FabricTopology; expectations: ReadonlyMap<string, LinkExpectation> } | undefined;
  private readonly now: () => number;
  private firstDiscoveryDone: () => void = () => undefined;
  private readonly firstDiscovery = new Promise<void>((resolve) => {
    this.firstDiscoveryDone = resolve;
  });
  readonly discovery: Periodic;
  readonly portsLoop: Periodic;
  readonly saLoop: Periodic;

  constructor(private readonly options: FabricModeOptions) {
    const { settings, timeoutMs, collection, logger } = options;
    this.now = options.now ?? Date.now;
    this.rules = new FabricExpectationRules(settings.expectations);
    const loop = (collector: CollectorName, intervalMs: number, commandsInARow: number, task: (signal: AbortSignal) => Promise<void>, onOverrun: () => void): Periodic =>
      new Periodic({
        intervalMs,
        // Commands in a row, each bounded by the time limit: the cycle's own deadline is never shorter.
        deadlineMs: Math.max(intervalMs, commandsInARow * timeoutMs + 1000),
        task,
        onOverrun: (deadlineMs) => {
          onOverrun();
          collection.recordOverrun([collector], deadlineMs);
          this.publish();
        },
        onError: (error) => logger.error({ err: error, collector }, 'fabric cycle failed'),
      });
    this.discovery = loop('fabric_discovery', settings.discoveryIntervalMs, 1, (signal) => this.discover(signal), () => undefined);
    this.portsLoop = loop('fabric_ports', settings.intervalMs, 2, (signal) => this.readPorts(signal), () => {
      this.ports = new Map();
    });
    this.saLoop = loop('fabric_sa', settings.intervalMs, 2, (signal) => this.readSubnetAdministration(signal), () => {
      this.subnetManagers = [];
      this.multicastGroups = [];
    });
  }

  start(): void {
    this.discovery.start();
    // The ports cycle needs a topology: it starts once the first discovery is over.
    void this.firstDiscovery.then(() => this.portsLoop.start());
    this.saLoop.start();
  }

  async stop(): Promise<void> {
    await Promise.all([this.discovery.stop(), this.portsLoop.stop(), this.saLoop.stop()]);
    if (this.scratch) await rm(await this.scratch, { recursive: true, force: true });
  }

  snapshot(): FabricSnapshot {
    return {
      topology: this.topology,
      ports: this.ports,
      expectations: this.expectations,
      subnetManagers: this.subnetManagers,
      multicastGroups: this.multicastGroups,
      shard: this.options.settings.shard,
    };
  }

  /** A private directory for the discovery cache files, removed at stop. */
  private directory(): Promise<string> {
    this.scratch ??= mkdtemp(path.join(tmpdir(), 'infiniband-exporter-fabric-'));
    return this.scratch;
  }

  private cycle(collector: CollectorName, signal: AbortSignal | undefined): FabricCycle {
    return new FabricCycle(collector, { runner: this.options.runner, timeoutMs: this.options.timeoutMs, signal });
  }

  async discover(signal?: AbortSignal): Promise<void> {
    this.lastDiscoveryStart = this.now();
    try {
      const cycle = this.cycle('fabric_discovery', signal);
      await this.readNames(cycle);
      const dir = await this.directory();
      const sequence = ++this.discoveries;
      const file = path.join(dir, `topology-${sequence}.cache`);
      const found = await discoverFabric(cycle, file, this.names, this.now() / 1000);
      if (signal?.aborted) return;
      if (found && this.accepts(found, cycle)) {
        this.topology = found.topology;
        this.cache = found.cache;
        this.counterSource = 'sweep';
        this.unreachable = new Set();
        this.expectations = this.expectationsOf(this.ports);
        // A sweep that started a moment ago may still read the previous file: keep it one discovery longer.
        if (this.retiredCacheFile !== undefined) await rm(this.retiredCacheFile, { force: true });
        this.retiredCacheFile = this.cacheFile;
        this.cacheFile = file;
      } else {
        await rm(file, { force: true });
      }
      this.report(cycle.report());
    } finally {
      this.firstDiscoveryDone();
    }
  }

  /**
   * Whether a discovery replaces the topology in use. An incomplete one does not, unless there is
   * none yet (then it is better than nothing, and another discovery follows at the next ports
   * cycle; with a topology, the next one comes at its interval). A complete one that found less
   * than half of the nodes of the topology in use is taken only once the next discovery, at the
   * next ports cycle, finds the same nodes: a fabric seldom loses half its nodes at once, a
   * discovery whose queries were lost on the way often does.
   */
  private accepts(found: Discovery, cycle: FabricCycle): boolean {
    const previous = this.topology;
    if (!found.complete) {
      if (previous) return false;
      this.rediscoverSoon = true;
      return true;
    }
    const nodes = new Set(found.topology.nodes.keys());
    if (previous && nodes.size < previous.nodes.size / 2 && !sameSet(nodes, this.shrunkTo)) {
      this.shrunkTo = nodes;
      this.rediscoverSoon = true;
      cycle.fail(found.item, `found ${nodes.size} nodes where the topology in use has ${previous.nodes.size}: kept until the next discovery finds the same`);
      return false;
    }
    this.shrunkTo = undefined;
    this.rediscoverSoon = false;
    return true;
  }

  /** The node-name-map, read again at each discovery; a broken edit keeps the previous names. */
  private async readNames(cycle: FabricCycle): Promise<void> {
    const file = this.options.settings.nodeNameMap;
    if (file === undefined) return;
    try {
      const map = parseNodeNameMap(await readFile(file, 'utf8'));
      if (map.errors.length > 0) {
        cycle.note(file, `line ${map.errors[0]!.line} not understood; keeping the names read before`);
        return;
      }
      this.names = map.names;
    } catch (error) {
      cycle.note(file, `node-name-map cannot be read (${(error as Error).message}); keeping the names read before`);
    }
  }

  async readPorts(signal?: AbortSignal): Promise<void> {
    await this.firstDiscovery;
    const cycle = this.cycle('fabric_ports', signal);
    const topology = this.topology;
    if (!topology) {
      cycle.fail('topology', 'no discovery has succeeded yet: nothing to read');
      this.report(cycle.report());
      // Without a topology, try again at each ports cycle rather than wait for the discovery interval.
      this.rediscover();
      return;
    }
    const { shard, hcaPorts } = this.options.settings;
    const reading = await readFabricPorts(cycle, {
      counterSource: this.counterSource,
      unreachable: this.unreachable,
      topology,
      cache: this.cache,
      covers: (node) => inShard(node.guid, shard),
      hcaPorts,
      scratch: await this.directory(),
    });
    if (signal?.aborted) return;
    if (reading.counterSource !== this.counterSource) {
      this.options.logger.warn('ibqueryerrors cannot run here: reading counters switch by switch with perfquery until the next discovery');
    }
    // The sweeps are tried again after each discovery.
    this.counterSource = reading.counterSource;
    this.unreachable = reading.unreachable;
    this.ports = reading.ports;
    this.expectations = this.expectationsOf(reading.ports);
    this.report(cycle.report());
    // New or vanished nodes, new LIDs, cables moved: discover again now rather than at the next interval.
    if (reading.stale && this.rediscover()) this.options.logger.info('fabric changed since the last discovery; discovering again');
    else if (this.rediscoverSoon) this.rediscover();
  }

  /** Run a discovery now, unless one started less than a ports interval ago; says whether it did. */
  private rediscover(): boolean {
    if (this.now() - this.lastDiscoveryStart < this.options.settings.intervalMs) return false;
    void this.discovery.runNow();
    return true;
  }

  async readSubnetAdministration(signal?: AbortSignal): Promise<void> {
    const cycle = this.cycle('fabric_sa', signal);
    const sa = await readSubnetAdministration(cycle, this.saBefore);
    if (signal?.aborted) return;
    this.subnetManagers = sa.subnetManagers;
    this.multicastGroups = sa.multicastGroups;
    const report = cycle.report();
    if (!report.failed) this.saBefore = { subnetManagers: sa.subnetManagers, multicastGroups: sa.multicastGroups.length };
    this.report(report);
  }

  /** What each read port's link should run at: the first config rule matching either end, else the best both ends enable. */
  private expectationsOf(ports: ReadonlyMap<string, FabricPortReading>): Map<string, LinkExpectation> {
    const expectations = new Map<string, LinkExpectation>();
    const topology = this.topology;
    if (!topology) return expectations;
    const discovered = this.discoveredExpectations(topology);
    for (const [key, reading] of ports) {
      const cabled = topology.ports.get(key)?.peer;
      const peer = reading.peer ?? cabled;
      // The same cable as at discovery (nearly always): its expectation is already known.
      const expectation = peer?.nodeGuid === cabled?.nodeGuid && peer?.port === cabled?.port ? discovered.get(key) : this.expectationOf(topology, reading, peer);
      if (expectation) expectations.set(key, expectation);
    }
    return expectations;
  }

  /** The expectation of every discovered port for the cable discovery saw, computed once per topology. */
  private discoveredExpectations(topology: FabricTopology): ReadonlyMap<string, LinkExpectation> {
    if (this.expectationCache?.topology !== topology) {
      const expectations = new Map<string, LinkExpectation>();
      for (const [key, port] of topology.ports) {
        const expectation = this.expectationOf(topology, port, port.peer);
        if (expectation) expectations.set(key, expectation);
      }
      this.expectationCache = { topology, expectations };
    }
    return this.expectationCache.expectations;
  }

  private expectationOf(topology: FabricTopology, end: PortAddress, peer: PortAddress | undefined): LinkExpectation | undefined {
    const node = topology.nodes.get(end.nodeGuid);
    if (!node) return undefined;
    const peerNode = peer && topology.nodes.get(peer.nodeGuid);
    const ends: LinkEnd[] = [{ node, port: end.port }];
    if (peer && peerNode) ends.push({ node: peerNode, port: peer.port });
    const configured = this.rules.forLink(ends);
    if (configured) return configured;
    const near = topology.ports.get(fabricPortKey(end.nodeGuid, end.port))?.enabled;
    const far = peer && topology.ports.get(fabricPortKey(peer.nodeGuid, peer.port))?.enabled;
    if (!near || !far) return undefined;
    const best = bestCommonEnabled(near, far);
    return best.width === undefined && best.speed === undefined ? undefined : { ...best, source: 'peer' };
  }

  private report(report: FabricCycleReport): void {
    const { collection } = this.options;
    for (const tool of report.timeouts) collection.countTimeout(tool);
    collection.finish({ ...report, finishedAt: this.now() / 1000 });
    this.publish();
  }

  private publish(): void {
    this.options.collection.setFabric(this.snapshot());
    this.options.collection.publish();
  }
}

function sameSet<T>(a: ReadonlySet<T>, b: ReadonlySet<T> | undefined): boolean {
  return b !== undefined && a.size === b.size && [...a].every((value) => b.has(value));
}
