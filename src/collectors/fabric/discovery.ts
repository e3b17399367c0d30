// The fabric_discovery collector: `ibnetdiscover --cache FILE` at start and every
// --fabric.discovery-interval (early when the ports cycle sees the fabric changed): every node,
// port and cable, and what each port enables. A failed run keeps the last topology, and so does one
// whose output was incomplete, or that lost most of the fabric until the next discovery confirms
// it. It writes the node families and judges address conflicts.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { atOnce, inSlices, pacer, type Work } from '../../event-loop/time-slices.js';
import { switchTiers } from '../../model/fabric-tiers.js';
import { nodeNameMapSteps } from '../../config/node-name-map.js';
import type { ExpositionBuffer } from '../../exposition/buffer.js';
import { gauge } from '../../exposition/metric-spec.js';
import { Samples } from '../../exposition/samples.js';
import { composeFabric, inShard, sameNodes, type FabricSnapshot, type FabricTopology } from '../../model/fabric.js';
import { plural, type CollectorFailure, type Finding } from '../../model/finding.js';
import type { CollectorReport, Snapshot } from '../../model/snapshot.js';
import { FileRefused, NODE_NAME_MAP_FILE, readBoundedTextAsync } from '../../files/bounded-file.js';
import type { FabricCycle } from '../../sources/fabric/commands.js';
import type { Discovery } from '../../sources/fabric/discovery.js';
import type { NodeTick } from '../../sources/fabric/xmit-wait-ticks.js';
import type { XmitWaitTick } from '../../model/congestion.js';
import { defineCollector, type Collector, type CollectorContext, type Reader, type Reading } from '../../collection/collector.js';
import {
  COMMANDS_FAIL,
  DISCOVERY_CYCLE,
  FABRIC_FLAGS,
  FABRIC_HCA_PORTS,
  FABRIC_NODE_NAME_MAP,
  FABRIC_SHARD,
  FABRIC_SWITCH,
  fabricRunner,
} from './fabric-mode.js';
import { FABRIC_DISCOVERY_PART, type DiscoveryPart } from '../parts.js';
import { DIAG_TIMEOUT } from '../infiniband-diags.js';

interface CachedTick extends NodeTick {
  deviceId: number | undefined;
}

class DiscoveryReader implements Reader<DiscoveryPart> {
  private names: ReadonlyMap<string, string> = new Map();
  private scratch: Promise<string> | undefined;
  private discoveries = 0;
  /** The file of the current topology, and the one before it (removed at the next discovery). */
  private cacheFile: string | undefined;
  private retiredCacheFile: string | undefined;
  /** The part in use (the last discovery taken). */
  private current: DiscoveryPart | undefined;
  /** The nodes of a discovery that found less than half of the topology's, until one confirms it. */
  private shrunkTo: ReadonlySet<string> | undefined;
  /** Each node's PortXmitWait tick, read once per node with its identity, and the ticks of the part in use. */
  private tickCache = new Map<string, CachedTick>();
  private ticks: ReadonlyMap<string, XmitWaitTick> = new Map();

  constructor(private readonly context: CollectorContext) {}

  /** A private directory for the discovery cache files, removed at close. */
  private directory(): Promise<string> {
    this.scratch ??= mkdtemp(path.join(tmpdir(), 'infiniband-exporter-fabric-'));
    return this.scratch;
  }

