// The cabling plan's and the rails' metrics, from a cabling report (model/cabling.ts): one part of
// the exposition of their own, rendered again only when the report changes (once per ports cycle
// or discovery, never per scrape). Without a plan and without rails the report is undefined and
// nothing is written: no series exists. Node and port series are those of this instance's shard
// (a cable by the node of its first label, a rail violation by the adapter's node); the count of
// missing plan nodes is fabric-wide, as the duplicate counts.
import { atOnce, pacer, type Work } from '../../../event-loop/time-slices.js';
import type { CablingReport } from '../../../model/cabling.js';
import { inShard, type Shard } from '../../../model/fabric.js';
import type { MetricSpec } from '../../../exposition/metric-spec.js';
import type { ExpositionBuffer } from '../../../exposition/buffer.js';
import { Samples } from '../../../exposition/samples.js';

const CABLE = ['node_guid', 'port', 'peer_guid', 'peer_port'] as const;

const gauge = (name: string, labels: readonly string[], help: string): MetricSpec => ({ name, type: 'gauge', labels, help });

/** The families, in the order they are written. */
export const CABLING_METRICS = {
  plannedLinkStatus: gauge(
    'infiniband_fabric_planned_link_status',
    CABLE,
    "Each cable of the cabling plan (--fabric.topology-file), labelled by its ends as the plan writes them: 0 as planned, 1 no link (not plugged in, broken, or a node of it missing), 2 connected elsewhere (an end is cabled to another port: check --collector.fabric and /fabric say which cable to move where), 3 up as planned but below the plan's width or speed.",
  ),
  unplannedLinkInfo: gauge(
    'infiniband_fabric_unplanned_link_info',
    CABLE,
    'A cable the cabling plan does not have (value always 1), switch end first: on a port the plan has another cable for (a misplaced cable shows here where it is, and as status 2 of its planned cable), or between two nodes of the plan.',
  ),
  planNodesMissing: gauge(
    'infiniband_fabric_plan_nodes_missing',
    [],
    'Nodes the cabling plan names that the fabric does not have: powered off, not installed yet, every cable unplugged, or (a switch) failed. 0 when every node of the plan is there.',
  ),
  railViolation: gauge(
    'infiniband_fabric_rail_violation',
    ['node_guid', 'port', 'rail', 'peer_guid', 'peer_port', 'peer_rail'],
    'Present (value 1) only while a host adapter (node_guid, port) of a rail-optimised fabric is cabled to a switch of another rail (peer_guid, peer_port, of rail peer_rail; empty when that switch is of no rail): its rail traffic crosses the spines. Rails from fabric.rails, else inferred from where most hosts cable each adapter.',
  ),
} as const;

export const CABLING_METRIC_ORDER: readonly MetricSpec[] = Object.values(CABLING_METRICS);

/** The samples of a cabling report for this instance's shard; none without a report. */
export function cablingSamples(report: CablingReport | undefined, shard: Shard): Samples {
  return atOnce(cablingSamplesSteps(report, shard));
}

/** The same, as work that may pause (a plan of an AI-cluster fabric has 120 000 cables). */
function* cablingSamplesSteps(report: CablingReport | undefined, shard: Shard): Work<Samples> {
  const pace = pacer();
  const samples = new Samples();
  const conformance = report?.conformance;
  if (conformance) {
    for (const link of conformance.links) {
      if (pace()) yield;
      const [a, b] = link.cable.ends;
      // A cable with a node no name resolved has no GUID to label it: it counts in plan_nodes_missing.
      if (a.nodeGuid === undefined || b.nodeGuid === undefined || !inShard(a.nodeGuid, shard)) continue;
      samples.add(
        CABLING_METRICS.plannedLinkStatus,
        { node_guid: a.nodeGuid, port: String(a.port), peer_guid: b.nodeGuid, peer_port: String(b.port) },
        link.status,
      );
    }
    for (const {
      ends: [a, b],
    } of conformance.unplanned) {
      if (pace()) yield;
      if (!inShard(a.nodeGuid, shard)) continue;
      samples.add(
        CABLING_METRICS.unplannedLinkInfo,
        { node_guid: a.nodeGuid, port: String(a.port), peer_guid: b.nodeGuid, peer_port: String(b.port) },
        1,
      );
    }
    // The fabric's count, served once: by shard 1.
    if (shard.index === 1) samples.add(CABLING_METRICS.planNodesMissing, {}, conformance.missingNodes.length);
  }
  for (const violation of report?.rails?.violations ?? []) {
    if (!inShard(violation.adapter.nodeGuid, shard)) continue;
    samples.add(
      CABLING_METRICS.railViolation,
      {
        node_guid: violation.adapter.nodeGuid,
        port: String(violation.adapter.port),
        rail: violation.rail,
        peer_guid: violation.leaf.nodeGuid,
        peer_port: String(violation.leaf.port),
        peer_rail: violation.leafRail,
      },
      1,
    );
  }
  return samples;
}

/**
 * Write the cabling families of `report` into `out` (a part of /metrics): byte for byte what a
 * prom-client registry renders for the same samples (rail names from the config file are escaped).
 */
export function writeCablingMetrics(report: CablingReport | undefined, shard: Shard, out: ExpositionBuffer): void {
  atOnce(writeCablingMetricsSteps(report, shard, out));
}

/** The same, as work that may pause. */
export function* writeCablingMetricsSteps(report: CablingReport | undefined, shard: Shard, out: ExpositionBuffer): Work<void> {
  yield* (yield* cablingSamplesSteps(report, shard)).writeSteps(CABLING_METRIC_ORDER, out);
}
