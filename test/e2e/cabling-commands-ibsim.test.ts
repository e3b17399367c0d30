// The cabling plan through the program, on the real tools: the rail tree (test/fixtures/ibsim-topologies/
// rail-tree.net) on ibsim with opensm; `topology save` writes it as a plan; `check` and the server
// with --fabric.topology-file find nothing on it; then four miswirings at once, live (a moved host
// cable, two swapped cables, an adapter on another rail's leaf, a pulled inter-switch link), and
// each is in check's words, in /metrics and on /fabric; a plan file edited badly is refused and
// the plan before stays; a plan that names no node is a finding in check and serve, never an exit
// (a plan that does not parse is: exit 2).
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseServeCommandLine } from '../../src/commands/serve/command-line.js';
import { Exporter } from '../../src/commands/serve/exporter.js';
import { runCheck } from '../../src/commands/check/command.js';
import { runTopology } from '../../src/commands/topology/command.js';
import type { UsageError } from '../../src/config/errors.js';
import { DISCOVERY_CYCLE, FABRIC_PORTS_CYCLE } from '../../src/collectors/fabric/fabric-mode.js';
import { CABLING_FIXTURES } from '../support/cabling.js';
import { samplesOf as series, sampleValue as value, scrape } from '../support/exposition.js';
import { FABRIC_LAB_PACKAGES, Lab } from '../../synthetic/ibsim-lab.js';
import { requireSystemTools } from '../support/system.js';

const tools = requireSystemTools('the cabling plan through the commands on ibsim', FABRIC_LAB_PACKAGES);

/** The host the tools run as: none of its cables is touched. */
const TOOL_HOST = 'G6A2';
const RAIL0_LEAF1 = '0x0002c90200700001';
const RAIL1_LEAF1 = '0x0002c90200700003';
const RAIL2_LEAF1 = '0x0002c90200700005';
const SPINE1 = '0x0002c90200600001';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

const io = () => {
  const out = { stdout: '', stderr: '' };
  return {
    out,
    io: {
      stdout: { write: (text: string) => (out.stdout += text), isTTY: false },
      stderr: { write: (text: string) => (out.stderr += text) },
      env: {},
    },
  };
};

async function topology(argv: string[]): Promise<Run> {
  const { out, io: streams } = io();
  const code = await runTopology(argv, streams);
  return { code, ...out };
}

async function check(argv: string[]): Promise<Run> {
  const { out, io: streams } = io();
  const code = await runCheck(argv, streams, { runners: { module: 'not-installed', ethtool: 'not-installed' } });
  return { code, ...out };
}

interface JsonReport {
  exit_code: number;
  findings: { condition: string; severity: string; summary: string; remedy: string }[];
  collectors: { collector: string; success: boolean; errors: { item: string; message: string }[] }[];
}

const CABLING_CONDITIONS = /^(cable-|planned-link|plan-node|rail-|unplanned)/;

