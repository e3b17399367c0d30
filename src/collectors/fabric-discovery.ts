// The fabric_discovery collector: `ibnetdiscover --cache FILE` at start and every
// --fabric.discovery-interval (early when the ports cycle sees the fabric changed): every node,
// port and cable, and what each port enables. A failed run keeps the last topology. It writes the
// node families and judges address conflicts.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseNodeNameMap } from '../config/node-name-map.js';
import type { ExpositionBuffer } from '../exposition/buffer.js';
import { gauge } from '../exposition/metric-spec.js';
import { Samples } from '../exposition/samples.js';
import { composeFabric, inShard, type FabricTopology, type Shard } from '../model/fabric.js';
import type { Snapshot } from '../model/snapshot.js';
import type { FabricCycle } from '../sources/fabric/commands.js';
import type { TopologyCache } from '../sources/fabric/discovery.js';
import { defineCollector, type Collector, type CollectorContext, type Cycle, type Reader, type Reading } from './collector.js';
import { FABRIC_DISCOVERY_INTERVAL, FABRIC_FLAGS, FABRIC_NODE_NAME_MAP, FABRIC_SHARD, FABRIC_SWITCH, fabricRunner } from './fabric.js';
import { addressConflictFindings, discoveryFailure } from './fabric-findings.js';
import { DIAG_TIMEOUT } from './diag.js';

/** The last good discovery. */
export interface DiscoveryPart {
  /** Undefined until a discovery succeeded. */
  topology: FabricTopology | undefined;
  /** The cache file ibnetdiscover wrote, for the counter sweeps; absent when it could not be read. */
  cache: TopologyCache | undefined;
  /** This instance's --fabric.shard: it reports only the nodes of that shard. */
  shard: Shard;
}

export const DISCOVERY_CYCLE: Cycle = {
  name: 'fabric discovery',
  interval: (settings) => settings.get(FABRIC_DISCOVERY_INTERVAL),
  // One command, bounded by the time limit: the cycle's own deadline is never shorter.
  deadline: (settings) => Math.max(settings.get(FABRIC_DISCOVERY_INTERVAL), settings.get(DIAG_TIMEOUT) + 1000),
};

class DiscoveryReader implements Reader<DiscoveryPart> {
  private names: ReadonlyMap<string, string> = new Map();
  private scratch: Promise<string> | undefined;
  private discoveries = 0;
  /** The file of the current topology, and the one before it (removed at the next discovery). */
  private cacheFile: string | undefined;
  private retiredCacheFile: string | undefined;

  constructor(private readonly context: CollectorContext) {}

  /** A private directory for the discovery cache files, removed at close. */
  private directory(): Promise<string> {
    this.scratch ??= mkdtemp(path.join(tmpdir(), 'infiniband-exporter-fabric-'));
    return this.scratch;
  }

  async read(_snapshot: Snapshot, signal: AbortSignal): Promise<Reading<DiscoveryPart>> {
    const { settings } = this.context;
    const [{ FabricCycle: Cycle }, { discoverFabric }] = await Promise.all([import('../sources/fabric/commands.js'), import('../sources/fabric/discovery.js')]);
    const cycle = new Cycle({ runner: fabricRunner(this.context), timeoutMs: settings.get(DIAG_TIMEOUT), signal });
    await this.readNames(cycle);
    const dir = await this.directory();
    const file = path.join(dir, `topology-${++this.discoveries}.cache`);
    const found = await discoverFabric(cycle, file, this.names, this.context.now() / 1000);
    const shard = settings.get(FABRIC_SHARD);
    // A failed first discovery still says which shard this is; a later one keeps the last topology.
    let part: DiscoveryPart | undefined = this.cacheFile === undefined ? { topology: undefined, cache: undefined, shard } : undefined;
    if (found && !signal.aborted) {
      part = { topology: found.topology, cache: found.cache, shard };
      // A sweep that started a moment ago may still read the previous file: keep it one discovery longer.
      if (this.retiredCacheFile !== undefined) await rm(this.retiredCacheFile, { force: true });
      this.retiredCacheFile = this.cacheFile;
      this.cacheFile = file;
    } else {
      await rm(file, { force: true });
    }
    const report = cycle.report();
    return { ...(part && { part }), errors: report.errors, failOnErrors: report.failed, timeouts: report.timeouts };
  }

