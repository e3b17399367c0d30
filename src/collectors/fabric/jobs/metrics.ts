// The jobs collector's families. Identity and hosts from shard 1 alone (as the fabric-wide
// counts); links, impairments and congestion from every shard over the links it reports, which the
// recording rules join (infiniband:job_links_impaired:sum, infiniband:job_congestion:max and
// :mean): two shards give the figures of one process.
import { pacer, type Work } from '../../../event-loop/time-slices.js';
import { escapeLabelValue, type ExpositionBuffer } from '../../../exposition/buffer.js';
import { gauge, type MetricSpec } from '../../../exposition/metric-spec.js';
import { FamilyWriter } from '../../../exposition/samples.js';
import {
  FOOTPRINT_SCOPES,
  IMPAIRMENT_REASONS,
  jobLinkCountsSteps,
  miswiredPorts,
  type LinkEvidence,
  type ScopeCounts,
} from '../../../model/job-links.js';
import type { Snapshot } from '../../../model/snapshot.js';
import { FABRIC_CABLING_PART, FABRIC_PORTS_PART, JOBS_PART } from '../../parts.js';
import type { FootprintLink, JobsPart } from '../../../model/job-footprint.js';

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

/**
 * The jobs' series, written as they come, one family after the other: no label object per series
 * (at 2 000 jobs, 41 000 of them, each kept in a weak map for its formatted text, made the young
 * generation's collections long enough to hold the event loop). A pause every few dozen jobs.
 */
export function* writeMetrics(snapshot: Snapshot, out: ExpositionBuffer): Work<void> {
  const part = JOBS_PART.of(snapshot);
  if (!part) return;
  const evidence = linkEvidence(snapshot, part);
  const pace = pacer(64);
  const counts: Record<FootprintLink['scope'], ScopeCounts>[] = [];
  /** Each job's label set up to its first label: `{job_id="48213"`. */
  const jobLabels: string[] = [];
  for (const placed of part.jobs) {
    if (pace()) yield;
    counts.push(yield* jobLinkCountsSteps(placed, evidence));
    jobLabels.push(`{job_id="${escapeLabelValue(placed.job.id)}"`);
  }
  const jobs = part.jobs;
  if (part.shard.index === 1) {
    const info = new FamilyWriter(out, JOB_METRICS.info);
    for (const [i, { job }] of jobs.entries()) {
      if (pace()) yield;
      const rest = `,user="${escapeLabelValue(job.user)}",partition="${escapeLabelValue(job.partition)}",name="${escapeLabelValue(job.name)}"`;
      info.sample(jobLabels[i]!, rest, 1);
    }
    const hosts = new FamilyWriter(out, JOB_METRICS.hosts);
    for (const [i, placed] of jobs.entries()) {
      if (pace()) yield;
      hosts.sample(jobLabels[i]!, ',state="on_fabric"', placed.onFabric.length);
      hosts.sample(jobLabels[i]!, ',state="not_found"', placed.notFound.length);
    }
  }
  const perScope = function* (spec: MetricSpec, value: (scope: ScopeCounts) => number): Work<void> {
    const family = new FamilyWriter(out, spec);
    for (let i = 0; i < jobs.length; i++) {
      if (pace()) yield;
      for (const scope of FOOTPRINT_SCOPES) family.sample(jobLabels[i]!, SCOPE_LABELS[scope], value(counts[i]![scope]));
    }
  };
  yield* perScope(JOB_METRICS.links, (scope) => scope.links);
  const impaired = new FamilyWriter(out, JOB_METRICS.linksImpaired);
  for (let i = 0; i < jobs.length; i++) {
    if (pace()) yield;
    for (const scope of FOOTPRINT_SCOPES)
      for (const reason of IMPAIRMENT_REASONS)
        impaired.sample(jobLabels[i]!, `${SCOPE_LABELS[scope]},reason="${reason}"`, counts[i]![scope].impaired[reason]);
  }
  yield* perScope(JOB_METRICS.congestionMax, (scope) => scope.congestionMax);
  yield* perScope(JOB_METRICS.congestionSum, (scope) => scope.congestionSum);
}

const SCOPE_LABELS: Record<FootprintLink['scope'], string> = { host: ',scope="host"', switch: ',scope="switch"' };
