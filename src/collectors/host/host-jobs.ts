// The host_jobs collector: on a compute host, the Slurm jobs running here, from the cgroup tree
// slurmd makes (--path.cgroup), as infiniband_host_job_info{job_id}, so that host dashboards and
// alerts can be filtered by job. Read with the host's devices; where the jobs' directories are is
// found once, then one directory listing per reading.
import { STRING, collectorSwitch, flag } from '../../config/flags.js';
import type { ExpositionBuffer } from '../../exposition/buffer.js';
import { gauge } from '../../exposition/metric-spec.js';
import { Samples } from '../../exposition/samples.js';
import type { Snapshot } from '../../model/snapshot.js';
import type { SlurmCgroupReader } from '../../sources/jobs/slurm-cgroup.js';
import { defineCollector, type Collector, type Reader, type Reading } from '../../collection/collector.js';
import { HOST_READING } from './host-reading.js';

export const HOST_JOBS_SWITCH = collectorSwitch(
  'host_jobs',
  'host_jobs',
  true,
  'The Slurm jobs running on this host, from their cgroups (--path.cgroup): infiniband_host_job_info{job_id}.',
);
export const CGROUP_PATH = flag(STRING, {
  name: 'path.cgroup',
  key: 'path.cgroup',
  default: '/sys/fs/cgroup',
  help: "cgroup mount point (/host/sys/fs/cgroup in a container), where slurmd makes its jobs' cgroups.",
  check: true,
});

export interface HostJobsPart {
  jobs: readonly string[];
}

class HostJobsReader implements Reader<HostJobsPart> {
  private source: SlurmCgroupReader | undefined;

  constructor(private readonly root: string) {}

  async read(): Promise<Reading<HostJobsPart>> {
    this.source ??= new (await import('../../sources/jobs/slurm-cgroup.js')).SlurmCgroupReader(this.root);
    const { jobs, errors } = this.source.read();
    return { part: { jobs }, errors };
  }
}

const HOST_JOB_INFO = gauge(
  'infiniband_host_job_info',
  ['job_id'],
  "A Slurm job running on this host (value always 1), from its cgroup under --path.cgroup: join on instance to filter the host's port series by job.",
);

function writeMetrics(snapshot: Snapshot, out: ExpositionBuffer): void {
  const part = HOST_JOBS.of(snapshot);
  if (!part) return;
  const samples = new Samples();
  for (const job of part.jobs) samples.add(HOST_JOB_INFO, { job_id: job }, 1);
  samples.writeTo([HOST_JOB_INFO], out);
}

export const HOST_JOBS: Collector<HostJobsPart> = defineCollector({
  name: 'host_jobs',
  checks: 'which Slurm jobs run on this host',
  enabledBy: HOST_JOBS_SWITCH,
  flags: [HOST_JOBS_SWITCH, CGROUP_PATH],
  scope: 'host',
  schedule: { cycle: HOST_READING },
  onOverrun: 'keep',
  setUp: (context) => new HostJobsReader(context.settings.get(CGROUP_PATH)),
  metrics: { families: [HOST_JOB_INFO], write: writeMetrics },
  failure: {
    consequence: 'the Slurm jobs of this host are not known: its series cannot be filtered by job',
    meaning: 'Nothing of the InfiniBand ports is missing; only which jobs run here.',
    cause: 'The cgroup tree under --path.cgroup could not be listed (a container without /sys/fs/cgroup mounted).',
  },
});
