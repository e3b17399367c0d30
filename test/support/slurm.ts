// A real Slurm for the tests, started by the test and stopped by PID: Debian's munged (its own
// socket and key in a temporary directory, run as the munge user), slurmctld, and one
// `slurmd -N <node>` per node on this host, each node with NodeHostname=<this host>,
// NodeAddr=127.0.0.1 and a port of its own. proctrack/linuxproc and task/none: no cgroup needed.
// About 10 s from nothing to a running job. Stopping cancels the jobs and waits for squeue to be
// empty before stopping the daemons, or slurmstepd lingers.
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';

/** How long the nodes may take to register with slurmctld; a test that starts Slurm allows a minute more. */
export const SLURM_REGISTRATION_MS = 120_000;

export interface SlurmCluster {
  /** For SLURM_CONF. */
  conf: string;
  env: NodeJS.ProcessEnv;
  /** sbatch a job of `sleep` over these nodes; its id. */
  submit(name: string, nodes: readonly string[]): string;
  /** Until squeue lists `count` running jobs. */
  waitRunning(count: number): Promise<void>;
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function pidOf(file: string): number | undefined {
  try {
    return Number(readFileSync(file, 'utf8').trim()) || undefined;
  } catch {
    return undefined;
  }
}

async function waitFor(what: string, check: () => boolean, ms = 20_000, seen?: () => string): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error(`slurm: timed out waiting for ${what}${seen ? ` (last seen: ${seen()})` : ''}`);
    await sleep(200);
  }
}

/**
 * Start munged, slurmctld and a slurmd per node; `tools` are their absolute paths. `cgroupV1`:
 * proctrack/cgroup with cgroup/v1, so that each job gets its cgroups under /sys/fs/cgroup.
 */
