// A host that describes itself as another, on the real tools: the rail tree (test/fixtures/ibsim-topologies/
// rail-tree.net) on ibsim with opensm, gpu02's adapter carrying gpu01's NodeDescription from the
// start (any host sets its own). A plan naming both hosts by description: the server and `check`
// keep running and say which line no longer names one node; `topology save` writes those two by
// GUID, says so, and its plan reads back with nothing to say.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCheck } from '../../src/commands/check/command.js';
import { parseServeCommandLine } from '../../src/commands/serve/command-line.js';
import { Exporter } from '../../src/commands/serve/exporter.js';
import { runTopology } from '../../src/commands/topology/command.js';
import type { UsageError } from '../../src/config/errors.js';
import { findingsOf } from '../../src/findings/findings.js';
import { CABLING_FIXTURES } from '../support/cabling.js';
import { samplesOf as series, sampleValue as value, scrape } from '../support/exposition.js';
import { FABRIC_LAB_PACKAGES, Lab } from '../../synthetic/ibsim-lab.js';
import { requireSystemTools } from '../support/system.js';
import { FIXTURES } from '../support/trees.js';

const tools = requireSystemTools('a cloned NodeDescription on ibsim', FABRIC_LAB_PACKAGES);

const TOOL_HOST = 'G6A2';
const RAIL0_LEAF1 = '0x0002c90200700001';
const GPU01 = '0x0002c90300c01000';
const GPU02 = '0x0002c90300c02000';
const GPU03 = '0x0002c90300c03000';

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

describe.skipIf(tools.skipReason !== undefined)('a NodeDescription two hosts share, on ibsim', () => {
  let lab: Lab;
  let dir: string;
  let flags: string[];
  const exporters: Exporter[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'ibx-cabling-clone-'));
    const net = path.join(dir, 'rail-tree.net');
    const original = await readFile(path.join(FIXTURES, 'ibsim-topologies/rail-tree.net'), 'utf8');
    await writeFile(net, original.replace('Hca 1 "G2A0" # "gpu02 mlx5_0"', 'Hca 1 "G2A0" # "gpu01 mlx5_0"'));
    lab = await Lab.start(net);
    await lab.startSm('sm', 'S1', 10);
    await lab.waitSmState('sm', 'MASTER');
    for (const host of [TOOL_HOST, 'G1A0', 'G2A0', 'G3A0']) await lab.waitActive(host);
    flags = [
      ...(await lab.fabricExporterFlags(TOOL_HOST)),
      '--fabric.node-name-map',
      path.join(CABLING_FIXTURES, 'node-name-map'),
      '--diag.timeout',
      '10s',
      '--fabric.max-concurrent',
      '4',
    ];
  }, 60_000);

  afterAll(async () => {
    await Promise.all(exporters.map((made) => made.stop()));
    await lab?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('the server keeps running: the shared name is a finding with both nodes, the collector fails, the other line is judged', async () => {
    const plan = path.join(dir, 'by-description.txt');
    await writeFile(
      plan,
      ['rail0-leaf1 1 "gpu01 mlx5_0" 1', 'rail0-leaf1 2 "gpu02 mlx5_0" 1', 'rail0-leaf1 3 "gpu03 mlx5_0" 1', ''].join('\n'),
    );
    const fatal: UsageError[] = [];
    const command = parseServeCommandLine([...flags, '--fabric.topology-file', plan]);
    if (command.action !== 'run') throw new Error('unexpected');
    const server = new Exporter({
      settings: command.settings,
      logger: pino({ level: 'silent' }),
      runners: { module: 'not-installed' },
      onFatal: (error) => fatal.push(error),
    });
    exporters.push(server);
    await server.collectFabricOnce();
    const metrics = await scrape(server);
    expect(fatal).toEqual([]);
    expect(value(metrics, 'infiniband_exporter_collector_success{collector="fabric_cabling"}')).toBe(0);
    expect(series(metrics, 'infiniband_fabric_planned_link_status')).toEqual([
      `infiniband_fabric_planned_link_status{node_guid="${RAIL0_LEAF1}",port="3",peer_guid="${GPU03}",peer_port="1"} 0`,
    ]);
    // gpu02's own name is no node's now: missing; gpu01's is two nodes': not missing, not judged.
    expect(value(metrics, 'infiniband_fabric_plan_nodes_missing')).toBe(1);
    const findings = findingsOf(server.collectors.snapshot!).filter((finding) => finding.condition.startsWith('plan-'));
    expect(findings.map((finding) => finding.summary).sort()).toEqual([
      `"gpu01 mlx5_0" is the NodeDescription of 2 nodes (${GPU01}, ${GPU02}): its cables are not judged; a host copied another's NodeDescription, or name the node by GUID or node-name-map name in the plan (infiniband-exporter topology save does) (${plan} line 1)`,
      `"gpu02 mlx5_0", a node of the plan with 1 cable (to rail0-leaf1 port 2), names no node of the fabric: no node-name-map name or NodeDescription is "gpu02 mlx5_0" (${plan} line 2)`,
    ]);
  }, 90_000);

  it('topology save writes the two hosts by GUID and says so; check finds nothing against that plan', async () => {
    const plan = path.join(dir, 'saved.txt');
    const saved = io();
    expect(await runTopology(['save', plan, ...flags], saved.io)).toBe(0);
    expect(saved.out.stderr).toContain(
      'infiniband-exporter topology save: named 2 nodes by GUID, as no name is theirs alone: 2 share their NodeDescription with another node\n',
    );
    const text = await readFile(plan, 'utf8');
    expect(text).toMatch(new RegExp(`^rail0-leaf1 +1 +${GPU01} +1 `, 'm'));
    expect(text).toMatch(new RegExp(`^rail0-leaf1 +2 +${GPU02} +1 `, 'm'));
    expect(text).not.toContain('"gpu01 mlx5_0"');

    const checked = io();
    await runCheck([...flags, '--fabric.topology-file', plan, '--format', 'json'], checked.io, {
      runners: { module: 'not-installed', ethtool: 'not-installed' },
    });
    const report = JSON.parse(checked.out.stdout) as {
      findings: { condition: string }[];
      collectors: { collector: string; success: boolean }[];
    };
    expect(report.findings.filter((finding) => /^(plan-|cable-|planned-link)/.test(finding.condition))).toEqual([]);
    expect(report.collectors.find((collector) => collector.collector === 'fabric_cabling')?.success).toBe(true);
  }, 90_000);
});
