// The fabric_cabling collector through a real Exporter on recorded tool outputs (test/fixtures/fabric-recordings/
// healthy): a plan naming hosts by NodeDescription, and a host that copies another's description —
// after start, or before the exporter starts. Any host can do that: the exporter never exits for it,
// the collector fails with a finding naming the plan line, and every other line is still judged.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { parseServeCommandLine } from '../../../../src/commands/serve/command-line.js';
import { Exporter } from '../../../../src/commands/serve/exporter.js';
import type { UsageError } from '../../../../src/config/errors.js';
import { DISCOVERY_CYCLE, FABRIC_PORTS_CYCLE } from '../../../../src/collectors/fabric/fabric-mode.js';
import { findingsOf } from '../../../../src/findings/findings.js';
import type { FabricCommand } from '../../../../src/sources/fabric/commands.js';
import { samplesOf as series, sampleValue as value, scrape } from '../../../support/exposition.js';
import { HOST11, HOST12, HOST13, LEAF1 } from '../../../support/fabric-recordings.js';
import { recording, ReplayRunner, result, writeRecordedCache, type Override } from '../../../support/replay.js';
import { FIXTURES, NO_INFINIBAND } from '../../../support/trees.js';

const CONFIG = path.join(FIXTURES, 'config/fabric.yml');
const exporters: Exporter[] = [];
const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(exporters.splice(0).map((exporter) => exporter.stop()));
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

// leaf-1 ports 1 to 3 are cabled to node11, node12 and node13 (test/fixtures/fabric-recordings/healthy).
const PLAN = [
  '# leaf-1 by GUID, the hosts by NodeDescription',
  `${LEAF1} 1 "node11 HCA-1" 1`,
  `${LEAF1} 2 "node12 HCA-1" 1`,
  `${LEAF1} 3 "node13 HCA-1" 1`,
  '',
].join('\n');

/** node13 describes itself as node12 (as `echo "node12 HCA-1" > /sys/class/infiniband/*\/node_desc` does). */
const cloning: Override<FabricCommand> = (command, args) => {
  if (command !== 'ibnetdiscover') return undefined;
  writeRecordedCache('healthy', args);
  return result(command, args, {
    stdout: recording('fabric', 'healthy', 'ibnetdiscover').stdout.replaceAll('"node13 HCA-1"', '"node12 HCA-1"'),
  });
};

async function planFile(text: string): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'cabling-collector-'));
  dirs.push(dir);
  const file = path.join(dir, 'plan.txt');
  await writeFile(file, text);
  return file;
}

function cablingExporter(runner: ReplayRunner<FabricCommand>, plan: string, fatal: UsageError[]): Exporter {
  const command = parseServeCommandLine([
    '--path.sysfs',
    NO_INFINIBAND,
    '--config.file',
    CONFIG,
    '--diag.timeout',
    '2s',
    '--fabric.topology-file',
    plan,
  ]);
  if (command.action !== 'run') throw new Error('unexpected');
  const exporter = new Exporter({
    settings: command.settings,
    logger: pino({ level: 'silent' }),
    runners: { module: 'not-installed', fabric: runner },
    onFatal: (error) => fatal.push(error),
  });
  exporters.push(exporter);
  return exporter;
}

const status = (text: string, host: string, port: number): number | undefined =>
  value(text, `infiniband_fabric_planned_link_status{node_guid="${LEAF1}",port="${port}",peer_guid="${host}",peer_port="1"}`);
const success = (text: string): number | undefined => value(text, 'infiniband_exporter_collector_success{collector="fabric_cabling"}');
const cablingFindings = (exporter: Exporter) =>
  findingsOf(exporter.collectors.snapshot!).filter(
    (finding) => finding.condition === 'collector-failing' || finding.condition.startsWith('plan-'),
  );

