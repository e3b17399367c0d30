// The cabling plan and the rails against the real tools: the rail tree (test/fixtures/ibsim-topologies/
// rail-tree.net: 3 rails x 2 leaves, 6 hosts x 3 adapters, 2 spines) on ibsim with opensm, read as
// fabric mode reads it — ibnetdiscover for the discovery, iblinkinfo and ibqueryerrors for the
// ports cycle, through the project's runner, parsers and sources — saved as a plan, then miswired
// live with ibsim's console (Unlink, then Link elsewhere) and judged after each change. The
// collector that runs this every cycle is tested through the commands in cabling-commands-ibsim.test.ts;
// this is its judgement on real outputs, step by step.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cablingFindings } from '../../src/collectors/fabric/cabling/findings.js';
import { ExecaRunner } from '../../src/sources/command-runner.js';
import { parsePlan } from '../../src/sources/fabric/cabling-plan.js';
import { resolvePlan } from '../../src/sources/fabric/cabling-plan-resolution.js';
import { formatPlan } from '../../src/sources/fabric/cabling-plan-writer.js';
import { FabricCycle } from '../../src/sources/fabric/commands.js';
import { discoverFabric } from '../../src/sources/fabric/discovery.js';
import { readFabricPorts } from '../../src/sources/fabric/ports.js';
import { currentCabling, type CablingReport, type ResolvedPlan } from '../../src/model/cabling.js';
import { judgeConformance } from '../../src/model/cabling-conformance.js';
import type { FabricPortReading, FabricTopology } from '../../src/model/fabric.js';
import { judgeRails } from '../../src/model/rails.js';
import type { FabricCommand } from '../../src/sources/fabric/commands.js';
import { railTreeNames } from '../support/cabling.js';
import { FABRIC_LAB_PACKAGES, FABRIC_TOOLS, Lab } from '../../synthetic/ibsim-lab.js';
import { requireSystemTools } from '../support/system.js';

const tools = requireSystemTools('cabling plan on ibsim', FABRIC_LAB_PACKAGES);

/** The host the tools run as: none of its cables is touched. */
const TOOL_HOST = 'G6A2';

