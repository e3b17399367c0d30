// The cabling plan's two formats, its errors (line and what was expected), resolution against a
// recorded fabric, and `topology save`'s writing, on test/fixtures/cabling/ (test/fixtures/ibsim-topologies/rail-tree.net).
import { describe, expect, it } from 'vitest';
import { inSlices } from '../../src/event-loop/time-slices.js';
import { parsePlan, parsePlanSteps, planErrorMessage, planFormat } from '../../src/sources/fabric/cabling-plan.js';
import { resolvePlan, resolvePlanSteps } from '../../src/sources/fabric/cabling-plan-resolution.js';
import { MAX_PLAN_ERRORS } from '../../src/sources/fabric/cabling-plan-lines.js';
import { generateFabric, ibnetdiscover } from '../../synthetic/fabric-generator/index.js';
import { fatTreeFabric } from '../../synthetic/fat-tree.js';
import { countTurns } from '../support/event-loop-turns.js';
import { formatPlan, planNames, planToken } from '../../src/sources/fabric/cabling-plan-writer.js';
import { judgeConformance } from '../../src/model/cabling-conformance.js';
import { cablingFixture, plan, railTreeNames, recordedRailTree } from '../support/cabling.js';

const LEAF1 = '0x0002c90200700001';
const SPINE1 = '0x0002c90200600001';
const GPU01_0 = '0x0002c90300c01000';

