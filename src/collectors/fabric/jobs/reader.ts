// The jobs collector's reader: the running jobs from Slurm's squeue (through the one runner) or
// from --jobs.file (read again when it changes), placed on the last discovered topology. A job's
// hosts and footprint are computed once per topology and job (model/job-footprint.ts); a host the
// fabric does not have is counted in its job and named once in the log.
import { statSync } from 'node:fs';
import { COUNT, DURATION, STRING, flag, optionalFlag, type Section, type Settings } from '../../../config/flags.js';
import { UsageError } from '../../../config/errors.js';
import { inSlices } from '../../../event-loop/time-slices.js';
import type { Job } from '../../../model/jobs.js';
import { JobPlacement, type JobsPart } from '../../../model/job-footprint.js';
import type { Snapshot } from '../../../model/snapshot.js';
import { commandFailure, commandLine, ExecaRunner, locateTools, type CommandRunner } from '../../../sources/command-runner.js';
import type { CollectorContext, Cycle, Off, Reader, Reading, ToolGroup } from '../../../collection/collector.js';
import { FABRIC_DISCOVERY_PART } from '../../parts.js';
import { FABRIC_PORTS_CYCLE, FABRIC_SHARD } from '../fabric-mode.js';

export const SQUEUE_PATH = optionalFlag(STRING, {
  name: 'squeue.path',
  key: 'jobs.squeue_path',
  help: "squeue executable, e.g. /usr/bin/squeue: Slurm's running jobs are read with it (unless --jobs.file is given) and placed on the fabric.",
  check: true,
});
export const JOBS_INTERVAL = flag(DURATION, {
  name: 'jobs.interval',
  key: 'jobs.interval',
  default: '30s',
  help: 'How often the running jobs are read (squeue, or --jobs.file when it changed).',
  check: true,
});
export const JOBS_FILE_FLAG = optionalFlag(STRING, {
  name: 'jobs.file',
  key: 'jobs.file',
  help: 'YAML or JSON list of the running jobs, {id, user, partition, name, hosts: [...]}, for a scheduler other than Slurm; read again when it changes.',
  check: true,
});
export const JOBS_MIN_HOSTS = flag(COUNT, {
  name: 'jobs.min-hosts',
  key: 'jobs.min_hosts',
  default: '2',
  help: 'Jobs on fewer hosts are left out (a one-host job uses no inter-switch link).',
  check: true,
});

/** `fabric.host_pattern` (config file): a regular expression on an adapter's NodeDescription whose first group (else whole match) is the host name. */
export const FABRIC_HOST_PATTERN: Section<RegExp | undefined> = {
  key: 'fabric.host_pattern',
  schema: { type: 'string', minLength: 1 },
  empty: undefined,
  parse: (value) => new RegExp(value as string),
  validate: (value) => {
    try {
      new RegExp(value as string);
      return undefined;
    } catch (error) {
      return { path: [], message: `not a regular expression: ${(error as Error).message}` };
    }
  },
  explain: () => 'expected a regular expression matching a host adapter\'s NodeDescription, e.g. "^(\\S+) mlx5_\\d+$"',
};

export const JOBS_FLAGS = [SQUEUE_PATH, JOBS_INTERVAL, JOBS_FILE_FLAG, JOBS_MIN_HOSTS];

export const SQUEUE_TOOLS: ToolGroup<'squeue'> = { key: 'squeue', tools: ['squeue'] };
/** A controller's answer for 10 000 running jobs is about 1 MB. */
export const SQUEUE_MAX_OUTPUT_BYTES = 16 * 1024 * 1024;
/** squeue waits on the controller: at most 10 s, and never past the next reading. */
export function squeueTimeoutMs(settings: Settings): number {
  return Math.min(10_000, settings.get(JOBS_INTERVAL));
}

