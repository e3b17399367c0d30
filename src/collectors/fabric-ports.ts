// The fabric_ports collector: every --fabric.interval, the state, width, speed, peer and PMA
// counters of every switch port of this instance's shard (CA ports too with --fabric.hca-ports),
// through the last discovery's topology, and what each link should run at. It writes the fabric
// port families (about 31 series per switch port, 170 000 at 1 900 nodes) and judges ports and links.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Section, Settings } from '../config/flags.js';
import type { ExpositionBuffer } from '../exposition/buffer.js';
import { counter, gauge, type MetricSpec } from '../exposition/metric-spec.js';
import { FamilyWriter } from '../exposition/samples.js';
import { FabricExpectationRules, type FabricExpectationRule, type LinkEnd } from '../model/expectations.js';
import type { LinkExpectation } from '../model/link-rate.js';
import { composeFabric, fabricPortKey, inShard, type FabricPortReading, type FabricTopology, type PortAddress } from '../model/fabric.js';
import { assessLink } from '../model/link-degradation.js';
import { BYTES_PER_GIGABIT, LANE_RATES, bestCommonEnabled, type LinkSpeed } from '../model/link-rate.js';
import { PMA_COUNTERS } from '../model/pma-counters.js';
import type { Snapshot } from '../model/snapshot.js';
import type { CounterSource } from '../sources/fabric/ports.js';
import { defineCollector, type Collector, type CollectorContext, type Cycle, type Reader, type Reading } from './collector.js';
import { DIAG_TIMEOUT } from './diag.js';
import { FABRIC_DISCOVERY, DISCOVERY_CYCLE } from './fabric-discovery.js';
import { FABRIC_EXPECTATIONS_SECTION } from './expectation-sections.js';
import { FABRIC_FLAGS, FABRIC_HCA_PORTS, FABRIC_INTERVAL, FABRIC_SHARD, FABRIC_SWITCH, fabricRunner } from './fabric.js';
import { PORTS_FAILURE, portFindings } from './fabric-findings.js';

/** `fabric.expectations` in the config file: what fabric links should run at, first match wins. */
export const FABRIC_EXPECTATIONS: Section<readonly FabricExpectationRule[]> = FABRIC_EXPECTATIONS_SECTION;

export interface FabricPortsPart {
  /** The last cycle's readings, by `fabricPortKey` (this instance's shard only). */
  ports: ReadonlyMap<string, FabricPortReading>;
  /** What each read port's link should run at: a config expectation or the best both ends enable. */
  expectations: ReadonlyMap<string, LinkExpectation>;
}

export const FABRIC_PORTS_CYCLE: Cycle = {
  name: 'fabric ports',
  interval: (settings) => settings.get(FABRIC_INTERVAL),
  // Two commands in a row (the scan beside the sweeps, then perfquery where they cannot run).
  deadline: (settings) => Math.max(settings.get(FABRIC_INTERVAL), 2 * settings.get(DIAG_TIMEOUT) + 1000),
  // It reads through a topology: it starts once the first discovery is over.
  after: { cycle: DISCOVERY_CYCLE, fresh: false },
};

class PortsReader implements Reader<FabricPortsPart> {
  private counterSource: CounterSource = 'sweep';
  /** Nodes the last scan did not see at their discovered LID; cleared by each discovery. */
  private unreachable: ReadonlySet<string> = new Set();
  private topology: FabricTopology | undefined;
  private readonly rules: FabricExpectationRules;
  private expectationCache: { topology: FabricTopology; expectations: ReadonlyMap<string, LinkExpectation> } | undefined;
  private scratch: string | undefined;

  constructor(private readonly context: CollectorContext) {
    this.rules = new FabricExpectationRules(context.settings.section(FABRIC_EXPECTATIONS));
  }