describe.skipIf(tools.skipReason !== undefined)('the cabling plan through topology save, check and the server', () => {
  let lab: Lab;
  let dir: string;
  let flags: string[];
  let plan: string;
  const exporters: Exporter[] = [];

  function exporter(extra: string[] = [], onFatal?: (error: UsageError) => void): Exporter {
    const command = parseServeCommandLine([...flags, ...extra]);
    if (command.action !== 'run') throw new Error('unexpected');
    const made = new Exporter({
      settings: command.settings,
      logger: pino({ level: 'silent' }),
      runners: { module: 'not-installed' },
      ...(onFatal && { onFatal }),
    });
    exporters.push(made);
    return made;
  }

  beforeAll(async () => {
    lab = await Lab.start('rail-tree.net');
    dir = await mkdtemp(path.join(tmpdir(), 'ibx-cabling-commands-'));
    // The SM on the tool host, not on a switch: fabric mode reads each switch's XmitWait tick
    // (PortSamplesControl), which ibsim hands to an opensm bound on that switch (real switches answer
    // it in firmware), and which stops it.
    await lab.startSm('sm', TOOL_HOST, 10);
    await lab.waitSmState('sm', 'MASTER');
    for (const host of [TOOL_HOST, 'G1A0', 'G2A1', 'G3A1', 'G4A0']) await lab.waitActive(host);
    flags = [
      ...(await lab.fabricExporterFlags(TOOL_HOST)),
      '--fabric.node-name-map',
      path.join(CABLING_FIXTURES, 'node-name-map'),
      '--diag.timeout',
      '10s',
      '--fabric.max-concurrent',
      '4',
    ];
    plan = path.join(dir, 'plan.txt');
  }, 60_000);

  afterAll(async () => {
    await Promise.all(exporters.map((made) => made.stop()));
    await lab?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('saves the fabric as a plan, and finds nothing against it', async () => {
    const saved = await topology(['save', plan, ...flags]);
    expect(saved.stderr).toMatch(
      /^infiniband-exporter topology save: wrote the fabric \(\d+ nodes, 30 cables\) to .*plan\.txt as a cabling plan\n$/,
    );
    expect(saved.code).toBe(0);
    const text = await readFile(plan, 'utf8');
    expect(text).toMatch(/^rail0-leaf1 +1 +"gpu01 mlx5_0" +1 +4X QDR$/m);
    expect(text.split('\n').filter((line) => /^\S/.test(line) && !line.startsWith('#'))).toHaveLength(30);

    const { stdout } = await check([...flags, '--fabric.topology-file', plan, '--format', 'json']);
    const report = JSON.parse(stdout) as JsonReport;
    expect(report.findings.filter((finding) => CABLING_CONDITIONS.test(finding.condition))).toEqual([]);
    expect(report.collectors.find((collector) => collector.collector === 'fabric_cabling')).toMatchObject({ success: true, errors: [] });

    const server = exporter(['--fabric.topology-file', plan]);
    await server.collectFabricOnce();
    const metrics = await scrape(server);
    const statuses = series(metrics, 'infiniband_fabric_planned_link_status');
    expect(statuses).toHaveLength(30);
    expect(statuses.every((line) => line.endsWith(' 0'))).toBe(true);
    expect(value(metrics, 'infiniband_fabric_plan_nodes_missing')).toBe(0);
    expect(series(metrics, 'infiniband_fabric_unplanned_link_info')).toEqual([]);
    expect(series(metrics, 'infiniband_fabric_rail_violation')).toEqual([]);
    expect(value(metrics, 'infiniband_exporter_collector_success{collector="fabric_cabling"}')).toBe(1);
  }, 90_000);

  it('names each of four miswirings, with the cable to move, in check, /metrics and /fabric', async () => {
    await lab.replug('G1A0', 'L1', 6); // moved: rail0-leaf1 port 1 → port 6
    await lab.command('Unlink "G2A1"[1]');
    await lab.replug('G3A1', 'L3', 2); // swapped: rail1-leaf1 ports 2 and 3
    await lab.replug('G2A1', 'L3', 3);
    await lab.replug('G4A0', 'L4', 7); // rail: gpu04 mlx5_0 on rail1-leaf2
    await lab.command('Unlink "L5"[4]'); // pulled: rail2-leaf1 port 4 to spine-1 port 5

    const json = JSON.parse((await check([...flags, '--fabric.topology-file', plan, '--format', 'json'])).stdout) as JsonReport;
    expect(json.exit_code).toBe(1);
    const cabling = json.findings
      .filter((finding) => CABLING_CONDITIONS.test(finding.condition))
      .map((finding) => [finding.condition, finding.remedy]);
    expect(cabling).toEqual(
      expect.arrayContaining([
        ['cable-misplaced', 'move the cable in rail0-leaf1 port 6 to rail0-leaf1 port 1'],
        ['cable-swapped', 'swap the cables of rail1-leaf1 ports 2 and 3'],
        ['cable-misplaced', 'move the cable in rail1-leaf2 port 7 to rail0-leaf2 port 1'],
        ['rail-violation', 'move its cable to rail0-leaf2 port 1, where the plan puts it'],
        ['planned-link-missing', expect.stringMatching(/^plug the cable between rail2-leaf1 port 4 and spine-1 port 5/)],
      ]),
    );
    // The swap is one finding with both ports, not two.
    expect(cabling.filter(([condition]) => condition === 'cable-swapped')).toHaveLength(1);
    // A cable moved out of a port is not also reported as a pulled one.
    expect(
      json.findings.filter(
        (finding) => finding.condition === 'fabric-port-down' && /rail0-leaf1.* port 1\b|port 1 of rail0-leaf1/.test(finding.summary),
      ),
    ).toEqual([]);
    const text = await check([...flags, '--fabric.topology-file', plan]);
    expect(text.code).toBe(1);
    expect(text.stdout).toContain('→ swap the cables of rail1-leaf1 ports 2 and 3');

    const server = exporter(['--fabric.topology-file', plan]);
    await server.collectFabricOnce();
    const metrics = await scrape(server);
    expect(
      value(
        metrics,
        `infiniband_fabric_planned_link_status{node_guid="${RAIL0_LEAF1}",port="1",peer_guid="0x0002c90300c01000",peer_port="1"}`,
      ),
    ).toBe(2);
    expect(
      series(metrics, 'infiniband_fabric_planned_link_status').filter(
        (line) => line.startsWith(`infiniband_fabric_planned_link_status{node_guid="${RAIL1_LEAF1}"`) && line.endsWith(' 2'),
      ),
    ).toHaveLength(2);
    expect(
      value(metrics, `infiniband_fabric_planned_link_status{node_guid="${RAIL2_LEAF1}",port="4",peer_guid="${SPINE1}",peer_port="5"}`),
    ).toBe(1);
    expect(series(metrics, 'infiniband_fabric_rail_violation')).toHaveLength(1);
    expect(series(metrics, 'infiniband_fabric_unplanned_link_info').length).toBeGreaterThan(0);

    const page = await server.app.inject({ url: '/fabric' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.body).toContain('<svg');
    expect(page.body).toContain('swap the cables of rail1-leaf1 ports 2 and 3');
    expect(page.body).toMatch(/class="link [^"]*miswired/);
    expect(page.body).toMatch(/class="link [^"]*down/);
    const landing = await server.app.inject({ url: '/' });
    expect(landing.body).toContain('<a href="/fabric">/fabric</a>');
    expect(landing.body).toContain('swap the cables of rail1-leaf1 ports 2 and 3');
  }, 180_000);

  it('refuses a changed plan that does not parse, keeps the plan before, and takes a good one again', async () => {
    const server = exporter(['--fabric.topology-file', plan]);
    await server.collectFabricOnce();
    const good = await readFile(plan, 'utf8');
    await writeFile(plan, `${good}rail0-leaf1 1 "gpu01 mlx5_0"\n`);
    await server.collectors.runCycle(FABRIC_PORTS_CYCLE);
    let metrics = await scrape(server);
    expect(value(metrics, 'infiniband_exporter_collector_success{collector="fabric_cabling"}')).toBe(0);
    expect(series(metrics, 'infiniband_fabric_planned_link_status')).toHaveLength(30);
    const report = server.collectors.snapshot!.reports.find((candidate) => candidate.collector === 'fabric_cabling')!;
    expect(report.errors[0]!.message).toMatch(
      new RegExp(`^--fabric.topology-file ${plan.replace(/[.]/g, '\\.')}:\\d+: .*; the plan read before stays in force$`),
    );
    await writeFile(plan, good);
    server.reload();
    await server.collectors.runCycle(FABRIC_PORTS_CYCLE);
    metrics = await scrape(server);
    expect(value(metrics, 'infiniband_exporter_collector_success{collector="fabric_cabling"}')).toBe(1);
  }, 90_000);

  it('a plan that names no node is a finding naming file and line, never an exit; a plan that does not parse is exit 2', async () => {
    const typo = path.join(dir, 'typo.txt');
    await writeFile(typo, '# a typo on line 2\nrail0-leaf1 1 "gpu01 mlx5_O" 1\n');
    const run = await check([...flags, '--fabric.topology-file', typo, '--format', 'json']);
    expect(run.code).toBe(1);
    const report = JSON.parse(run.stdout) as JsonReport;
    expect(report.findings.filter((finding) => finding.condition === 'plan-node-missing').map((finding) => finding.summary)).toEqual([
      `"gpu01 mlx5_O", a node of the plan with 1 cable (to rail0-leaf1 port 1), names no node of the fabric: no node-name-map name or NodeDescription is "gpu01 mlx5_O" (${typo} line 2)`,
    ]);
    expect(report.collectors.find((collector) => collector.collector === 'fabric_cabling')).toMatchObject({
      success: false,
      errors: [{ item: `--fabric.topology-file ${typo}:2` }],
    });

    const malformed = path.join(dir, 'malformed.txt');
    await writeFile(malformed, 'rail0-leaf1 one "gpu01 mlx5_0" 1\n');
    const parsed = await check([...flags, '--fabric.topology-file', malformed]);
    expect(parsed.code).toBe(2);
    expect(parsed.stderr).toMatch(new RegExp(`^infiniband-exporter check: --fabric.topology-file ${malformed.replace(/[.]/g, '\\.')}:1: `));

    const fatal: UsageError[] = [];
    const server = exporter(['--fabric.topology-file', typo], (error) => fatal.push(error));
    await server.collectors.runCycle(DISCOVERY_CYCLE);
    await server.collectors.runCycle(FABRIC_PORTS_CYCLE);
    expect(fatal).toEqual([]);
    const metrics = await scrape(server);
    expect(value(metrics, 'infiniband_exporter_collector_success{collector="fabric_cabling"}')).toBe(0);
    expect(value(metrics, 'infiniband_fabric_plan_nodes_missing')).toBe(1);
  }, 90_000);
});