export const JOBS_CYCLE: Cycle = {
  name: 'jobs reading',
  interval: (settings) => settings.get(JOBS_INTERVAL),
  deadline: (settings) => Math.max(settings.get(JOBS_INTERVAL), squeueTimeoutMs(settings) + 1000),
  // Jobs are placed on a topology, and counted over the ports cycle's readings: the first reading
  // waits for the first ports cycle, itself after the first discovery. Placing every job (every
  // footprint computed) beside the first ports cycle stacked the two at the start's memory peak.
  after: { cycle: FABRIC_PORTS_CYCLE, fresh: false },
};

/** Where the jobs are read from. */
interface JobSource {
  readonly kind: JobsPart['source'];
  /** The jobs, or why they could not be read (the last good jobs stand meanwhile). */
  read(signal: AbortSignal): Promise<{ jobs: readonly Job[] } | { error: string; item: string; timeout?: boolean }>;
}

class FileSource implements JobSource {
  readonly kind = 'file';
  private version = '';
  private jobs: readonly Job[] = [];
  private force = false;
  private readJobsFile: typeof import('../../../sources/jobs/jobs-file.js').readJobsFile | undefined;

  constructor(private readonly file: string) {}

  reload(): void {
    this.force = true;
  }

  async read(): Promise<{ jobs: readonly Job[] } | { error: string; item: string }> {
    this.readJobsFile ??= (await import('../../../sources/jobs/jobs-file.js')).readJobsFile;
    let version: string;
    try {
      const stats = statSync(this.file);
      version = `${stats.ino}/${stats.size}/${stats.mtimeMs}`;
    } catch (error) {
      return { error: `cannot be read: ${(error as Error).message}`, item: this.file };
    }
    if (version === this.version && !this.force) return { jobs: this.jobs };
    try {
      this.jobs = this.readJobsFile(this.file, '--jobs.file');
      this.version = version;
      this.force = false;
      return { jobs: this.jobs };
    } catch (error) {
      return { error: (error as Error).message, item: this.file };
    }
  }
}

class SqueueSource implements JobSource {
  readonly kind = 'squeue';
  /** The last output and its jobs: the same output is the same jobs (the same objects), not parsed again. */
  private last: { stdout: string; jobs: readonly Job[] } | undefined;
  constructor(
    private readonly runner: CommandRunner<'squeue'>,
    private readonly timeoutMs: number,
  ) {}

  async read(signal: AbortSignal): Promise<{ jobs: readonly Job[] } | { error: string; item: string; timeout?: boolean }> {
    const { parseSqueueSteps, SQUEUE_ARGS } = await import('../../../sources/jobs/squeue.js');
    const result = await this.runner.run('squeue', SQUEUE_ARGS, signal);
    const failure = commandFailure(result, this.timeoutMs, '--jobs.interval');
    if (failure !== undefined) return { error: failure, item: commandLine(result), timeout: result.outcome === 'timeout' };
    if (this.last?.stdout === result.stdout) return { jobs: this.last.jobs };
    const parsed = await inSlices(parseSqueueSteps(result.stdout));
    if (parsed.unparsed.count > 0)
      return {
        error: `${parsed.unparsed.count} lines not understood, e.g. ${JSON.stringify(parsed.unparsed.examples[0])}`,
        item: commandLine(result),
      };
    this.last = { stdout: result.stdout, jobs: parsed.jobs };
    return { jobs: parsed.jobs };
  }
}

class JobsReader implements Reader<JobsPart> {
  private readonly placement: JobPlacement;
  /** Hosts already named in the log as not on the fabric. */
  private readonly logged = new Set<string>();
  /** The last part: given again while nothing in it changed, so that its series are not rendered again. */
  private last: JobsPart | undefined;

  constructor(
    private readonly context: CollectorContext,
    private readonly source: JobSource,
  ) {
    this.placement = new JobPlacement(context.settings.section(FABRIC_HOST_PATTERN));
  }

  reload(): void {
    if (this.source instanceof FileSource) this.source.reload();
  }

