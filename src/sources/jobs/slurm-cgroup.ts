// The Slurm jobs running on this host, from the cgroup tree slurmd makes for them (--path.cgroup):
// cgroup v2, `system.slice/slurmstepd.scope/job_<id>` (`<node>_slurmstepd.scope` where one host
// runs several slurmd); cgroup v1, `<controller>/slurm*/uid_<uid>/job_<id>`. Where the jobs live is
// found once, then each reading lists only those directories (one for cgroup v2, one per user
// with jobs for v1), which keeps the host's reading cheap. A directory that vanished (slurmd
// restarted, the last job of a user ended) is looked for again at the next reading.
import { readdirSync } from 'node:fs';
import path from 'node:path';
import type { ItemError } from '../../model/snapshot.js';

const JOB = /^job_(\d+)$/;
/** slurmd started after the exporter is seen within this time. */
export const LOOK_AGAIN_MS = 60_000;

export interface HostJobs {
  /** Job ids, each once, in numeric order. */
  jobs: string[];
  errors: ItemError[];
}

function list(directory: string): string[] | undefined {
  try {
    return readdirSync(directory, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name);
  } catch {
    return undefined;
  }
}

export class SlurmCgroupReader {
  /** The directories listing `job_<id>` (v2) or `uid_<uid>` (v1); undefined until found. */
  private places: { kind: 'steps' | 'users'; directory: string }[] | undefined;
  /** When the places were last looked for without success (ms): a host without slurmd looks again only every LOOK_AGAIN_MS. */
  private lookedAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly root: string,
    private readonly now: () => number = Date.now,
  ) {}

  /** Where slurmd puts its jobs under the root: a few directory listings, once. */
  private find(): { kind: 'steps' | 'users'; directory: string }[] {
    const places: { kind: 'steps' | 'users'; directory: string }[] = [];
    const systemSlice = path.join(this.root, 'system.slice');
    for (const name of list(systemSlice) ?? []) {
      if (name === 'slurmstepd.scope' || name.endsWith('_slurmstepd.scope'))
        places.push({ kind: 'steps', directory: path.join(systemSlice, name) });
    }
    if (places.length > 0) return places;
    // cgroup v1: one controller is enough (every one slurm uses holds the same jobs); freezer first, as proctrack/cgroup always uses it.
    const controllers = list(this.root) ?? [];
    for (const controller of ['freezer', ...controllers.filter((name) => name !== 'freezer').sort()]) {
      if (!controllers.includes(controller)) continue;
      const slurm = (list(path.join(this.root, controller)) ?? []).filter((name) => name.startsWith('slurm')).sort();
      if (slurm.length > 0) return slurm.map((name) => ({ kind: 'users' as const, directory: path.join(this.root, controller, name) }));
    }
    return places;
  }

  read(): HostJobs {
    if (this.places === undefined && this.now() - this.lookedAt < LOOK_AGAIN_MS) return { jobs: [], errors: [] };
    this.places ??= this.find();
    const jobs = new Set<string>();
    let vanished = false;
    for (const place of this.places) {
      const names = list(place.directory);
      if (names === undefined) {
        vanished = true;
        continue;
      }
      const jobDirectories =
        place.kind === 'steps'
          ? [names]
          : names.filter((name) => name.startsWith('uid_')).map((name) => list(path.join(place.directory, name)) ?? []);
      for (const entries of jobDirectories)
        for (const name of entries) {
          const match = JOB.exec(name);
          if (match) jobs.add(match[1]!);
        }
    }
    if (this.places.length === 0) this.lookedAt = this.now();
    if (vanished || this.places.length === 0) this.places = undefined;
    return { jobs: [...jobs].sort((a, b) => Number(a) - Number(b)), errors: [] };
  }
}