describe('cabling plan format', () => {
  it('reads cables with quoted names, GUIDs, comments, blank lines and every way to write width and speed', () => {
    const parsed = plan(
      [
        '# rail 0',
        '',
        'rail0-leaf1 1 "gpu01 mlx5_0" 1 4X HDR   # a host',
        '  rail0-leaf1\t4  spine-1 1  hdr 4x',
        '0x2c90200700001 5 0x0002c90200600002 1 4xQDR',
        '"0x0002c90200700002" 4 "say \\"hi\\" \\\\ there" 2 12',
        'leaf 7 other 9 FDR10',
      ].join('\n'),
    );
    expect(parsed.format).toBe('plan');
    expect(
      parsed.cables.map((cable) => [
        cable.line,
        ...cable.ends.flatMap((end) => [end.node.text, end.node.guid ?? '-', end.port]),
        cable.width ?? '-',
        cable.speed ?? '-',
      ]),
    ).toEqual([
      [3, 'rail0-leaf1', '-', 1, 'gpu01 mlx5_0', '-', 1, 4, 'HDR'],
      [4, 'rail0-leaf1', '-', 4, 'spine-1', '-', 1, 4, 'HDR'],
      [5, '0x2c90200700001', LEAF1, 5, '0x0002c90200600002', '0x0002c90200600002', 1, 4, 'QDR'],
      // Quoted: always a name, even one that looks like a GUID.
      [6, '0x0002c90200700002', '-', 4, 'say "hi" \\ there', '-', 2, 12, '-'],
      [7, 'leaf', '-', 7, 'other', '-', 9, '-', 'FDR10'],
    ]);
  });

  it.each([
    [
      'leaf07 12 node-001',
      1,
      'expected "<node> <port> <peer node> <peer port> [width] [speed]" (a node name with spaces in double quotes), got 3 fields',
    ],
    [
      'leaf07 12 node-001 HCA-1 1',
      1,
      'expected a port number 1–255 after "node-001", got "HCA-1" (a node name with spaces goes in double quotes)',
    ],
    ['leaf07 0 node 1', 1, 'expected a port number 1–255 after "leaf07", got "0"'],
    ['leaf07 256 node 1', 1, 'expected a port number 1–255 after "leaf07", got "256"'],
    ['leaf07 "12" node 1', 1, 'expected a port number 1–255 after "leaf07", got "12" in quotes'],
    ['leaf07 12 "node-001 HCA-1 1', 1, 'expected a closing " for the quoted name'],
    ['leaf07 12 "node"x 1', 1, 'expected a space after the closing " of a quoted name'],
    [
      'leaf07 12 node 1 3X',
      1,
      'expected a width (1X 2X 4X 8X 12X) and/or a speed (SDR DDR QDR FDR10 FDR EDR HDR NDR XDR), got "3X" after the ports',
    ],
    [
      'leaf07 12 node 1 4X HDX',
      1,
      'expected a width (1X 2X 4X 8X 12X) and/or a speed (SDR DDR QDR FDR10 FDR EDR HDR NDR XDR), got "HDX" after the ports',
    ],
    [
      'leaf07 12 node 1 4X 1X',
      1,
      'expected a width (1X 2X 4X 8X 12X) and/or a speed (SDR DDR QDR FDR10 FDR EDR HDR NDR XDR), got "1X" after the ports',
    ],
    [
      '\n\nleaf07 12 node 1\nleaf07 12 other 1',
      4,
      'port 12 of leaf07 is already cabled at line 3: expected each port in one cable at most',
    ],
    ['leaf07 12 node 1\nnode 1 spine 3', 2, 'port 1 of node is already cabled at line 1: expected each port in one cable at most'],
    ['leaf07 12 leaf07 12', 1, 'expected two different ports, got port 12 of leaf07 at both ends'],
    ['"" 1 node 1', 1, 'expected a node (a GUID, a node-name-map name or a NodeDescription), got ""'],
  ])('refuses %j at line %i', (text, line, message) => {
    const parsed = parsePlan(text, 'plan.txt');
    expect(parsed.plan).toBeUndefined();
    expect(parsed.errors[0]).toEqual({ line, message });
  });

  it('words an error as the one line of exit 2: where the file was given, file, line, what was expected', () => {
    const [error] = parsePlan('leaf07 12 node-001 HCA-1 1', 'plan.txt').errors;
    expect(planErrorMessage('--fabric.topology-file', 'plan.txt', error!)).toBe(
      '--fabric.topology-file plan.txt:1: expected a port number 1–255 after "node-001", got "HCA-1" (a node name with spaces goes in double quotes)',
    );
  });

  it('lists every error of a file, in line order', () => {
    expect(parsePlan('a 1 b\nok 1 fine 1\nc x d 1\n', 'plan.txt').errors.map((error) => error.line)).toEqual([1, 3]);
  });

  it('quotes names that need it when writing', () => {
    expect(['leaf07', 'node-001 HCA-1', 'MF0;leaf-1:SX6036/U1', 'a#b', 'say "hi"', '0x0002c90200700002', ''].map(planToken)).toEqual([
      'leaf07',
      '"node-001 HCA-1"',
      'MF0;leaf-1:SX6036/U1',
      '"a#b"',
      '"say \\"hi\\""',
      '"0x0002c90200700002"',
      '""',
    ]);
  });
});