  async read(_snapshot: Snapshot, signal: AbortSignal): Promise<Reading<DiscoveryPart>> {
    const { settings } = this.context;
    const [{ FabricCycle: Cycle }, { discoverFabric }] = await Promise.all([
      import('../../sources/fabric/commands.js'),
      import('../../sources/fabric/discovery.js'),
    ]);
    const cycle = new Cycle({ runner: fabricRunner(this.context), timeoutMs: settings.get(DIAG_TIMEOUT), signal });
    await this.readNames(cycle);
    const dir = await this.directory();
    const file = path.join(dir, `topology-${++this.discoveries}.cache`);
    // A fabric's discovery text is megabytes: kept only by a program that runs once.
    const found = await discoverFabric(cycle, file, this.names, this.context.now() / 1000, this.context.mode !== 'serve');
    const shard = settings.get(FABRIC_SHARD);
    // A failed first discovery still says which shard this is; a later one keeps the last topology.
    let part: DiscoveryPart | undefined =
      this.current === undefined
        ? { topology: undefined, cache: undefined, shard, provisional: false, names: this.names, ticks: this.ticks, tiers: new Map() }
        : undefined;
    const verdict = found && !signal.aborted ? this.verdict(found, cycle) : undefined;
    if (verdict === 'confirm' && this.current && !this.current.provisional) part = { ...this.current, provisional: true };
    if (found && (verdict === 'take' || verdict === 'provisional')) {
      part = {
        topology: found.topology,
        cache: found.cache,
        shard,
        provisional: verdict === 'provisional',
        names: this.names,
        // Only `serve` measures congestion (two ports cycles); `check` and `topology save` run one.
        ticks: this.context.mode === 'serve' ? await this.readTicks(cycle, found.topology) : this.ticks,
        tiers: await inSlices(switchTiers(found.topology)),
        ...(this.context.mode !== 'serve' && { text: found.text }),
      };
      // A sweep that started a moment ago may still read the previous file: keep it one discovery longer.
      if (this.retiredCacheFile !== undefined) await rm(this.retiredCacheFile, { force: true });
      this.retiredCacheFile = this.cacheFile;
      this.cacheFile = file;
    } else {
      await rm(file, { force: true });
    }
    if (part) this.current = part;
    const report = cycle.report();
    return { ...(part && { part }), errors: report.errors, failOnErrors: report.failed, timeouts: report.timeouts, read: report.read };
  }

  /**
   * Whether a discovery replaces the topology in use. An incomplete one does not (the next comes at
   * its interval), unless there is none yet: then it is better than nothing, taken as provisional
   * (another discovery follows at the next ports cycle). A complete one that found less than half
   * of the nodes of the topology in use is taken only once the next discovery, at the next ports
   * cycle, finds the same nodes: a fabric seldom loses half its nodes at once, a discovery whose
   * queries were lost on the way often does.
   */
  private verdict(found: Discovery, cycle: FabricCycle): 'take' | 'provisional' | 'keep' | 'confirm' {
    const previous = this.current?.topology;
    if (!found.complete) return previous ? 'keep' : 'provisional';
    const nodes = new Set(found.topology.nodes.keys());
    if (previous && nodes.size < previous.nodes.size / 2 && !sameNodes(nodes, this.shrunkTo)) {
      this.shrunkTo = nodes;
      cycle.fail(
        found.item,
        `found ${nodes.size} nodes where the topology in use has ${previous.nodes.size}: kept until the next discovery finds the same`,
      );
      return 'confirm';
    }
    this.shrunkTo = undefined;
    return 'take';
  }

  /**
   * The ticks of this shard's nodes whose ports the ports cycle reads, by GUID: read for nodes not
   * read before (or whose device ID changed: a replaced switch), and again for those whose query
   * timed out, which have the documented tick meanwhile. The same map while nothing is new.
   */
  private async readTicks(cycle: FabricCycle, topology: FabricTopology): Promise<ReadonlyMap<string, XmitWaitTick>> {
    const shard = this.context.settings.get(FABRIC_SHARD);
    const hcaPorts = this.context.settings.get(FABRIC_HCA_PORTS);
    const wanted = [...topology.nodes.values()].filter((node) => (node.type === 'switch' || hcaPorts) && inShard(node.guid, shard));
    const missing = wanted.filter((node) => {
      const known = this.tickCache.get(node.guid);
      return !known?.settled || known.deviceId !== node.deviceId;
    });
    if (missing.length === 0 && wanted.length === this.ticks.size) return this.ticks;
    const { readXmitWaitTicks } = await import('../../sources/fabric/xmit-wait-ticks.js');
    const read = await readXmitWaitTicks(cycle, missing, topology.ports);
    const cache = new Map<string, CachedTick>();
    const ticks = new Map<string, XmitWaitTick>();
    for (const node of wanted) {
      const fresh = read.get(node.guid);
      const entry = fresh ? { ...fresh, deviceId: node.deviceId } : this.tickCache.get(node.guid);
      if (!entry) continue;
      cache.set(node.guid, entry);
      ticks.set(node.guid, entry.tick);
    }
    this.tickCache = cache;
    this.ticks = ticks;
    return ticks;
  }

