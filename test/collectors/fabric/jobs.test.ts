// The jobs collector on the recorded fabric: jobs from a file and from a replayed squeue, placed on
// the discovered topology, their series per shard, and the findings naming them.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { parseServeCommandLine as parseCommandLine } from '../../../src/commands/serve/command-line.js';
import { Exporter } from '../../../src/commands/serve/exporter.js';
import { JOBS_CYCLE } from '../../../src/collectors/fabric/jobs/index.js';
import { JOBS_PART } from '../../../src/collectors/parts.js';
import { findingsOf } from '../../../src/findings/findings.js';
import { RecordedRunner } from '../../../src/sources/recorded-runner.js';
import type { CommandResult, CommandRunner } from '../../../src/sources/command-runner.js';
import { sampleValue as value, scrape } from '../../support/exposition.js';

const DEMO = path.join(import.meta.dirname, '../../../demo/fabric');
const exporters: Exporter[] = [];
afterEach(async () => {
  await Promise.all(exporters.splice(0).map((exporter) => exporter.stop()));
});

function demoExporter(flags: string[], squeue?: CommandRunner<'squeue'>): Exporter {
  const command = parseCommandLine(['--demo=fabric', ...flags]);
  if (command.action !== 'run') throw new Error('unexpected');
  const exporter = new Exporter({
    settings: command.settings,
    logger: pino({ level: 'silent' }),
    runners: { fabric: new RecordedRunner(DEMO), ...(squeue && { squeue }) },
  });
  exporters.push(exporter);
  return exporter;
}

async function cycle(exporter: Exporter): Promise<string> {
  await exporter.collectOnce();
  await exporter.collectFabricOnce();
  await exporter.collectors.runCycle(JOBS_CYCLE);
  return scrape(exporter);
}

const squeueSaying = (stdout: string, exitCode = 0): CommandRunner<'squeue'> => ({
  run: async (command, args): Promise<CommandResult<'squeue'>> => ({
    command,
    args,
    outcome: 'exited',
    exitCode,
    stdout,
    stderr: exitCode === 0 ? '' : 'slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n',
    durationMs: 1,
  }),
});