describe('a saved ibnetdiscover output as a plan', () => {
  const text = cablingFixture('healthy', 'ibnetdiscover.stdout');

  it('takes every cable once, switch end first, with the rate it trained at', () => {
    expect(planFormat(text)).toBe('ibnetdiscover');
    const parsed = plan(text);
    expect(parsed.format).toBe('ibnetdiscover');
    // 6 leaves x 2 spines, 6 hosts x 3 adapters.
    expect(parsed.cables).toHaveLength(30);
    const host = parsed.cables.find((cable) => cable.ends[1].node.guid === GPU01_0)!;
    expect(host.ends.map((end) => [end.node.guid, end.port])).toEqual([
      [LEAF1, 1],
      [GPU01_0, 1],
    ]);
    expect([host.width, host.speed]).toEqual([4, 'QDR']);
    expect(parsed.cables.filter((cable) => cable.ends.every((end) => parsed.nodes.get(end.node.guid!)?.type === 'switch'))).toHaveLength(
      12,
    );
  });

  it('refuses a line it does not understand, and two lines that cable one port twice, by line number', () => {
    const lines = text.split('\n');
    const port = lines.findIndex((line) => line.startsWith('[2]'));
    const broken = [...lines];
    broken[port] = '[2] garbage';
    expect(parsePlan(broken.join('\n'), 'saved.txt').errors).toEqual([
      {
        line: port + 1,
        message:
          'expected an ibnetdiscover line (a node record, or a port line such as [1] "S-0002c90200400000"[3] # "desc" lid 2 4xQDR), got "[2] garbage"',
      },
    ]);
    const twice = [...lines];
    twice[port] = lines[port - 1]!.replace(/^\[1\]/, '[2]');
    const errors = parsePlan(twice.join('\n'), 'saved.txt').errors;
    expect(errors[0]?.line).toBe(port + 1);
    expect(errors[0]?.message).toMatch(
      /^port 2 of 0x[0-9a-f]{16} is cabled to port 1 of 0x[0-9a-f]{16} here, but line \d+ cables one of these ports elsewhere/,
    );
  });
});

describe('a large plan in time slices', () => {
  it('a saved ibnetdiscover output: the ibnetdiscover parser driven line by line in slices, the same plan as at once, its errors by line number', async () => {
    const chunks: string[] = [];
    ibnetdiscover(generateFabric({ shape: { tiers: 3, hosts: 2048, radix: 32 } }), (chunk) => chunks.push(chunk));
    const saved = chunks.join('');
    const turns = countTurns();
    const sliced = await inSlices(parsePlanSteps(saved, 'saved.txt'));
    expect(turns.stop()).toBeGreaterThanOrEqual(2);
    expect(sliced).toEqual(parsePlan(saved, 'saved.txt'));
    expect(sliced.plan!.cables.length).toBeGreaterThan(4000);

    const lines = saved.split('\n');
    const last = lines.findLastIndex((line) => line.startsWith('['));
    lines[last] = '[9] garbage';
    expect((await inSlices(parsePlanSteps(lines.join('\n'), 'saved.txt'))).errors).toEqual([
      {
        line: last + 1,
        message:
          'expected an ibnetdiscover line (a node record, or a port line such as [1] "S-0002c90200400000"[3] # "desc" lid 2 4xQDR), got "[9] garbage"',
      },
    ]);
  });

  it('a file of junk keeps the first 100 errors, not one per line (the first is the one said)', () => {
    const junk = parsePlan('y\n'.repeat(1_000_000), 'junk.txt');
    expect(junk.errors).toHaveLength(MAX_PLAN_ERRORS);
    expect(junk.errors[0]).toEqual({
      line: 1,
      message: 'expected "<node> <port> <peer node> <peer port> [width] [speed]" (a node name with spaces in double quotes), got 1 field',
    });
    expect(junk.errors.at(-1)!.line).toBe(MAX_PLAN_ERRORS);
  });

  it('resolving 13 920 cables by name: in slices, the same resolution as at once', async () => {
    const { topology, readings } = fatTreeFabric({ spines: 16, leaves: 120, hostsPerLeaf: 100 });
    const written = plan(formatPlan(topology, readings));
    const turns = countTurns();
    const sliced = await inSlices(resolvePlanSteps(written, topology, new Map()));
    expect(turns.stop()).toBeGreaterThanOrEqual(2);
    expect(sliced).toEqual(resolvePlan(written, topology, new Map()));
    expect(sliced.cables).toHaveLength(120 * (16 + 100));
    expect(sliced.problems).toEqual([]);
  });
});

