// A real Slurm (munged, slurmctld, a slurmd per node) whose nodes are named like the hosts of the
// demo fabric; real sbatch jobs over them, and the exporter's job series naming them, read with
// the real squeue through the one runner (--squeue.path), the fabric replayed from its recordings.
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JOBS_CYCLE } from '../../src/collectors/fabric/jobs/index.js';
import { parseServeCommandLine } from '../../src/commands/serve/command-line.js';
import { Exporter } from '../../src/commands/serve/exporter.js';
import { RecordedRunner } from '../../src/sources/recorded-runner.js';
import { sampleValue as value, scrape } from '../support/exposition.js';
import { SLURM_REGISTRATION_MS, startSlurm, type SlurmCluster } from '../support/slurm.js';
import { requireSystemTools } from '../support/system.js';

const DEMO = path.join(import.meta.dirname, '../../demo/fabric');
const tools = requireSystemTools('jobs with a real Slurm', {
  slurmctld: 'slurmctld',
  slurmd: 'slurmd',
  squeue: 'slurm-client',
  sbatch: 'slurm-client',
  scancel: 'slurm-client',
  sinfo: 'slurm-client',
  munged: 'munge',
  runuser: 'util-linux',
});

describe.skipIf(tools.skipReason !== undefined)('jobs from a real Slurm', () => {
  let slurm: SlurmCluster;
  let exporter: Exporter | undefined;
  const savedConf = process.env.SLURM_CONF;

  beforeAll(async () => {
    slurm = await startSlurm(['node11', 'node13', 'node21', 'node22', 'node31'], tools.paths);
    process.env.SLURM_CONF = slurm.conf;
  }, SLURM_REGISTRATION_MS + 60_000);

  afterAll(async () => {
    await exporter?.stop();
    if (savedConf === undefined) delete process.env.SLURM_CONF;
    else process.env.SLURM_CONF = savedConf;
    await slurm?.stop();
  }, 60_000);

  it('names the running jobs, their hosts on the fabric and the impaired links under them', async () => {
    const train = slurm.submit('train-llm', ['node11', 'node13', 'node21', 'node22']);
    const single = slurm.submit('one-host', ['node31']);
    await slurm.waitRunning(2);
    const command = parseServeCommandLine(['--demo=fabric', '--squeue.path', tools.paths.squeue!]);
    if (command.action !== 'run') throw new Error('unexpected');
    exporter = new Exporter({
      settings: command.settings,
      logger: pino({ level: 'silent' }),
      runners: { fabric: new RecordedRunner(DEMO) },
    });
    await exporter.collectOnce();
    await exporter.collectFabricOnce();
    await exporter.collectors.runCycle(JOBS_CYCLE);
    const text = await scrape(exporter);
    expect(value(text, 'infiniband_exporter_collector_success{collector="jobs"}')).toBe(1);
    expect(value(text, `infiniband_job_info{job_id="${train}",user="root",partition="gpu",name="train-llm"}`)).toBe(1);
    expect(value(text, `infiniband_job_hosts{job_id="${train}",state="on_fabric"}`)).toBe(4);
    expect(value(text, `infiniband_job_links{job_id="${train}",scope="switch"}`)).toBe(4);
    expect(value(text, `infiniband_job_links_impaired{job_id="${train}",scope="switch",reason="degraded"}`)).toBe(1);
    // One host: below --jobs.min-hosts.
    expect(text).not.toContain(`job_id="${single}"`);
  }, 60_000);
});

describe.skipIf(tools.skipReason !== undefined)("a compute host's jobs from the cgroup v1 tree a real Slurm makes", () => {
  let slurm: SlurmCluster | undefined;
  let exporter: Exporter | undefined;

  afterAll(async () => {
    await exporter?.stop();
    await slurm?.stop();
  }, 60_000);

  // proctrack/cgroup with cgroup/v1 (cgroup v2 cannot run on a hybrid hierarchy: its layout is a fixture in test/sources/slurm-cgroup.test.ts).
  it(
    'names the job running here in infiniband_host_job_info',
    async () => {
      slurm = await startSlurm(['node11', 'node13'], tools.paths, { cgroupV1: true });
      const id = slurm.submit('on-this-host', ['node11', 'node13']);
      await slurm.waitRunning(1);
      const command = parseServeCommandLine(['--demo=host', '--path.cgroup', '/sys/fs/cgroup']);
      if (command.action !== 'run') throw new Error('unexpected');
      exporter = new Exporter({ settings: command.settings, logger: pino({ level: 'silent' }), runners: { module: 'not-installed' } });
      let text = '';
      for (let attempt = 0; attempt < 20 && !text.includes(`job_id="${id}"`); attempt++) {
        await exporter.collectOnce();
        text = await scrape(exporter);
        if (!text.includes(`job_id="${id}"`)) await new Promise((resolve) => setTimeout(resolve, 250));
      }
      expect(value(text, `infiniband_host_job_info{job_id="${id}"}`)).toBe(1);
      expect(value(text, 'infiniband_exporter_collector_success{collector="host_jobs"}')).toBe(1);
    },
    SLURM_REGISTRATION_MS + 60_000,
  );
});