describe('a plan whose names stop resolving', () => {
  it('a NodeDescription copied after start: no exit, a finding naming the line and both nodes, the collector fails, every line still judged', async () => {
    const fatal: UsageError[] = [];
    const plan = await planFile(PLAN);
    const runner = new ReplayRunner<FabricCommand>('fabric', ['healthy']);
    const exporter = cablingExporter(runner, plan, fatal);
    await exporter.collectFabricOnce();
    let text = await scrape(exporter);
    expect(success(text)).toBe(1);
    expect([status(text, HOST11, 1), status(text, HOST12, 2), status(text, HOST13, 3)]).toEqual([0, 0, 0]);
    expect(cablingFindings(exporter)).toEqual([]);

    runner.override = cloning;
    await exporter.collectors.runCycle(DISCOVERY_CYCLE);
    await exporter.collectors.runCycle(FABRIC_PORTS_CYCLE);
    text = await scrape(exporter);
    expect(fatal).toEqual([]);
    expect(success(text)).toBe(0);
    // Each line stays with the node it named: node12's under its GUID, node13's cable too (bound before).
    expect([status(text, HOST11, 1), status(text, HOST12, 2), status(text, HOST13, 3)]).toEqual([0, 0, 0]);
    expect(value(text, 'infiniband_fabric_plan_nodes_missing')).toBe(0);
    const findings = cablingFindings(exporter);
    expect(findings.map((finding) => [finding.condition, finding.severity, finding.alert])).toEqual([
      ['plan-name-ambiguous', 'warning', 'InfiniBandExporterCollectorFailing'],
    ]);
    expect(findings[0]!.summary).toBe(
      `"node12 HCA-1" is the NodeDescription of 2 nodes (${HOST12}, ${HOST13}): judged as ${HOST12}, the node it named before, until the exporter restarts; a host copied another's NodeDescription, or name the node by GUID or node-name-map name in the plan (infiniband-exporter topology save does) (${plan} line 3)`,
    );
    const report = exporter.collectors.snapshot!.reports.find((candidate) => candidate.collector === 'fabric_cabling')!;
    expect(report.errors.map((error) => error.item)).toEqual([`--fabric.topology-file ${plan}:3`]);

    // The host takes its own name back: the collector works again.
    runner.override = undefined;
    await exporter.collectors.runCycle(DISCOVERY_CYCLE);
    await exporter.collectors.runCycle(FABRIC_PORTS_CYCLE);
    text = await scrape(exporter);
    expect(success(text)).toBe(1);
    expect(cablingFindings(exporter)).toEqual([]);
  });

  it('a NodeDescription already shared at start, and a name no node has: no exit; those lines are findings, the rest is judged', async () => {
    const fatal: UsageError[] = [];
    const plan = await planFile(`${PLAN}${LEAF1} 8 "node99 HCA-1" 1\n`);
    const exporter = cablingExporter(new ReplayRunner<FabricCommand>('fabric', ['healthy'], cloning), plan, fatal);
    await exporter.collectFabricOnce();
    const text = await scrape(exporter);
    expect(fatal).toEqual([]);
    expect(success(text)).toBe(0);
    expect(status(text, HOST11, 1)).toBe(0);
    // Neither of the nodes that share the name is judged as it, and node13's own name is no node's
    // now: no series for lines 3, 4 and 5.
    expect(series(text, 'infiniband_fabric_planned_link_status')).toHaveLength(1);
    // The unknown names are missing nodes; the shared one is not.
    expect(value(text, 'infiniband_fabric_plan_nodes_missing')).toBe(2);
    const findings = cablingFindings(exporter);
    expect(findings.map((finding) => finding.condition).sort()).toEqual(['plan-name-ambiguous', 'plan-node-missing', 'plan-node-missing']);
    expect(findings.find((finding) => finding.condition === 'plan-name-ambiguous')!.summary).toMatch(
      new RegExp(
        `^"node12 HCA-1" is the NodeDescription of 2 nodes \\(${HOST12}, ${HOST13}\\): its cables are not judged; .* \\(${plan.replace(/[.]/g, '\\.')} line 3\\)$`,
      ),
    );
    expect(findings.filter((finding) => finding.condition === 'plan-node-missing').map((finding) => finding.summary)).toContain(
      `"node99 HCA-1", a node of the plan with 1 cable (to MF0;leaf-1:SX6036/U1 port 8), names no node of the fabric: no node-name-map name or NodeDescription is "node99 HCA-1" (${plan} line 5)`,
    );
    const report = exporter.collectors.snapshot!.reports.find((candidate) => candidate.collector === 'fabric_cabling')!;
    expect(report.errors.map((error) => error.item)).toEqual([3, 4, 5].map((line) => `--fabric.topology-file ${plan}:${line}`));
    // The collector's own failure is not said a second time: the findings above say it.
    expect(findings.filter((finding) => finding.condition === 'collector-failing')).toEqual([]);
  });

  it('a plan that resolves nothing at start (the fabric half up): no exit, every line a finding', async () => {
    const fatal: UsageError[] = [];
    const plan = await planFile('"gpu01 mlx5_0" 1 "gpu02 mlx5_0" 1\n');
    const exporter = cablingExporter(new ReplayRunner<FabricCommand>('fabric', ['healthy']), plan, fatal);
    await exporter.collectFabricOnce();
    const text = await scrape(exporter);
    expect(fatal).toEqual([]);
    expect(success(text)).toBe(0);
    expect(value(text, 'infiniband_fabric_plan_nodes_missing')).toBe(2);
    expect(cablingFindings(exporter).map((finding) => finding.condition)).toEqual(['plan-node-missing', 'plan-node-missing']);
  });
});
