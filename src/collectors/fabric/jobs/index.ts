// The jobs collector: every --jobs.interval, the running jobs (Slurm's squeue, or --jobs.file)
// placed on the fabric as discovered: each job's hosts and footprint, and how many of its links
// are impaired, per shard (DESIGN.md "Congestion and jobs").
import { defineCollector, type Collector } from '../../../collection/collector.js';
import { atOnce } from '../../../event-loop/time-slices.js';
import type { JobsPart } from '../../../model/job-footprint.js';
import { FABRIC_CABLING_PART, FABRIC_DISCOVERY_PART, FABRIC_PORTS_PART, JOBS_PART } from '../../parts.js';
import { FABRIC_SHARD, FABRIC_SWITCH } from '../fabric-mode.js';
import { JOBS_FAILURE, jobFindings } from './findings.js';
import { FAMILIES, writeMetrics } from './metrics.js';
import { FABRIC_HOST_PATTERN, JOBS_CYCLE, JOBS_FLAGS, setUpJobs, verifyJobs } from './reader.js';

export { FABRIC_HOST_PATTERN, JOBS_CYCLE, JOBS_FILE_FLAG, JOBS_INTERVAL, JOBS_MIN_HOSTS, SQUEUE_PATH, SQUEUE_TOOLS } from './reader.js';

export const JOBS: Collector<JobsPart> = defineCollector({
  name: JOBS_PART.name,
  checks: 'which running jobs a bad link carries',
  enabledBy: FABRIC_SWITCH,
  flags: [FABRIC_SWITCH, FABRIC_SHARD, ...JOBS_FLAGS],
  sections: [FABRIC_HOST_PATTERN],
  scope: 'fabric',
  schedule: { cycle: JOBS_CYCLE, after: [] },
  onOverrun: 'keep',
  setUp: setUpJobs,
  metrics: {
    families: FAMILIES,
    inputs: [FABRIC_PORTS_PART, FABRIC_CABLING_PART, FABRIC_DISCOVERY_PART],
    write: (snapshot, out) => atOnce(writeMetrics(snapshot, out)),
    writeSteps: writeMetrics,
  },
  findings: (snapshot) => atOnce(jobFindings(snapshot)),
  findingSteps: jobFindings,
  failure: JOBS_FAILURE,
  verify: verifyJobs,
});