describe('resolving a plan against the fabric', () => {
  const { topology, readings } = recordedRailTree('healthy');
  const names = railTreeNames();
  /** The fabric with gpu02's adapter describing itself as gpu01's (any host sets its own NodeDescription). */
  const GPU02_0 = [...topology.nodes.values()].find((node) => node.description === 'gpu02 mlx5_0')!.guid;
  const cloned = {
    ...topology,
    nodes: new Map([...topology.nodes].map(([guid, node]) => [guid, guid === GPU02_0 ? { ...node, description: 'gpu01 mlx5_0' } : node])),
  };

  it('names nodes by GUID, node-name-map name or NodeDescription', () => {
    const resolved = resolvePlan(
      plan([`rail0-leaf1 1 "gpu01 mlx5_0" 1`, `${LEAF1} 4 "MF0;spine-1:MQM8700/U1" 1`].join('\n')),
      topology,
      names,
    );
    expect(resolved.problems).toEqual([]);
    expect(resolved.cables.map((cable) => cable.ends.map((end) => [end.nodeGuid, end.port]))).toEqual([
      [
        [LEAF1, 1],
        [GPU01_0, 1],
      ],
      [
        [LEAF1, 4],
        [SPINE1, 1],
      ],
    ]);
    expect(resolved.bindings.get('gpu01 mlx5_0')).toBe(GPU01_0);
  });

  it('leaves a name no node has, a name several nodes have, and a port cabled twice under two names as problems, and judges the rest', () => {
    const twins = {
      ...topology,
      nodes: new Map([
        ...topology.nodes,
        ['0x0000000000000001', { ...topology.nodes.get(GPU01_0)!, guid: '0x0000000000000001', description: 'twin' }],
        ['0x0000000000000002', { ...topology.nodes.get(GPU01_0)!, guid: '0x0000000000000002', description: 'twin' }],
      ]),
    };
    const resolved = resolvePlan(
      plan(
        [
          'rail0-leaf1 1 "gpu01 mlx5_9" 1',
          'rail0-leaf1 2 twin 1',
          `${LEAF1} 2 spine-1 8`,
          'rail0-leaf1 3 twin 2',
          'rail0-leaf1 4 spine-1 1',
        ].join('\n'),
      ),
      twins,
      names,
    );
    expect(resolved.problems).toEqual([
      {
        kind: 'unknown',
        name: 'gpu01 mlx5_9',
        lines: [1],
        guids: [],
        message:
          '"gpu01 mlx5_9" names no node: no node-name-map name or NodeDescription in the fabric is "gpu01 mlx5_9": a typo, or a host down since the exporter started; name the node by GUID or node-name-map name in the plan (infiniband-exporter topology save does)',
      },
      {
        kind: 'ambiguous',
        name: 'twin',
        lines: [2, 4],
        guids: ['0x0000000000000001', '0x0000000000000002'],
        message:
          '"twin" is the NodeDescription of 2 nodes (0x0000000000000001, 0x0000000000000002): its cables are not judged; a host copied another\'s NodeDescription, or name the node by GUID or node-name-map name in the plan (infiniband-exporter topology save does)',
      },
      {
        kind: 'conflict',
        name: LEAF1,
        lines: [3],
        guids: [LEAF1],
        message: `port 2 of "${LEAF1}" (${LEAF1}) is already cabled at line 2, under another name: this cable is not judged; name the node by GUID or node-name-map name in the plan (infiniband-exporter topology save does)`,
      },
    ]);
    // Line 5 is judged; lines 1, 2 and 4 are not (an end no name resolved); line 3 is left out.
    expect(resolved.cables.map((cable) => cable.line)).toEqual([5]);
    expect(resolved.unjudged.map((cable) => cable.line)).toEqual([1, 2, 4]);
    // The unknown name is a missing node; the shared one is not (its nodes are there).
    const conformance = judgeConformance(resolved, twins, readings);
    expect(conformance.missingNodes.map((node) => [node.written, node.cables.map((cable) => cable.line)])).toEqual([['gpu01 mlx5_9', [1]]]);
    expect(conformance.links.map((link) => [link.cable.line, link.status])).toEqual([[5, 0]]);
    expect([conformance.actions, conformance.unplanned]).toEqual([[], []]);
  });

  it('leaves a name of two nodes of the node-name-map unresolved, as a problem', () => {
    const resolved = resolvePlan(
      plan('leaf 1 rail0-leaf1 8'),
      topology,
      new Map([...names, ['0x0000000000000009', 'leaf'], ['0x000000000000000a', 'leaf']]),
    );
    expect(resolved.problems.map((problem) => [problem.kind, problem.lines, problem.guids])).toEqual([
      ['ambiguous', [1], ['0x0000000000000009', '0x000000000000000a']],
    ]);
    expect(resolved.problems[0]!.message).toMatch(
      /^"leaf" is the node-name-map name of 2 nodes \(0x0000000000000009, 0x000000000000000a\): its cables are not judged/,
    );
  });

  it('leaves a node named by GUID or node-name-map name that the fabric lacks to the missing count, not to problems', () => {
    const fewer = { ...topology, nodes: new Map([...topology.nodes].filter(([guid]) => guid !== LEAF1 && guid !== GPU01_0)) };
    const resolved = resolvePlan(plan(`rail0-leaf1 1 ${GPU01_0} 1`), fewer, names);
    expect(resolved.problems).toEqual([]);
    expect(resolved.cables[0]!.ends.map((end) => end.nodeGuid)).toEqual([LEAF1, GPU01_0]);
  });

  it('keeps a NodeDescription bound to its GUID once the node has left the fabric', () => {
    const first = resolvePlan(plan('rail0-leaf1 1 "gpu01 mlx5_0" 1'), topology, names);
    const gone = { ...topology, nodes: new Map([...topology.nodes].filter(([guid]) => guid !== GPU01_0)) };
    const again = resolvePlan(first.plan, gone, names, first.bindings);
    expect(again.problems).toEqual([]);
    expect(again.cables[0]!.ends[1].nodeGuid).toBe(GPU01_0);
    // Without the binding, it is an unknown name: a problem, its cable unjudged.
    expect(resolvePlan(first.plan, gone, names).problems.map((problem) => problem.kind)).toEqual(['unknown']);
    // Before any discovery, names are neither resolved nor judged, and no problem.
    const early = resolvePlan(first.plan, undefined, names);
    expect(early.problems).toEqual([]);
    expect(early.unresolved).toEqual(['gpu01 mlx5_0']);
  });

  it('keeps a NodeDescription that another host copies bound to the node it named, and says so', () => {
    const first = resolvePlan(plan('rail0-leaf1 1 "gpu01 mlx5_0" 1\nrail0-leaf1 2 "gpu02 mlx5_0" 1'), topology, names);
    const after = resolvePlan(first.plan, cloned, names, first.bindings);
    // Each line stays with the node it named: gpu02's adapter keeps its cable under its GUID.
    expect(after.cables.map((cable) => cable.ends[1].nodeGuid)).toEqual([GPU01_0, GPU02_0]);
    expect(after.problems.map((problem) => [problem.kind, problem.name, problem.lines, problem.guids, problem.boundTo])).toEqual([
      ['ambiguous', 'gpu01 mlx5_0', [1], [GPU01_0, GPU02_0].sort(), GPU01_0],
    ]);
    expect(after.problems[0]!.message).toContain(`: judged as ${GPU01_0}, the node it named before, until the exporter restarts`);
    // A restart: no binding, neither line resolves (one name is two nodes', the other no node's), and still no error.
    const restarted = resolvePlan(first.plan, cloned, names);
    expect(restarted.cables).toEqual([]);
    expect(restarted.problems.map((problem) => [problem.kind, problem.boundTo])).toEqual([
      ['ambiguous', undefined],
      ['unknown', undefined],
    ]);
  });
});