  async read(snapshot: Snapshot, signal: AbortSignal): Promise<Reading<FabricPortsPart>> {
    const { settings, logger } = this.context;
    const discovery = FABRIC_DISCOVERY.of(snapshot);
    const { interval } = FABRIC_PORTS_CYCLE;
    if (!discovery?.topology) {
      // Without a topology, try again at each ports cycle rather than wait for the discovery interval.
      this.context.runSoon(FABRIC_DISCOVERY, interval(settings));
      return { errors: [{ item: 'topology', message: 'no discovery has succeeded yet: nothing to read' }], failOnErrors: true };
    }
    if (discovery.topology !== this.topology) {
      // The sweeps are tried again after each discovery.
      this.topology = discovery.topology;
      this.counterSource = 'sweep';
      this.unreachable = new Set();
    }
    const [{ FabricCycle }, { readFabricPorts }] = await Promise.all([import('../sources/fabric/commands.js'), import('../sources/fabric/ports.js')]);
    this.scratch ??= await mkdtemp(path.join(tmpdir(), 'infiniband-exporter-ports-'));
    const cycle = new FabricCycle({ runner: fabricRunner(this.context), timeoutMs: settings.get(DIAG_TIMEOUT), signal });
    const shard = settings.get(FABRIC_SHARD);
    const reading = await readFabricPorts(cycle, {
      counterSource: this.counterSource,
      unreachable: this.unreachable,
      topology: discovery.topology,
      cache: discovery.cache,
      covers: (node) => inShard(node.guid, shard),
      hcaPorts: settings.get(FABRIC_HCA_PORTS),
      scratch: this.scratch,
    });
    if (signal.aborted) return {};
    if (reading.counterSource !== this.counterSource) {
      logger.warn('ibqueryerrors cannot run here: reading counters switch by switch with perfquery until the next discovery');
    }
    this.counterSource = reading.counterSource;
    this.unreachable = reading.unreachable;
    // New or vanished nodes, new LIDs, cables moved: discover again now rather than at the next interval.
    if (reading.stale && this.context.runSoon(FABRIC_DISCOVERY, interval(settings))) logger.info('fabric changed since the last discovery; discovering again');
    // A topology that may not be the fabric as it is: discover again at each ports cycle until one is taken.
    else if (discovery.provisional) this.context.runSoon(FABRIC_DISCOVERY, interval(settings));
    const report = cycle.report();
    return {
      part: { ports: reading.ports, expectations: this.expectationsOf(discovery.topology, reading.ports) },
      errors: report.errors,
      failOnErrors: report.failed,
      timeouts: report.timeouts,
      read: report.read,
    };
  }

