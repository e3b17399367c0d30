// Slurm's running jobs as the contract reads them (DESIGN.md "Congestion and jobs"):
// `squeue --noheader --states=RUNNING --format=%i|%u|%P|%N|%j`, one job a line, the job name last
// since it may itself hold `|`. The plain format, not `--json`: this Slurm's `squeue --json`
// ignores --states and exits 0 with the error inside when the controller is down, where the plain
// format exits 1. Pure: the runner runs squeue, this parses what it printed.
import { atOnce, type Work } from '../../event-loop/time-slices.js';
import type { Job } from '../../model/jobs.js';
import { UnparsedLines } from '../unparsed-lines.js';
import { MAX_HOSTLIST_HOSTS, MAX_LISTED_HOSTS, expandHostlist } from './hostlist.js';

export const SQUEUE_ARGS = ['--noheader', '--states=RUNNING', '--format=%i|%u|%P|%N|%j'] as const;

export interface SqueueJobs {
  jobs: Job[];
  /** Lines that are no job of this format, or whose hostlist did not expand. */
  unparsed: UnparsedLines;
}

/** squeue's output; a job without hosts (none allocated yet) is left out. */
export function parseSqueue(text: string): SqueueJobs {
  return atOnce(parseSqueueSteps(text));
}

/** The same as work that may pause: 2 000 running jobs are a million host names to expand. */
export function* parseSqueueSteps(text: string): Work<SqueueJobs> {
  const jobs: Job[] = [];
  const unparsed = new UnparsedLines();
  let hosts = 0;
  let listed = 0;
  // One string per host name for the whole reading: jobs share hosts (a host's GPUs split between
  // jobs) and each expansion makes its own strings (2 000 jobs on the 24 576-host tree: 143 000
  // host names for 24 800 hosts, 4 MiB held as long as the jobs are).
  const names = new Map<string, string>();
  for (const line of text.split('\n')) {
    // A pause every few thousand hosts expanded.
    if (hosts > 4096) {
      hosts = 0;
      yield;
    }
    if (line.trim() === '') continue;
    const fields = line.split('|');
    if (fields.length < 5) {
      unparsed.add(line);
      continue;
    }
    const [id, user, partition, hostlist] = fields.map((field) => field.trim()) as [string, string, string, string];
    const name = fields.slice(4).join('|');
    // Every job's hosts count against one budget: a few short lines must not expand to millions.
    const expansion = expandHostlist(hostlist, Math.min(MAX_HOSTLIST_HOSTS, MAX_LISTED_HOSTS - listed));
    if (!/^\d[\w+.-]*$/.test(id) || expansion.error !== undefined) {
      unparsed.add(line);
      continue;
    }
    hosts += 1 + (expansion.hosts?.length ?? 0);
    listed += expansion.hosts.length;
    if (expansion.hosts.length === 0) continue;
    const expanded = expansion.hosts;
    for (let i = 0; i < expanded.length; i++) {
      const host = expanded[i]!;
      const known = names.get(host);
      if (known === undefined) names.set(host, host);
      else expanded[i] = known;
    }
    jobs.push({ id, user, partition, name, hosts: expanded });
  }
  return { jobs, unparsed };
}