describe('topology save', () => {
  it('writes each cable once, switch end first, sorted by name, with width and speed as trained', () => {
    const { topology, readings } = recordedRailTree('healthy');
    const text = formatPlan(topology, readings, new Date('2026-11-24T12:00:00Z'));
    const lines = text.split('\n');
    expect(lines[0]).toBe('# Cabling plan of an InfiniBand fabric, saved 2026-11-24T12:00:00.000Z by infiniband-exporter topology save:');
    expect(lines[1]).toBe('# 8 switches, 18 CAs, 30 cables.');
    const cables = lines.filter((line) => line !== '' && !line.startsWith('#'));
    expect(cables).toHaveLength(30);
    expect(cables.slice(0, 6)).toEqual([
      'rail0-leaf1  1  "gpu01 mlx5_0"  1  4X QDR',
      'rail0-leaf1  2  "gpu02 mlx5_0"  1  4X QDR',
      'rail0-leaf1  3  "gpu03 mlx5_0"  1  4X QDR',
      'rail0-leaf1  4  spine-1         1  4X QDR',
      'rail0-leaf1  5  spine-2         1  4X QDR',
      'rail0-leaf2  1  "gpu04 mlx5_0"  1  4X QDR',
    ]);
  });

  it.each(['plan', 'ibnetdiscover'])('round-trips through the %s format: save, parse, compare finds nothing', (format) => {
    const { topology, readings } = recordedRailTree('healthy');
    const text = format === 'plan' ? formatPlan(topology, readings) : cablingFixture('healthy', 'ibnetdiscover.stdout');
    const resolved = resolvePlan(plan(text), topology, railTreeNames());
    expect(resolved.problems).toEqual([]);
    const conformance = judgeConformance(resolved, topology, readings);
    expect(conformance.links).toHaveLength(30);
    expect(conformance.links.every((link) => link.status === 0)).toBe(true);
    expect([conformance.unplanned, conformance.actions, conformance.missingLinks, conformance.missingNodes, conformance.belowPlan]).toEqual(
      [[], [], [], [], []],
    );
  });

  it('names a node by a name that is its alone: node-name-map name, else NodeDescription unique in the whole fabric, else GUID', () => {
    const { topology } = recordedRailTree('healthy');
    const cas = [...topology.nodes.values()].filter((node) => node.type === 'ca').slice(0, 5);
    const [a, b, c, d, e] = cas.map((node) => node.guid) as [string, string, string, string, string];
    const changed = new Map(topology.nodes);
    // a has a map name and shares its description with b: b is written by GUID, a by its map name.
    changed.set(a, { ...changed.get(a)!, name: 'host-a', description: 'shared' });
    changed.set(b, { ...changed.get(b)!, name: undefined, description: 'shared' });
    // c and d share a map name: each by its own description.
    changed.set(c, { ...changed.get(c)!, name: 'twin' });
    changed.set(d, { ...changed.get(d)!, name: 'twin' });
    // e has no description.
    changed.set(e, { ...changed.get(e)!, name: undefined, description: '  ' });
    const { names, byGuid } = planNames({ ...topology, nodes: changed });
    expect([a, b, c, d, e].map((guid) => names.get(guid))).toEqual([
      'host-a',
      b,
      topology.nodes.get(c)!.description,
      topology.nodes.get(d)!.description,
      e,
    ]);
    expect(byGuid).toEqual({ shared: 1, nameless: 1 });
  });

  it('writes a node by GUID when its NodeDescription is not its own', () => {
    const { topology } = recordedRailTree('healthy');
    const twins = new Map(
      [...topology.nodes].map(([guid, node]) => [
        guid,
        node.type === 'ca' ? { ...node, description: 'MT4129 ConnectX7 Mellanox Technologies' } : node,
      ]),
    );
    const text = formatPlan({ ...topology, nodes: twins });
    expect(text).toContain(`rail0-leaf1  1  ${GPU01_0}  1`);
    expect(resolvePlan(plan(text), { ...topology, nodes: twins }, railTreeNames()).problems).toEqual([]);
  });
});