  /** What each read port's link should run at: the first config rule matching either end, else the best both ends enable. */
  private expectationsOf(topology: FabricTopology, ports: ReadonlyMap<string, FabricPortReading>): Map<string, LinkExpectation> {
    const expectations = new Map<string, LinkExpectation>();
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

  async close(): Promise<void> {
    if (this.scratch !== undefined) await rm(this.scratch, { recursive: true, force: true });
  }
}

// ---- metrics ------------------------------------------------------------------------------

const FABRIC_PORT = ['node_guid', 'port'] as const;

export const PORT_METRICS = {
  stateId: gauge('infiniband_fabric_port_state_id', FABRIC_PORT,
    'Logical state of a fabric port, numbered as the kernel numbers host ports: 1 DOWN (no link), 2 INIT (link up, but no subnet manager configured it), 3 ARMED, 4 ACTIVE. Down ports stay listed: a pulled cable shows as 1 here, not as a missing series.'),
  physicalStateId: gauge('infiniband_fabric_port_physical_state_id', FABRIC_PORT,
    'Physical state of a fabric port: 1 Sleep, 2 Polling (no cable, or nobody at the other end), 3 Disabled (switched off by management), 4 PortConfigurationTraining, 5 LinkUp, 6 LinkErrorRecovery, 7 PhyTest.'),
  rate: gauge('infiniband_fabric_port_rate_bytes_per_second', FABRIC_PORT,
    'Nominal rate of a fabric port\'s link: width x lane rate (Gb/s x 1e9 / 8, as for host ports). Absent while the port is down.'),
  widthLanes: gauge('infiniband_fabric_port_link_width_lanes', FABRIC_PORT, 'Active width of a fabric port\'s link in lanes (1, 2, 4, 8 or 12). Absent while the port is down.'),
  laneRate: gauge('infiniband_fabric_port_lane_rate_bytes_per_second', FABRIC_PORT,
    'Nominal rate of one lane at the active speed (SDR 2.5, DDR 5, QDR 10, FDR10 10, FDR 14, EDR 25, HDR 50, NDR 100, XDR 200 Gb/s). Absent while the port is down.'),
  widthExpected: gauge('infiniband_fabric_port_link_width_expected_lanes', FABRIC_PORT,
    'Width the link should run at: from fabric.expectations in the config file (first rule matching either end), else the widest both ends enable (PortInfo LinkWidthEnabled, from discovery). Absent when unknown.'),
  laneRateExpected: gauge('infiniband_fabric_port_lane_rate_expected_bytes_per_second', FABRIC_PORT,
    'Lane rate the link should run at: from fabric.expectations in the config file, else the fastest speed both ends enable (PortInfo LinkSpeed(Ext)Enabled). Absent when unknown.'),
  degraded: gauge('infiniband_fabric_port_link_degraded', [...FABRIC_PORT, 'reason'],
    '1 when a fabric link trained below its expected width (reason="width") or speed (reason="speed"): a damaged cable, transceiver or port. Set on both ends of an inter-switch link. Present while the link is up and an expectation exists.'),
  linkInfo: gauge('infiniband_fabric_link_info', [...FABRIC_PORT, 'peer_guid', 'peer_port', 'peer_type'],
    'The port at the other end of a fabric port\'s cable (value always 1): its node GUID, port number and node type (switch, ca, router). Switch ports as last read; CA ports as last discovered.'),
  pmaSaturated: gauge('infiniband_fabric_port_pma_saturated', [...FABRIC_PORT, 'counter'],
    'Present (value 1) only while a fixed-width PMA counter of a fabric port sits at its maximum: it no longer counts and new errors are invisible until it is reset (perfquery -R).'),
} as const;

/** PMA counters of fabric ports: the host contract's names under infiniband_fabric_port_. */
export const PMA_COUNTER_METRICS: ReadonlyMap<string, MetricSpec> = new Map(
  PMA_COUNTERS.map((c) => [c.name, counter(`infiniband_fabric_port_${c.name}_total`, FABRIC_PORT, `Of a fabric port: ${c.help}`)]),
);

const M = PORT_METRICS;
const FAMILIES: readonly MetricSpec[] = [
  M.stateId, M.physicalStateId, M.rate, M.widthLanes, M.laneRate, M.widthExpected, M.laneRateExpected, M.degraded, M.linkInfo,
  ...PMA_COUNTER_METRICS.values(),
  M.pmaSaturated,
];

const rateOf = (speed: LinkSpeed | undefined): number | undefined => (speed === undefined ? undefined : LANE_RATES[speed].nominalGbps * BYTES_PER_GIGABIT);

/**
 * Every read port, and the cables of ports that are not read (CA ports without --fabric.hca-ports)
 * as discovered: family by family, port by port, in the order `Samples` would give. The label
 * values here are GUIDs as the parsers normalise them, port numbers and fixed words: nothing to
 * escape.
 */
function writeMetrics(snapshot: Snapshot, out: ExpositionBuffer, _settings: Settings): void {
  const part = FABRIC_PORTS.of(snapshot);
  const discovery = FABRIC_DISCOVERY.of(snapshot);
  if (!part) return;
  const topology = discovery?.topology;
  const readings = [...part.ports.values()];
  const expectations = [...part.ports.keys()].map((key) => part.expectations.get(key));
  // One label set per port, shared by its 31 families.
  const labels = readings.map((reading) => `{node_guid="${reading.nodeGuid}",port="${reading.port}"`);
  const each = (spec: MetricSpec, value: (reading: FabricPortReading, i: number) => number | undefined): void => {
    const family = new FamilyWriter(out, spec);
    readings.forEach((reading, i) => family.sample(labels[i]!, '', value(reading, i)));
  };
  each(M.stateId, (reading) => reading.state?.id);
  each(M.physicalStateId, (reading) => reading.physicalState?.id);
  each(M.rate, ({ width, speed }) => (width !== undefined && speed !== undefined ? width * rateOf(speed)! : undefined));
  each(M.widthLanes, (reading) => reading.width);
  each(M.laneRate, (reading) => rateOf(reading.speed));
  each(M.widthExpected, (_, i) => expectations[i]?.width);
  each(M.laneRateExpected, (_, i) => rateOf(expectations[i]?.speed));
  const degraded = new FamilyWriter(out, M.degraded);
  readings.forEach((reading, i) => {
    const expectation = expectations[i];
    if (!expectation) return;
    const assessment = assessLink(reading, expectation);
    if (assessment.widthDegraded !== undefined) degraded.sample(labels[i]!, ',reason="width"', assessment.widthDegraded ? 1 : 0);
    if (assessment.speedDegraded !== undefined) degraded.sample(labels[i]!, ',reason="speed"', assessment.speedDegraded ? 1 : 0);
  });
  const links = new FamilyWriter(out, M.linkInfo);
  const peerLabels = (peer: PortAddress): string => `,peer_guid="${peer.nodeGuid}",peer_port="${peer.port}",peer_type="${topology?.nodes.get(peer.nodeGuid)?.type ?? ''}"`;
  readings.forEach((reading, i) => {
    if (reading.peer) links.sample(labels[i]!, peerLabels(reading.peer), 1);
  });
  if (topology && discovery) {
    for (const [key, port] of topology.ports) {
      if (!port.peer || part.ports.has(key) || topology.nodes.get(port.nodeGuid)?.type === 'switch' || !inShard(port.nodeGuid, discovery.shard)) continue;
      links.sample(`{node_guid="${port.nodeGuid}",port="${port.port}"`, peerLabels(port.peer), 1);
    }
  }
  for (const [name, spec] of PMA_COUNTER_METRICS) {
    const family = new FamilyWriter(out, spec);
    // Indexed loops: without the optimising compilers a for-of makes an iterator result per step
    // (2.4 million here, 100 MiB of garbage per render).
    for (let i = 0; i < readings.length; i++) {
      const counters = readings[i]!.counters;
      for (let c = 0; c < counters.length; c++) if (counters[c]!.name === name) family.sample(labels[i]!, '', counters[c]!.value);
    }
  }
  const saturated = new FamilyWriter(out, M.pmaSaturated);
  readings.forEach((reading, i) => {
    for (const value of reading.counters) if (value.saturated) saturated.sample(labels[i]!, `,counter="${value.name}"`, 1);
  });
}

export const FABRIC_PORTS: Collector<FabricPortsPart> = defineCollector({
  name: 'fabric_ports',
  checks: 'the fabric\'s ports and links',
  enabledBy: FABRIC_SWITCH,
  flags: FABRIC_FLAGS,
  sections: [FABRIC_EXPECTATIONS],
  scope: 'fabric',
  schedule: { cycle: FABRIC_PORTS_CYCLE },
  onOverrun: 'drop',
  setUp: (context) => new PortsReader(context),
  metrics: { families: FAMILIES, inputs: [FABRIC_DISCOVERY], write: writeMetrics },
  findings: (snapshot) => {
    const part = FABRIC_PORTS.of(snapshot);
    const discovery = FABRIC_DISCOVERY.of(snapshot);
    return part && discovery?.topology ? portFindings(composeFabric(discovery.topology, part, undefined, discovery.shard)) : [];
  },
  // Without a topology the ports cycle has nothing to read: the discovery finding says why.
  failure: (snapshot) => (FABRIC_DISCOVERY.of(snapshot)?.topology ? PORTS_FAILURE : undefined),
});