export async function startSlurm(
  nodes: readonly string[],
  tools: Record<string, string>,
  options: { cgroupV1?: boolean } = {},
): Promise<SlurmCluster> {
  const dir = mkdtempSync(path.join(tmpdir(), 'ibexp-slurm-'));
  chmodSync(dir, 0o755);
  const uid = Number(execFileSync('id', ['-u', 'munge'], { encoding: 'utf8' }).trim());
  const gid = Number(execFileSync('id', ['-g', 'munge'], { encoding: 'utf8' }).trim());
  const mungeDir = path.join(dir, 'munge');
  mkdirSync(mungeDir, { mode: 0o755 });
  chmodSync(mungeDir, 0o755);
  chownSync(mungeDir, uid, gid);
  const key = path.join(mungeDir, 'munge.key');
  writeFileSync(key, randomBytes(1024), { mode: 0o400 });
  chownSync(key, uid, gid);
  const socket = path.join(mungeDir, 'munge.sock');
  const pids: string[] = [];
  const munged = spawnSync(
    tools.runuser!,
    [
      '-u',
      'munge',
      '--',
      tools.munged!,
      `--socket=${socket}`,
      `--key-file=${key}`,
      `--pid-file=${mungeDir}/munged.pid`,
      `--log-file=${mungeDir}/munged.log`,
      `--seed-file=${mungeDir}/munge.seed`,
    ],
    { encoding: 'utf8' },
  );
  if (munged.status !== 0) throw new Error(`munged: ${munged.stderr}`);
  pids.push(path.join(mungeDir, 'munged.pid'));
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const host = hostname();
  const conf = path.join(dir, 'slurm.conf');
  mkdirSync(path.join(dir, 'state'));
  writeFileSync(
    conf,
    [
      'ClusterName=ibexp',
      `SlurmctldHost=${host}(127.0.0.1)`,
      `SlurmctldPort=${port}`,
      'SlurmUser=root',
      'SlurmdUser=root',
      'AuthType=auth/munge',
      'CredType=cred/munge',
      `AuthInfo=socket=${socket}`,
      `StateSaveLocation=${dir}/state`,
      `SlurmdSpoolDir=${dir}/spool-%n`,
      `SlurmctldPidFile=${dir}/slurmctld.pid`,
      `SlurmdPidFile=${dir}/slurmd-%n.pid`,
      `SlurmctldLogFile=${dir}/slurmctld.log`,
      `SlurmdLogFile=${dir}/slurmd-%n.log`,
      options.cgroupV1 ? 'ProctrackType=proctrack/cgroup' : 'ProctrackType=proctrack/linuxproc',
      'TaskPlugin=task/none',
      'MpiDefault=none',
      'ReturnToService=2',
      'SchedulerType=sched/builtin',
      'SelectType=select/linear',
      'JobCompType=jobcomp/none',
      'JobAcctGatherType=jobacct_gather/none',
      ...nodes.map((node, i) => `NodeName=${node} NodeHostname=${host} NodeAddr=127.0.0.1 Port=${port + 1 + i} CPUs=1 State=UNKNOWN`),
      'PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP',
      '',
    ].join('\n'),
  );
  if (options.cgroupV1)
    writeFileSync(
      path.join(dir, 'cgroup.conf'),
      'CgroupPlugin=cgroup/v1\nCgroupMountpoint=/sys/fs/cgroup\nConstrainCores=no\nConstrainRAMSpace=no\nConstrainDevices=no\n',
    );
  const env = { ...process.env, SLURM_CONF: conf };
  const run = (tool: string, args: string[]) => spawnSync(tools[tool]!, args, { env, encoding: 'utf8' });
  const squeue = (args: string[]) => run('squeue', ['--noheader', ...args]);
  const stop = async () => {
    const jobs = squeue(['--format=%i']).stdout?.trim();
    if (jobs) run('scancel', jobs.split('\n'));
    await waitFor(
      'squeue to empty',
      () => {
        const out = squeue(['--format=%i']);
        return out.status !== 0 || out.stdout.trim() === '';
      },
      30_000,
    ).catch(() => undefined);
    for (const file of [...nodes.map((node) => path.join(dir, `slurmd-${node}.pid`)), path.join(dir, 'slurmctld.pid'), ...pids]) {
      const pid = pidOf(file);
      if (pid === undefined) continue;
      try {
        process.kill(pid, 'SIGTERM');
      } catch {
        // already gone
      }
      await waitFor(
        `PID ${pid} to stop`,
        () => {
          try {
            process.kill(pid, 0);
            return false;
          } catch {
            return true;
          }
        },
        10_000,
      ).catch(() => {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          /* gone */
        }
      });
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const started = run('slurmctld', ['-i', '-f', conf]);
    if (started.status !== 0) throw new Error(`slurmctld: ${started.stderr}`);
    for (const node of nodes) {
      const slurmd = run('slurmd', ['-N', node, '-f', conf]);
      if (slurmd.status !== 0) throw new Error(`slurmd -N ${node}: ${slurmd.stderr}`);
    }
    // Once in a clean clone's CI run the nodes took longer than 20 s to register, and once (on a
    // fresh machine, beside the other suites on its two cores) longer than the minute given next:
    // two minutes, and what sinfo last said if even that is not enough.
    let last = '';
    await waitFor(
      'every node idle',
      () => {
        const out = run('sinfo', ['--noheader', '--format=%T %D']);
        last = `${out.status} ${out.stdout.trim()} ${out.stderr.trim()}`.slice(0, 300);
        return out.status === 0 && out.stdout.trim() === `idle ${nodes.length}`;
      },
      SLURM_REGISTRATION_MS,
      () => last,
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    conf,
    env,
    submit(name, on) {
      const out = run('sbatch', [
        '--parsable',
        '--output',
        path.join(dir, 'job-%j.out'),
        '-J',
        name,
        '-w',
        on.join(','),
        '-N',
        String(on.length),
        '--wrap',
        'sleep 600',
      ]);
      if (out.status !== 0) throw new Error(`sbatch: ${out.stderr}`);
      return out.stdout.trim().split(';')[0]!;
    },
    waitRunning: (count) =>
      waitFor(
        `${count} running jobs`,
        () => squeue(['--states=RUNNING', '--format=%i']).stdout.trim().split('\n').filter(Boolean).length === count,
      ),
    stop,
  };
}