describe('the jobs collector', () => {
  it("--demo=fabric places the demo's two jobs: the degraded spine link under one, the miswired cable under the other", async () => {
    const text = await cycle(demoExporter([]));
    expect(value(text, 'infiniband_job_info{job_id="48213",user="alice",partition="gpu",name="train-llm"}')).toBe(1);
    expect(value(text, 'infiniband_job_hosts{job_id="48213",state="on_fabric"}')).toBe(4);
    expect(value(text, 'infiniband_job_links{job_id="48213",scope="host"}')).toBe(4);
    expect(value(text, 'infiniband_job_links{job_id="48213",scope="switch"}')).toBe(4);
    expect(value(text, 'infiniband_job_links_impaired{job_id="48213",scope="switch",reason="degraded"}')).toBe(1);
    expect(value(text, 'infiniband_job_links{job_id="48220",scope="switch"}')).toBe(0);
    expect(value(text, 'infiniband_job_links_impaired{job_id="48220",scope="host",reason="miswired"}')).toBe(1);
  });

  it("measures how long a job's links were stalled between two ports cycles: the demo's leaf uplinks 1.6 % of the time", async () => {
    // The recording moves every leaf uplink's PortXmitWait on by 500 000 ticks a second, at the
    // Switch-X tick of 32 ns: 1.6 % stalled (fabric-congestion.test.ts). Job 48213 crosses four uplinks.
    let now = 1_000_000;
    const command = parseCommandLine(['--demo=fabric']);
    if (command.action !== 'run') throw new Error('unexpected');
    const exporter = new Exporter({
      settings: command.settings,
      logger: pino({ level: 'silent' }),
      runners: { fabric: new RecordedRunner(DEMO, () => now) },
      now: () => now,
    });
    exporters.push(exporter);
    const first = await cycle(exporter);
    // One ports cycle: nothing measured yet, every link adds 0.
    expect(value(first, 'infiniband_job_congestion_ratio_max{job_id="48213",scope="switch"}')).toBe(0);
    expect(value(first, 'infiniband_job_congestion_ratio_sum{job_id="48213",scope="switch"}')).toBe(0);
    now += 60_000;
    const text = await cycle(exporter);
    expect(value(text, 'infiniband_job_congestion_ratio_max{job_id="48213",scope="switch"}')).toBeCloseTo(0.016, 3);
    expect(value(text, 'infiniband_job_congestion_ratio_sum{job_id="48213",scope="switch"}')).toBeCloseTo(4 * 0.016, 3);
    expect(value(text, 'infiniband_job_congestion_ratio_max{job_id="48213",scope="host"}')).toBeLessThan(0.01);
    // 1.6 % is no congestion; a job on one leaf crosses no uplink.
    expect(value(text, 'infiniband_job_links_impaired{job_id="48213",scope="switch",reason="congested"}')).toBe(0);
    expect(value(text, 'infiniband_job_congestion_ratio_max{job_id="48220",scope="switch"}')).toBe(0);
  });

  it('counts a link stalled 30 % of the ports cycle as congested: the demo with its transmit wait grown twentyfold', async () => {
    // Each PortXmitWait the sweep prints is replaced by 20 times its growth since the first sweep:
    // the leaf uplinks wait 10 million ticks a second, 32 % of the time at 32 ns a tick.
    let now = 1_000_000;
    const recorded = new RecordedRunner<string>(DEMO, () => now);
    const first = new Map<string, number>();
    const fabric: CommandRunner<string> = {
      run: async (command, args) => {
        const result = await recorded.run(command, args);
        if (command !== 'ibqueryerrors' || result.stdout === undefined) return result;
        const stdout = result.stdout.replace(/GUID (\S+) port (\S+): (.*)\[PortXmitWait == (\d+)\]/g, (_line, guid, port, rest, wait) => {
          const key = `${guid}/${port}`;
          if (!first.has(key)) first.set(key, Number(wait));
          return `GUID ${guid} port ${port}: ${rest}[PortXmitWait == ${(Number(wait) - first.get(key)!) * 20}]`;
        });
        return { ...result, stdout };
      },
    };
    const command = parseCommandLine(['--demo=fabric']);
    if (command.action !== 'run') throw new Error('unexpected');
    const exporter = new Exporter({ settings: command.settings, logger: pino({ level: 'silent' }), runners: { fabric }, now: () => now });
    exporters.push(exporter);
    await cycle(exporter);
    now += 60_000;
    const text = await cycle(exporter);
    expect(value(text, 'infiniband_job_congestion_ratio_max{job_id="48213",scope="switch"}')).toBeCloseTo(0.32, 2);
    expect(value(text, 'infiniband_job_congestion_ratio_sum{job_id="48213",scope="switch"}')).toBeCloseTo(4 * 0.32, 2);
    expect(value(text, 'infiniband_job_links_impaired{job_id="48213",scope="switch",reason="congested"}')).toBe(4);
    expect(value(text, 'infiniband_job_links_impaired{job_id="48213",scope="host",reason="congested"}')).toBe(0);
  });

  it("names the jobs each impaired link carries, with the job's host on an adapter link", async () => {
    const exporter = demoExporter([]);
    await cycle(exporter);
    const summaries = findingsOf(exporter.collectors.store.snapshot!)
      .filter((finding) => finding.condition === 'job-link-impaired')
      .map((finding) => finding.summary);
    expect(summaries.sort()).toEqual([
      'the adapter link port 6 of leaf-3 – port 1 of node23 is miswired and carries 1 running job: 48220 (bob, cfd-sweep, host node23)',
      'the inter-switch link port 1 of spine-1 – port 4 of leaf-1 is degraded and carries 1 running job: 48213 (alice, train-llm)',
    ]);
  });

  it("/fabric?job=ID draws that job's footprint; an unknown job is a 404", async () => {
    const exporter = demoExporter([]);
    await cycle(exporter);
    const page = await exporter.app.inject({ method: 'GET', url: '/fabric?job=48213' });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('Job 48213 (alice, train-llm) on 4 hosts: its 8 links');
    expect(page.body.match(/class="link job"/g)).toHaveLength(8);
    expect((await exporter.app.inject({ method: 'GET', url: '/fabric' })).body).not.toContain('class="link job"');
    const unknown = await exporter.app.inject({ method: 'GET', url: '/fabric?job=%3Cscript%3E' });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.headers['content-type']).toContain('text/plain');
  });

  it('reads squeue through the runner, counts hosts not found and leaves out one-host jobs', async () => {
    const text = await cycle(
      demoExporter(['--squeue.path', '/bin/true'], squeueSaying('7|carol|gpu|node[11,13],node99|a|b\n8|dan|cpu|node11|single\n')),
    );
    expect(value(text, 'infiniband_job_info{job_id="7",user="carol",partition="gpu",name="a|b"}')).toBe(1);
    expect(value(text, 'infiniband_job_hosts{job_id="7",state="not_found"}')).toBe(1);
    expect(value(text, 'infiniband_job_hosts{job_id="7",state="on_fabric"}')).toBe(2);
    expect(text).not.toContain('job_id="8"');
  });

  it('keeps its part while squeue prints the same jobs, and the placement of a job that stayed', async () => {
    let stdout = '7|carol|gpu|node[11,13]|a\n9|erin|gpu|node[12,14]|b\n';
    const exporter = demoExporter(['--squeue.path', '/bin/true'], {
      run: (command, args, signal) => squeueSaying(stdout).run(command, args, signal),
    });
    await cycle(exporter);
    const first = JOBS_PART.of(exporter.collectors.store.snapshot!)!;
    await exporter.collectors.runCycle(JOBS_CYCLE);
    // Nothing changed: the same part, whose series are not rendered again.
    expect(JOBS_PART.of(exporter.collectors.store.snapshot!)).toBe(first);
    stdout = '7|carol|gpu|node[11,13]|a\n9|erin|gpu|node[12,15]|b\n';
    await exporter.collectors.runCycle(JOBS_CYCLE);
    const second = JOBS_PART.of(exporter.collectors.store.snapshot!)!;
    expect(second).not.toBe(first);
    expect(second.jobs[0]).toBe(first.jobs[0]);
    expect(second.jobs[1]!.job.hosts).toEqual(['node12', 'node15']);
  });

  it("fails, keeping the fabric's series, when squeue cannot reach the controller", async () => {
    const text = await cycle(demoExporter(['--squeue.path', '/bin/true'], squeueSaying('', 1)));
    expect(value(text, 'infiniband_exporter_collector_success{collector="jobs"}')).toBe(0);
    expect(value(text, 'infiniband_exporter_collector_success{collector="fabric_ports"}')).toBe(1);
  });

  it('two shards give the links of one process between them', async () => {
    const one = await cycle(demoExporter([]));
    const shards = await Promise.all(['1/2', '2/2'].map((shard) => cycle(demoExporter(['--fabric.shard', shard]))));
    for (const series of [
      'infiniband_job_links{job_id="48213",scope="switch"}',
      'infiniband_job_links{job_id="48213",scope="host"}',
      'infiniband_job_links_impaired{job_id="48213",scope="switch",reason="degraded"}',
    ]) {
      expect(
        shards.map((text) => value(text, series) ?? 0).reduce((a, b) => a + b),
        series,
      ).toBe(value(one, series));
    }
    expect(value(shards[1]!, 'infiniband_job_info{job_id="48213",user="alice",partition="gpu",name="train-llm"}')).toBeUndefined();
  });

  it('reads a changed jobs file again', async () => {
    const directory = mkdtempSync(path.join(tmpdir(), 'jobs-'));
    const file = path.join(directory, 'jobs.yaml');
    writeFileSync(file, '- {id: 1, user: u, hosts: [node11, node21]}\n');
    const exporter = demoExporter(['--jobs.file', file]);
    expect(value(await cycle(exporter), 'infiniband_job_hosts{job_id="1",state="on_fabric"}')).toBe(2);
    writeFileSync(file, '- {id: 2, user: u, hosts: [node11, node21, node31]}\n');
    const text = await cycle(exporter);
    expect(text).not.toContain('job_id="1"');
    expect(value(text, 'infiniband_job_hosts{job_id="2",state="on_fabric"}')).toBe(3);
  });
});
