// The fabric_ports collector's reader: the ports cycle through the last discovery's topology, the
// expectation of each link, and what changed since the last cycle.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Section } from '../../../config/flags.js';
import { inSlices, pacer, type Work } from '../../../event-loop/time-slices.js';
import { FabricExpectationRules, type FabricExpectationRule, type LinkEnd } from '../../../model/expectations.js';
import type { LinkExpectation } from '../../../model/link-rate.js';
import { fabricPortKey, inShard, type FabricPortReading, type FabricTopology, type PortAddress } from '../../../model/fabric.js';
import type { PortReadings } from '../../../model/port-readings.js';
import { bestCommonEnabled } from '../../../model/link-rate.js';
import { PMA_COUNTERS } from '../../../model/pma-counters.js';
import { BIT_ERROR_RATE_THRESHOLD, bitErrorRate } from '../../../model/bit-error-rate.js';
import type { Snapshot } from '../../../model/snapshot.js';
import { CongestionWalk } from './congestion.js';
import type { CounterSource } from '../../../sources/fabric/ports.js';
import type { CollectorContext, Reader, Reading } from '../../../collection/collector.js';
import { DIAG_TIMEOUT } from '../../infiniband-diags.js';
import { FABRIC_DISCOVERY_PART, type FabricPortsPart, type PortTrend } from '../../parts.js';
import { FABRIC_EXPECTATIONS_SECTION } from '../../expectation-sections.js';
import { DISCOVERY_CYCLE, FABRIC_HCA_PORTS, FABRIC_PORTS_CYCLE, FABRIC_SHARD, fabricRunner } from '../fabric-mode.js';
/** `fabric.expectations` in the config file: what fabric links should run at, first match wins. */
export const FABRIC_EXPECTATIONS: Section<readonly FabricExpectationRule[]> = FABRIC_EXPECTATIONS_SECTION;

const ERROR_COUNTERS = new Set(PMA_COUNTERS.filter((counter) => counter.error).map((counter) => counter.name));

/** What changed between two cycles' readings `seconds` apart (see FabricPortsPart.trend). */
export function* portTrend(
  before: ReadonlyMap<string, FabricPortReading> | undefined,
  after: ReadonlyMap<string, FabricPortReading>,
  seconds: number,
  congestion?: CongestionWalk,
): Work<PortTrend> {
  const risingErrors = new Set<string>();
  const berOverThreshold = new Set<string>();
  const pace = pacer(64);
  for (const [key, reading] of after) {
    if (pace()) yield;
    const earlier = before?.get(key);
    // In the same walk: congestion needs a tick for each port read, even without a cycle before.
    congestion?.port(key, reading, earlier);
    if (!earlier) continue;
    const counters = reading.counters;
    for (let c = 0; c < counters.length; c++) {
      const name = counters.name(c);
      if (!ERROR_COUNTERS.has(name)) continue;
      // The same counters in the same order nearly always: looked up by name only when not.
      const was = earlier.counters.names === counters.names ? earlier.counters.value(c) : earlier.counters.get(name);
      const value = counters.value(c);
      // A counter that went down was reset: no rise, no rate.
      if (was === undefined || value <= was) continue;
      risingErrors.add(key);
      if (name !== 'symbol_errors' || reading.width === undefined || reading.speed === undefined) continue;
      const ber = bitErrorRate(value - was, reading.width, reading.speed, seconds);
      if (ber !== undefined && ber > BIT_ERROR_RATE_THRESHOLD) berOverThreshold.add(key);
    }
  }
  return { risingErrors, berOverThreshold };
}

export class PortsReader implements Reader<FabricPortsPart> {
  private counterSource: CounterSource = 'sweep';
  /** Nodes the last scan did not see at their discovered LID; cleared by each discovery. */
  private unreachable: ReadonlySet<string> = new Set();
  private topology: FabricTopology | undefined;
  private readonly rules: FabricExpectationRules;
  /** What each port read so far should run at for the cable discovery saw (null: nothing known), per topology. */
  private expectationCache: { topology: FabricTopology; expectations: Map<string, LinkExpectation | null> } | undefined;
  private scratch: string | undefined;
  /** Each switch's tier, worked out once per topology. */
  /** The last cycle's readings and when they were read (ms), for the trend. */
  private last: { ports: PortReadings; at: number } | undefined;