  /** The node-name-map, read again at each discovery; a broken edit keeps the previous names. */
  private async readNames(cycle: FabricCycle): Promise<void> {
    const file = this.context.settings.get(FABRIC_NODE_NAME_MAP);
    if (file === undefined) return;
    try {
      const map = await inSlices(nodeNameMapSteps(await readBoundedTextAsync(file, NODE_NAME_MAP_FILE)));
      if (map.errors.length > 0) {
        cycle.note(file, `line ${map.errors[0]!.line} not understood; keeping the names read before`);
        return;
      }
      this.names = map.names;
    } catch (error) {
      const reason = error instanceof FileRefused ? error.reason : (error as Error).message;
      cycle.note(file, `node-name-map not read (${reason}); keeping the names read before`);
    }
  }

  async close(): Promise<void> {
    if (this.scratch) await rm(await this.scratch, { recursive: true, force: true });
  }
}

export const NODE_METRICS = {
  nodeInfo: gauge(
    'infiniband_fabric_node_info',
    ['node_guid', 'node_type', 'node_desc', 'node_name', 'lid', 'ports', 'vendor_id', 'device_id', 'tier'],
    "Every node the last discovery found (value always 1): type (switch, ca, router), NodeDescription, name from --fabric.node-name-map (empty when unmapped), LID (a switch's port 0, a CA's first port), number of ports, vendor and device ID, and a switch's tier in the fat tree (1 = switches with hosts, counting up by hops; empty for hosts and for switches no host reaches), as the congestion aggregates and the outlier rules count it. A switch that disappears from here was lost from the fabric.",
  ),
  duplicateGuids: gauge(
    'infiniband_fabric_duplicate_guids',
    [],
    'GUIDs that more than one node or port of the fabric claims (a cloned or mis-programmed GUID makes one of the devices invisible to the subnet manager). 0 on a sane fabric.',
  ),
  duplicateLids: gauge(
    'infiniband_fabric_duplicate_lids',
    [],
    'LIDs assigned to more than one port: traffic to them goes astray. 0 on a sane fabric.',
  ),
} as const;

const FAMILIES = Object.values(NODE_METRICS);

const hex = (value: number | undefined, digits: number): string =>
  value === undefined ? '' : `0x${value.toString(16).padStart(digits, '0')}`;

/** Nodes of this shard, and (shard 1 only: they are the fabric's, served once) the duplicate counts. */
function* writeMetrics(snapshot: Snapshot, out: ExpositionBuffer): Work<void> {
  const { topology, shard, tiers } = FABRIC_DISCOVERY.of(snapshot) ?? {};
  if (!topology || !shard) return;
  const pace = pacer();
  const samples = new Samples();
  if (shard.index === 1) {
    samples.add(NODE_METRICS.duplicateGuids, {}, topology.duplicateGuids);
    samples.add(NODE_METRICS.duplicateLids, {}, topology.duplicateLids);
  }
  for (const node of topology.nodes.values()) {
    if (pace()) yield;
    if (!inShard(node.guid, shard)) continue;
    samples.add(
      NODE_METRICS.nodeInfo,
      {
        node_guid: node.guid,
        node_type: node.type,
        node_desc: node.description,
        node_name: node.name ?? '',
        lid: node.lid === undefined ? '' : String(node.lid),
        ports: String(node.portCount),
        vendor_id: hex(node.vendorId, 4),
        device_id: hex(node.deviceId, 4),
        tier: String(tiers?.get(node.guid) ?? ''),
      },
      1,
    );
  }
  yield* samples.writeSteps(FAMILIES, out);
}