describe.skipIf(tools.skipReason !== undefined)('cabling plan and rails on a simulated rail-optimised fat tree', () => {
  let lab: Lab;
  let runner: ExecaRunner<FabricCommand>;
  let scratch: string;
  let discoveries = 0;
  let plan: ResolvedPlan;

  /** One discovery and one ports cycle, as fabric mode runs them. */
  async function read(): Promise<{ topology: FabricTopology; readings: ReadonlyMap<string, FabricPortReading>; text: string }> {
    const discovery = new FabricCycle({ runner, timeoutMs: 10_000 });
    const found = await discoverFabric(
      discovery,
      path.join(scratch, `topology-${++discoveries}.cache`),
      railTreeNames(),
      Date.now() / 1000,
    );
    expect(discovery.report().errors).toEqual([]);
    const ports = new FabricCycle({ runner, timeoutMs: 10_000 });
    const reading = await readFabricPorts(ports, {
      counterSource: 'sweep',
      unreachable: new Set(),
      topology: found!.topology,
      cache: found!.cache,
      covers: () => true,
      hcaPorts: false,
      scratch,
    });
    return { topology: found!.topology, readings: reading.ports, text: found!.text };
  }

  /** The cabling findings of the fabric now against the plan: [condition, remedy]. */
  async function judge(): Promise<{ report: CablingReport; findings: string[][] }> {
    const { topology, readings } = await read();
    const resolved = resolvePlan(plan.plan, topology, railTreeNames(), plan.bindings);
    expect(resolved.problems).toEqual([]);
    const cabling = currentCabling(topology, readings);
    const report: CablingReport = {
      conformance: judgeConformance(resolved, topology, readings, cabling),
      rails: judgeRails(topology, cabling, undefined),
    };
    return { report, findings: cablingFindings(report, topology).map((finding) => [finding.condition, finding.remedy]) };
  }

  beforeAll(async () => {
    lab = await Lab.start('rail-tree.net');
    scratch = await mkdtemp(path.join(tmpdir(), 'ibx-cabling-'));
    await lab.startSm('sm', 'S1', 10);
    await lab.waitSmState('sm', 'MASTER');
    for (const host of [TOOL_HOST, 'G1A0', 'G3A1', 'G5A2']) await lab.waitActive(host);
    const paths = await lab.wrappers(TOOL_HOST, TOOL_HOST, FABRIC_TOOLS);
    runner = new ExecaRunner<FabricCommand>({ paths, timeoutMs: 10_000, maxConcurrent: 4 });
    // topology save: the healthy fabric as a plan, read back.
    const { topology, readings } = await read();
    const text = formatPlan(topology, readings);
    expect(text.split('\n').filter((line) => /^\S/.test(line) && !line.startsWith('#'))).toHaveLength(30);
    const parsed = parsePlan(text, 'plan.txt');
    expect(parsed.errors).toEqual([]);
    const resolved = resolvePlan(parsed.plan!, topology, railTreeNames());
    expect(resolved.problems).toEqual([]);
    plan = resolved;
  }, 60_000);

  afterAll(async () => {
    await lab?.stop();
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  it('finds nothing on the fabric the plan was saved from, and infers its three rails', async () => {
    const { report, findings } = await judge();
    expect(findings).toEqual([]);
    expect(report.conformance!.links.every((link) => link.status === 0)).toBe(true);
    expect([...report.rails!.rails.keys()]).toEqual(['mlx5_0', 'mlx5_1', 'mlx5_2']);
  }, 30_000);

  it("finds nothing either against the discovery's own text saved as the plan (topology save --format ibnetdiscover)", async () => {
    const { topology, readings, text } = await read();
    const parsed = parsePlan(text, 'saved.ibnetdiscover');
    expect(parsed.plan?.format).toBe('ibnetdiscover');
    const resolved = resolvePlan(parsed.plan!, topology, railTreeNames());
    expect(resolved.problems).toEqual([]);
    const conformance = judgeConformance(resolved, topology, readings);
    expect(conformance.links).toHaveLength(30);
    expect(conformance.links.every((link) => link.status === 0)).toBe(true);
    expect(cablingFindings({ conformance, rails: undefined }, topology)).toEqual([]);
  }, 30_000);

  it('says where a moved host cable is and where it belongs', async () => {
    await lab.replug('G1A0', 'L1', 6);
    const { report, findings } = await judge();
    expect(findings).toEqual([['cable-misplaced', 'move the cable in rail0-leaf1 port 6 to rail0-leaf1 port 1']]);
    expect(
      report
        .conformance!.links.filter((link) => link.status !== 0)
        .map((link) => [link.cable.ends[0].written, link.cable.ends[0].port, link.status]),
    ).toEqual([['rail0-leaf1', 1, 2]]);
    await lab.replug('G1A0', 'L1', 1);
    expect((await judge()).findings).toEqual([]);
  }, 60_000);

  it('names two swapped cables as one swap, with both ports', async () => {
    await lab.command('Unlink "G2A1"[1]');
    await lab.replug('G3A1', 'L3', 2);
    await lab.replug('G2A1', 'L3', 3);
    const { findings } = await judge();
    expect(findings).toEqual([['cable-swapped', 'swap the cables of rail1-leaf1 ports 2 and 3']]);
    await lab.command('Unlink "G3A1"[1]');
    await lab.replug('G2A1', 'L3', 2);
    await lab.replug('G3A1', 'L3', 3);
    expect((await judge()).findings).toEqual([]);
  }, 60_000);

  it("finds an adapter on another rail's leaf, with the move back", async () => {
    await lab.replug('G4A0', 'L4', 7);
    const { report, findings } = await judge();
    expect(findings).toEqual([
      ['cable-misplaced', 'move the cable in rail1-leaf2 port 7 to rail0-leaf2 port 1'],
      ['rail-violation', 'move its cable to rail0-leaf2 port 1, where the plan puts it'],
    ]);
    expect(report.rails!.violations.map((v) => [v.rail, v.leafRail])).toEqual([['mlx5_0', 'mlx5_1']]);
    await lab.replug('G4A0', 'L2', 1);
    expect((await judge()).findings).toEqual([]);
  }, 60_000);

  it('finds a pulled inter-switch link as a planned link with no link', async () => {
    await lab.command('Unlink "L5"[4]');
    const { report, findings } = await judge();
    expect(findings).toEqual([
      [
        'planned-link-missing',
        "plug the cable between rail2-leaf1 port 4 and spine-1 port 5, or reseat it at both ends; if the link stays down, replace the cable or transceiver (ibportstate -G 0x0002c90200700005 4 query shows the port's state)",
      ],
    ]);
    expect(report.conformance!.links.filter((link) => link.status !== 0).map((link) => link.status)).toEqual([1]);
    await lab.command('ReLink "L5"[4]');
  }, 30_000);
});