  constructor(private readonly context: CollectorContext) {
    this.rules = new FabricExpectationRules(context.settings.section(FABRIC_EXPECTATIONS));
  }

  async read(snapshot: Snapshot, signal: AbortSignal): Promise<Reading<FabricPortsPart>> {
    const { settings, logger } = this.context;
    const discovery = FABRIC_DISCOVERY_PART.of(snapshot);
    const { interval } = FABRIC_PORTS_CYCLE;
    if (!discovery?.topology) {
      // Without a topology, try again at each ports cycle rather than wait for the discovery interval.
      this.context.runSoon(DISCOVERY_CYCLE, interval(settings));
      return { errors: [{ item: 'topology', message: 'no discovery has succeeded yet: nothing to read' }], failOnErrors: true };
    }
    if (discovery.topology !== this.topology) {
      // The sweeps are tried again after each discovery.
      this.topology = discovery.topology;
      this.counterSource = 'sweep';
      this.unreachable = new Set();
    }
    const [{ FabricCycle }, { readFabricPorts }] = await Promise.all([
      import('../../../sources/fabric/commands.js'),
      import('../../../sources/fabric/ports.js'),
    ]);
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
      previous: this.last?.ports,
    });
    if (signal.aborted) return {};
    if (reading.counterSource !== this.counterSource) {
      logger.warn('ibqueryerrors cannot run here: reading counters switch by switch with perfquery until the next discovery');
    }
    this.counterSource = reading.counterSource;
    this.unreachable = reading.unreachable;
    // New or vanished nodes, new LIDs, cables moved: discover again now rather than at the next interval.
    if (reading.stale && this.context.runSoon(DISCOVERY_CYCLE, interval(settings)))
      logger.info('fabric changed since the last discovery; discovering again');
    // A topology that may not be the fabric as it is: discover again at each ports cycle until one is taken.
    else if (discovery.provisional) this.context.runSoon(DISCOVERY_CYCLE, interval(settings));
    const report = cycle.report();
    const at = this.context.now();
    const seconds = this.last ? (at - this.last.at) / 1000 : 0;
    const walk = new CongestionWalk(discovery.topology, discovery.tiers, discovery.ticks, seconds);
    const trend = await inSlices(portTrend(this.last?.ports, reading.ports, seconds, walk));
    const congestion = walk.done();
    this.last = { ports: reading.ports, at };
    const expectations = await inSlices(this.expectationsOf(discovery.topology, reading.ports));
    return {
      part: { ports: reading.ports, expectations, trend, congestion },
      errors: report.errors,
      failOnErrors: report.failed,
      timeouts: report.timeouts,
      read: report.read,
    };
  }

  /** What each read port's link should run at: the first config rule matching either end, else the best both ends enable. */
  private *expectationsOf(topology: FabricTopology, ports: ReadonlyMap<string, FabricPortReading>): Work<Map<string, LinkExpectation>> {
    if (this.expectationCache?.topology !== topology) this.expectationCache = { topology, expectations: new Map() };
    const discovered = this.expectationCache.expectations;
    const expectations = new Map<string, LinkExpectation>();
    const pace = pacer(64);
    for (const [key, reading] of ports) {
      if (pace()) yield;
      const cabled = topology.ports.get(key)?.peer;
      const peer = reading.peer ?? cabled;
      let expectation: LinkExpectation | null | undefined;
      if (peer?.nodeGuid === cabled?.nodeGuid && peer?.port === cabled?.port) {
        // The same cable as at discovery (nearly always): its expectation is worked out once per topology.
        expectation = discovered.get(key);
        if (expectation === undefined) discovered.set(key, (expectation = this.expectationOf(topology, reading, cabled) ?? null));
      } else {
        expectation = this.expectationOf(topology, reading, peer);
      }
      if (expectation) expectations.set(key, expectation);
    }
    return expectations;
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