  /** The node-name-map, read again at each discovery; a broken edit keeps the previous names. */
  private async readNames(cycle: FabricCycle): Promise<void> {
    const file = this.context.settings.get(FABRIC_NODE_NAME_MAP);
    if (file === undefined) return;
    try {
      const map = parseNodeNameMap(await readFile(file, 'utf8'));
      if (map.errors.length > 0) {
        cycle.note(`${file}:${map.errors[0]!.line}`, 'node-name-map line not understood; keeping the names read before');
        return;
      }
      this.names = map.names;
    } catch (error) {
      cycle.note(file, `node-name-map cannot be read (${(error as Error).message}); keeping the names read before`);
    }
  }

  async close(): Promise<void> {
    if (this.scratch) await rm(await this.scratch, { recursive: true, force: true });
  }
}

export const NODE_METRICS = {
  nodeInfo: gauge('infiniband_fabric_node_info', ['node_guid', 'node_type', 'node_desc', 'node_name', 'lid', 'ports', 'vendor_id', 'device_id'],
    'Every node the last discovery found (value always 1): type (switch, ca, router), NodeDescription, name from --fabric.node-name-map (empty when unmapped), LID (a switch\'s port 0, a CA\'s first port), number of ports, vendor and device ID. A switch that disappears from here was lost from the fabric.'),
  duplicateGuids: gauge('infiniband_fabric_duplicate_guids', [],
    'GUIDs that more than one node or port of the fabric claims (a cloned or mis-programmed GUID makes one of the devices invisible to the subnet manager). 0 on a sane fabric.'),
  duplicateLids: gauge('infiniband_fabric_duplicate_lids', [], 'LIDs assigned to more than one port: traffic to them goes astray. 0 on a sane fabric.'),
} as const;

const FAMILIES = Object.values(NODE_METRICS);

const hex = (value: number | undefined, digits: number): string => (value === undefined ? '' : `0x${value.toString(16).padStart(digits, '0')}`);

/** Nodes of this shard, and the fabric-wide duplicate counts. */
function writeMetrics(snapshot: Snapshot, out: ExpositionBuffer): void {
  const { topology, shard } = FABRIC_DISCOVERY.of(snapshot) ?? {};
  if (!topology || !shard) return;
  const samples = new Samples();
  samples.add(NODE_METRICS.duplicateGuids, {}, topology.duplicateGuids);
  samples.add(NODE_METRICS.duplicateLids, {}, topology.duplicateLids);
  for (const node of topology.nodes.values()) {
    if (!inShard(node.guid, shard)) continue;
    samples.add(NODE_METRICS.nodeInfo, {
      node_guid: node.guid,
      node_type: node.type,
      node_desc: node.description,
      node_name: node.name ?? '',
      lid: node.lid === undefined ? '' : String(node.lid),
      ports: String(node.portCount),
      vendor_id: hex(node.vendorId, 4),
      device_id: hex(node.deviceId, 4),
    }, 1);
  }
  samples.writeTo(FAMILIES, out);
}

export const FABRIC_DISCOVERY: Collector<DiscoveryPart> = defineCollector({
  name: 'fabric_discovery',
  checks: 'the fabric\'s topology',
  enabledBy: FABRIC_SWITCH,
  flags: FABRIC_FLAGS,
  scope: 'fabric',
  schedule: { cycle: DISCOVERY_CYCLE },
  onOverrun: 'keep',
  setUp: (context) => new DiscoveryReader(context),
  metrics: { families: FAMILIES, write: writeMetrics },
  findings: (snapshot) => {
    const discovery = FABRIC_DISCOVERY.of(snapshot);
    return discovery?.topology ? addressConflictFindings(composeFabric(discovery.topology, undefined, undefined, discovery.shard)) : [];
  },
  failure: (snapshot, report) => {
    const discovery = FABRIC_DISCOVERY.of(snapshot);
    return discoveryFailure(composeFabric(discovery?.topology, undefined, undefined, { index: 1, count: 1 }), report);
  },
});
