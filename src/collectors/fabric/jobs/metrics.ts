// The jobs collector's families. Identity and hosts from shard 1 alone (as the fabric-wide
// counts); links, impairments and congestion from every shard over the links it reports, which the
// recording rules join (infiniband:job_links_impaired:sum, infiniband:job_congestion:max and
// :mean): two shards give the figures of one process.
import { pacer, type Work } from '../../../event-loop/time-slices.js';
import type { ExpositionBuffer } from '../../../exposition/buffer.js';
import { gauge } from '../../../exposition/metric-spec.js';
import { Samples } from '../../../exposition/samples.js';
import { FOOTPRINT_SCOPES, IMPAIRMENT_REASONS, jobLinkCountsSteps, miswiredPorts, type LinkEvidence } from '../../../model/job-links.js';
import type { Snapshot } from '../../../model/snapshot.js';
import { FABRIC_CABLING_PART, FABRIC_PORTS_PART, JOBS_PART } from '../../parts.js';
import type { JobsPart } from '../../../model/job-footprint.js';

export const JOB_METRICS = {
  info: gauge(
    'infiniband_job_info',
    ['job_id', 'user', 'partition', 'name'],
    'A running job of the workload manager on at least --jobs.min-hosts hosts (value always 1), from squeue or --jobs.file; served by shard 1 only.',
  ),
  hosts: gauge(
    'infiniband_job_hosts',
    ['job_id', 'state'],
    'Hosts of a running job: on_fabric, matched to an adapter of the fabric; not_found, no adapter has that node-name-map name, NodeDescription host or fabric.host_pattern match (its links are not watched). Shard 1 only.',
  ),
  links: gauge(
    'infiniband_job_links',
    ['job_id', 'scope'],
    "Links of a job's footprint this shard reports: scope host, its adapters' links; scope switch, the inter-switch links on minimal-hop paths between its leaves. Sum over shards for the whole footprint.",
  ),
  linksImpaired: gauge(
    'infiniband_job_links_impaired',
    ['job_id', 'scope', 'reason'],
    "Links of a job's footprint that are down, degraded (below the expected width or speed), with rising error counters, over the BER threshold, congested (stalled at least 30 % of the time), or miswired (not where the cabling plan or the rails want them), in the last ports cycle; a link counts once per reason. Sum over shards (infiniband:job_links_impaired:sum).",
  ),
  congestionMax: gauge(
    'infiniband_job_congestion_ratio_max',
    ['job_id', 'scope'],
    "The most congested link of a job's footprint this shard reports: the fraction of the last ports cycle (0-1) it had data to send and could not (PortXmitWait), the worse of its two directions. 0.3 and above slows the job's collectives; max over shards (infiniband:job_congestion:max).",
  ),
  congestionSum: gauge(
    'infiniband_job_congestion_ratio_sum',
    ['job_id', 'scope'],
    "Sum over the links of a job's footprint this shard reports (those of infiniband_job_links) of the fraction of the last ports cycle each was stalled (0-1, the worse direction; 0 where not measured). Divided by infiniband_job_links, the mean: infiniband:job_congestion:mean.",
  ),
} as const;

export const FAMILIES = Object.values(JOB_METRICS);

/**
 * The evidence of each ports cycle (by its part), kept while the cabling, the shard and the jobs'
 * link numbering stay the same: a jobs reading between two ports cycles judges no link again and
 * counts only the jobs that changed.
 */
const evidenceByPorts = new WeakMap<object, { cabling: unknown; linkIds: object; shard: string; evidence: LinkEvidence }>();

/** What the last ports cycle and the cabling say of the fabric, for judging the jobs' links. */
export function linkEvidence(snapshot: Snapshot, jobs: JobsPart): LinkEvidence {
  const ports = FABRIC_PORTS_PART.of(snapshot);
  const cabling = FABRIC_CABLING_PART.of(snapshot);
  const kept = ports && evidenceByPorts.get(ports);
  const shard = `${jobs.shard.index}/${jobs.shard.count}`;
  if (kept && kept.cabling === cabling && kept.linkIds === jobs.linkIds && kept.shard === shard) return kept.evidence;
  const evidence: LinkEvidence = {
    ports: ports?.ports ?? new Map(),
    expectations: ports?.expectations ?? new Map(),
    risingErrors: ports?.trend.risingErrors ?? new Set(),
    berOverThreshold: ports?.trend.berOverThreshold ?? new Set(),
    miswired: miswiredPorts(cabling),
    congestion: ports?.congestion.ratios ?? new Map(),
    shard: jobs.shard,
    judged: [],
    counted: new WeakMap(),
  };
  if (ports) evidenceByPorts.set(ports, { cabling, linkIds: jobs.linkIds, shard, evidence });
  return evidence;
}

/** The jobs' series; a pause between jobs (2 000 jobs hold a million links between them). */
export function* writeMetrics(snapshot: Snapshot, out: ExpositionBuffer): Work<void> {
  const part = JOBS_PART.of(snapshot);
  if (!part) return;
  const samples = new Samples();
  const evidence = linkEvidence(snapshot, part);
  const first = part.shard.index === 1;
  const pace = pacer(64);
  for (const placed of part.jobs) {
    if (pace()) yield;
    const { job } = placed;
    if (first) {
      samples.add(JOB_METRICS.info, { job_id: job.id, user: job.user, partition: job.partition, name: job.name }, 1);
      samples.add(JOB_METRICS.hosts, { job_id: job.id, state: 'on_fabric' }, placed.onFabric.length);
      samples.add(JOB_METRICS.hosts, { job_id: job.id, state: 'not_found' }, placed.notFound.length);
    }
    const counts = yield* jobLinkCountsSteps(placed, evidence);
    for (const scope of FOOTPRINT_SCOPES) {
      samples.add(JOB_METRICS.links, { job_id: job.id, scope }, counts[scope].links);
      samples.add(JOB_METRICS.congestionMax, { job_id: job.id, scope }, counts[scope].congestionMax);
      samples.add(JOB_METRICS.congestionSum, { job_id: job.id, scope }, counts[scope].congestionSum);
      for (const reason of IMPAIRMENT_REASONS)
        samples.add(JOB_METRICS.linksImpaired, { job_id: job.id, scope, reason }, counts[scope].impaired[reason]);
    }
  }
  yield* samples.writeSteps(FAMILIES, out);
}