export function addressConflictFindings(fabric: FabricSnapshot): Finding[] {
  const topology = fabric.topology;
  if (!topology || topology.duplicateGuids + topology.duplicateLids === 0) return [];
  return [
    {
      condition: 'fabric-address-conflict',
      severity: 'critical',
      subject: { kind: 'subnet' },
      summary: `the fabric discovery found ${plural(topology.duplicateGuids, 'duplicate GUID')} and ${plural(topology.duplicateLids, 'duplicate LID')}: packets for one address reach the wrong port or none`,
      meaning:
        "A GUID two nodes share hides one of them from discovery and from the subnet manager's routing; two ports with one LID make it route to either. The subnet manager may refuse to bring ports up.",
      cause:
        'Duplicate GUIDs: a card with a cloned or badly burnt firmware image. Duplicate LIDs: two subnets joined by a cable while each had its own subnet manager, or a LID set by hand.',
      remedy:
        "find them with ibnetdiscover -p (one GUID or LID twice); reburn a duplicate GUID with the card's own (mstflint -d <pci> -guid <guid> sg) or replace the card; for duplicate LIDs unplug the cable that joined two subnets and restart the subnet manager",
      runbook: 'infinibandfabricaddressconflict',
      alert: 'InfiniBandFabricAddressConflict',
    },
  ];
}

function durationText(seconds: number): string {
  if (seconds < 120) return plural(Math.round(seconds), 'second');
  if (seconds < 7200) return plural(Math.round(seconds / 60), 'minute');
  return plural(Math.round(seconds / 3600), 'hour');
}

/** What a failed discovery means: the age of the topology in use. */
export function discoveryFailure(fabric: FabricSnapshot, report: CollectorReport): CollectorFailure {
  const topology = fabric.topology;
  return {
    consequence: topology
      ? `the topology in use is from ${new Date(topology.discoveredAt * 1000).toISOString()}, ${durationText(Math.max(0, report.finishedAt - topology.discoveredAt))} older: switches, hosts and cables added, moved or removed since are not seen`
      : 'no discovery has succeeded, so no switch, port or link of the fabric could be checked',
    meaning: 'Fabric mode reads every port, link and counter through the topology that discovery found.',
    cause: `ibnetdiscover failed, printed less than it found, or found less than half of the fabric (kept until the next discovery confirms it): ${COMMANDS_FAIL}.`,
  };
}

export const FABRIC_DISCOVERY: Collector<DiscoveryPart> = defineCollector({
  name: FABRIC_DISCOVERY_PART.name,
  checks: "the fabric's topology",
  enabledBy: FABRIC_SWITCH,
  flags: FABRIC_FLAGS,
  scope: 'fabric',
  schedule: { cycle: DISCOVERY_CYCLE },
  onOverrun: 'keep',
  setUp: (context) => new DiscoveryReader(context),
  metrics: { families: FAMILIES, write: (snapshot, out) => atOnce(writeMetrics(snapshot, out)), writeSteps: writeMetrics },
  findings: (snapshot) => {
    const discovery = FABRIC_DISCOVERY.of(snapshot);
    return discovery?.topology ? addressConflictFindings(composeFabric(discovery.topology, undefined, undefined, discovery.shard)) : [];
  },
  failure: (snapshot, report) => {
    const discovery = FABRIC_DISCOVERY.of(snapshot);
    return discoveryFailure(composeFabric(discovery?.topology, undefined, undefined, { index: 1, count: 1 }), report);
  },
});