  async read(snapshot: Snapshot, signal: AbortSignal): Promise<Reading<JobsPart>> {
    const read = await this.source.read(signal);
    if ('error' in read)
      return { errors: [{ item: read.item, message: read.error }], failOnErrors: true, timeouts: read.timeout ? ['squeue'] : [] };
    const topology = FABRIC_DISCOVERY_PART.of(snapshot)?.topology;
    if (!topology) return { failure: 'no fabric topology yet: jobs are placed on the links discovery found' };
    const minHosts = this.context.settings.get(JOBS_MIN_HOSTS);
    const jobs = await inSlices(
      this.placement.placeSteps(
        topology,
        read.jobs.filter((job) => job.hosts.length >= minHosts),
      ),
    );
    for (const job of jobs) {
      const fresh = job.notFound.filter((host) => !this.logged.has(host));
      if (fresh.length === 0) continue;
      for (const host of fresh) this.logged.add(host);
      this.context.logger.warn(
        { job: job.job.id, hosts: fresh },
        `job ${job.job.id}: ${fresh.length} host(s) not found on the fabric (no adapter with that node-name-map name, NodeDescription or fabric.host_pattern match): ${fresh.slice(0, 10).join(', ')}`,
      );
    }
    const part: JobsPart = {
      source: this.source.kind,
      jobs,
      shard: this.context.settings.get(FABRIC_SHARD),
      linkIds: this.placement.linkIds,
    };
    const last = this.last;
    if (
      last?.source === part.source &&
      last.linkIds === part.linkIds &&
      last.jobs.length === part.jobs.length &&
      last.jobs.every((placed, i) => placed === part.jobs[i])
    )
      return { part: last };
    this.last = part;
    return { part };
  }
}

/** The reader, from --jobs.file or squeue; off without either. */
export function setUpJobs(context: CollectorContext): Reader<JobsPart> | Off {
  const { settings } = context;
  const file = settings.get(JOBS_FILE_FLAG);
  if (file !== undefined) return new JobsReader(context, new FileSource(file));
  const timeoutMs = squeueTimeoutMs(settings);
  context.countCommands(SQUEUE_TOOLS.tools);
  const injected = context.runner(SQUEUE_TOOLS);
  if (injected === 'not-installed') return { off: "no squeue (Slurm's client) and no --jobs.file: no jobs to place on the fabric" };
  if (injected !== undefined) return new JobsReader(context, new SqueueSource(injected, timeoutMs));
  // Only where asked: squeue lying on PATH of a host whose fabric runs no Slurm jobs would make a failing collector of it.
  const configured = settings.get(SQUEUE_PATH);
  if (configured === undefined) return { off: 'neither --squeue.path nor --jobs.file: no jobs to place on the fabric' };
  const { found } = locateTools(SQUEUE_TOOLS.tools, { squeue: configured });
  if (found.squeue === undefined) return { off: `--squeue.path ${configured} is not an executable file` };
  const runner = new ExecaRunner({ paths: { squeue: found.squeue }, timeoutMs, maxConcurrent: 1, maxOutputBytes: SQUEUE_MAX_OUTPUT_BYTES });
  return new JobsReader(context, new SqueueSource(runner, timeoutMs));
}

/** A jobs file must be readable and valid at start (exit 2 naming the file and line). */
export async function verifyJobs(settings: Settings): Promise<void> {
  const file = settings.get(JOBS_FILE_FLAG);
  const squeue = settings.get(SQUEUE_PATH);
  if (file === undefined && squeue !== undefined && locateTools(SQUEUE_TOOLS.tools, { squeue }).found.squeue === undefined) {
    throw new UsageError(`--squeue.path: ${squeue} is not an executable file`);
  }
  if (file === undefined) return;
  const { readJobsFile } = await import('../../../sources/jobs/jobs-file.js');
  readJobsFile(file, '--jobs.file');
}
