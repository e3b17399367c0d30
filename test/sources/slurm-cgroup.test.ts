// The Slurm jobs of a host from its cgroup tree: fixture trees in the layouts slurmd makes
// (cgroup v2 cannot run on this machine's hybrid hierarchy, so v2 is a fixture only; the v1 tree
// is that of proctrack/cgroup with cgroup/v1).
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { LOOK_AGAIN_MS, SlurmCgroupReader } from '../../src/sources/jobs/slurm-cgroup.js';

function tree(directories: string[]): string {
  const root = mkdtempSync(path.join(tmpdir(), 'cgroup-'));
  for (const directory of directories) mkdirSync(path.join(root, directory), { recursive: true });
  return root;
}

describe('SlurmCgroupReader', () => {
  it('reads cgroup v2: system.slice/slurmstepd.scope/job_<id>', () => {
    const root = tree([
      'system.slice/slurmstepd.scope/job_48213/step_0',
      'system.slice/slurmstepd.scope/job_7/step_batch',
      'system.slice/slurmstepd.scope/system',
      'system.slice/ssh.service',
    ]);
    expect(new SlurmCgroupReader(root).read().jobs).toEqual(['7', '48213']);
  });

  it('reads cgroup v2 where one host runs several slurmd: <node>_slurmstepd.scope', () => {
    const root = tree([
      'system.slice/node11_slurmstepd.scope/job_1',
      'system.slice/node13_slurmstepd.scope/job_1',
      'system.slice/node13_slurmstepd.scope/job_2',
    ]);
    expect(new SlurmCgroupReader(root).read().jobs).toEqual(['1', '2']);
  });

  it('reads cgroup v1: <controller>/slurm*/uid_<uid>/job_<id>', () => {
    const root = tree([
      'freezer/slurm/uid_0/job_3/step_0',
      'freezer/slurm/uid_1000/job_5',
      'memory/slurm/uid_0/job_3',
      'cpu,cpuacct/user.slice',
    ]);
    expect(new SlurmCgroupReader(root).read().jobs).toEqual(['3', '5']);
  });

  it('follows jobs ending and starting, and a slurmd that starts after the exporter', () => {
    const root = tree(['system.slice/ssh.service']);
    let now = 0;
    const reader = new SlurmCgroupReader(root, () => now);
    expect(reader.read().jobs).toEqual([]);
    mkdirSync(path.join(root, 'system.slice/slurmstepd.scope/job_9'), { recursive: true });
    expect(reader.read().jobs).toEqual([]);
    now += LOOK_AGAIN_MS;
    expect(reader.read().jobs).toEqual(['9']);
    rmSync(path.join(root, 'system.slice/slurmstepd.scope/job_9'), { recursive: true });
    mkdirSync(path.join(root, 'system.slice/slurmstepd.scope/job_10'));
    expect(reader.read().jobs).toEqual(['10']);
  });

  it('a root that does not exist is no job', () => {
    expect(new SlurmCgroupReader('/nonexistent/cgroup').read()).toEqual({ jobs: [], errors: [] });
  });
});
