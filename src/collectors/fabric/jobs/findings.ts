// What the jobs collector judges: each impaired link of a running job's footprint, naming the
// jobs it carries (id, user, name, and the job's hosts on it for an adapter link), as the alert
// InfiniBandJobNetworkImpaired says it per job.
import { pacer, type Work } from '../../../event-loop/time-slices.js';
import { composeFabric } from '../../../model/fabric.js';
import { fabricPortName, portPhrase } from '../../../model/fabric-names.js';
import { plural, type CollectorFailure, type Finding } from '../../../model/finding.js';
import type { FootprintLink, JobOnFabric } from '../../../model/job-footprint.js';
import { jobLinkCountsSteps, type ImpairmentReason } from '../../../model/job-links.js';
import type { Snapshot } from '../../../model/snapshot.js';
import { FABRIC_DISCOVERY_PART, FABRIC_PORTS_PART, JOBS_PART } from '../../parts.js';
import { linkEvidence } from './metrics.js';

/** At most this many jobs are named in one finding; the rest are counted. */
const NAMED_JOBS = 5;

/** `48213 (alice, train-llm, host node11)`: the job, and its host on the link for an adapter link. */
function jobText(placed: JobOnFabric, host: string | undefined): string {
  const { job } = placed;
  const words = [job.user, job.name, host && `host ${host}`].filter(Boolean);
  return words.length > 0 ? `${job.id} (${words.join(', ')})` : job.id;
}

/** The jobs' impaired links, each a finding; a pause between jobs. */
export function* jobFindings(snapshot: Snapshot): Work<Finding[]> {
  const part = JOBS_PART.of(snapshot);
  if (!part || part.jobs.length === 0) return [];
  const discovery = FABRIC_DISCOVERY_PART.of(snapshot);
  const fabric = composeFabric(discovery?.topology, FABRIC_PORTS_PART.of(snapshot), undefined, part.shard);
  const evidence = linkEvidence(snapshot, part);
  const byLink = new Map<string, { link: FootprintLink; reasons: ImpairmentReason[]; jobs: string[] }>();
  const pace = pacer(64);
  for (const placed of part.jobs) {
    if (pace()) yield;
    const counts = yield* jobLinkCountsSteps(placed, evidence);
    for (const { link, reasons } of [...counts.host.impairedLinks, ...counts.switch.impairedLinks]) {
      let entry = byLink.get(link.key);
      if (!entry) byLink.set(link.key, (entry = { link, reasons, jobs: [] }));
      const host = link.scope === 'host' ? placed.adapters.get(link.peer.nodeGuid) : undefined;
      entry.jobs.push(jobText(placed, host));
    }
  }
  return [...byLink.values()].map(({ link, reasons, jobs }): Finding => {
    const owner = fabricPortName(fabric, link.owner);
    const peer = fabricPortName(fabric, link.peer);
    const named = jobs.slice(0, NAMED_JOBS).join(', ');
    const more = jobs.length > NAMED_JOBS ? ` and ${jobs.length - NAMED_JOBS} more` : '';
    return {
      condition: 'job-link-impaired',
      severity: 'warning',
      subject: { kind: 'fabric-port', node: owner.node, port: owner.port, peer },
      summary: `the ${link.scope === 'host' ? 'adapter' : 'inter-switch'} link ${portPhrase(owner)} – ${portPhrase(peer)} is ${reasons.join(', ')} and carries ${plural(jobs.length, 'running job')}: ${named}${more}`,
      meaning:
        "Every collective operation of these jobs waits on their slowest link: a down, degraded, erroring, congested or miswired link in a job's footprint slows the whole job, or moves its traffic onto fewer links.",
      cause:
        'A cable, transceiver or port going bad (errors, a lower width or speed), a cable pulled or moved, while jobs were placed across it.',
      remedy:
        'fix the link as its own finding says; if it cannot be fixed now, drain the hosts or the link (scontrol update nodename=<host> state=drain reason="IB link") so that new jobs avoid it',
      runbook: 'infinibandjobnetworkimpaired',
      alert: 'InfiniBandJobNetworkImpaired',
    };
  });
}

export const JOBS_FAILURE: CollectorFailure = {
  consequence: 'the running jobs were not read: the job series and the jobs a bad link carries are out of date',
  meaning: 'The fabric is watched as before; only which jobs run over which links is not known.',
  cause:
    'squeue failed (the Slurm controller is down or unreachable, munge not running on this host, squeue past its time limit) or --jobs.file could not be read or no longer parses (the read errors say which line).',
};
