// The fabric against its plan: statuses, the cables the plan lacks, and the fewest moves, on the
// rail tree recorded on ibsim (test/fixtures/cabling/) and on tangles written as plain plans.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { cablingFindings } from '../../src/collectors/fabric/cabling/findings.js';
import { resolvePlan } from '../../src/sources/fabric/cabling-plan-resolution.js';
import { formatPlan } from '../../src/sources/fabric/cabling-plan-writer.js';
import { currentCabling, type CablingAction, type CablingConformance } from '../../src/model/cabling.js';
import { judgeCabling, judgeConformance } from '../../src/model/cabling-conformance.js';
import { fabricPortKey, type FabricPortReading, type FabricTopology, type PortAddress } from '../../src/model/fabric.js';
import { judgeRails } from '../../src/model/rails.js';
import { fabricFromPlan, plan, railTreeNames, recordedRailTree, resolved } from '../support/cabling.js';
import { CounterRow } from '../../src/model/counter-row.js';

/** The findings' [condition, summary → remedy] of a fabric judged against a plan text. */
function judge(
  planText: string,
  fabric: { topology: FabricTopology; readings: Map<string, FabricPortReading> },
  names: ReadonlyMap<string, string> = new Map(),
): { conformance: CablingConformance; findings: string[][] } {
  const planned = resolvePlan(plan(planText), fabric.topology, names);
  expect(planned.problems).toEqual([]);
  const conformance = judgeConformance(planned, fabric.topology, fabric.readings);
  const rails = judgeRails(fabric.topology, currentCabling(fabric.topology, fabric.readings), undefined);
  return {
    conformance,
    findings: cablingFindings({ conformance, rails }, fabric.topology).map((finding) => [finding.condition, finding.remedy]),
  };
}

describe('the rail tree on ibsim against the plan saved from it', () => {
  const healthy = recordedRailTree('healthy');
  const saved = formatPlan(healthy.topology, healthy.readings);
  const statuses = (conformance: CablingConformance): Record<string, number> =>
    Object.fromEntries(
      conformance.links
        .filter((link) => link.status !== 0)
        .map((link) => [`${link.cable.ends[0].written} ${link.cable.ends[0].port}`, link.status]),
    );

  it.each([
    // [scenario, discovery of, statuses not 0, findings]
    ['healthy', 'healthy', {}, []],
    ['moved', 'moved', { 'rail0-leaf1 1': 2 }, [['cable-misplaced', 'move the cable in rail0-leaf1 port 6 to rail0-leaf1 port 1']]],
    // The ports cycle sees the move before the next discovery does: the same answer.
    ['moved', 'healthy', { 'rail0-leaf1 1': 2 }, [['cable-misplaced', 'move the cable in rail0-leaf1 port 6 to rail0-leaf1 port 1']]],
    ['swapped', 'swapped', { 'rail1-leaf1 2': 2, 'rail1-leaf1 3': 2 }, [['cable-swapped', 'swap the cables of rail1-leaf1 ports 2 and 3']]],
    [
      'rail',
      'rail',
      { 'rail0-leaf2 1': 2 },
      [
        ['cable-misplaced', 'move the cable in rail1-leaf2 port 7 to rail0-leaf2 port 1'],
        ['rail-violation', 'move its cable to rail0-leaf2 port 1, where the plan puts it'],
      ],
    ],
    [
      'pulled',
      'pulled',
      { 'rail2-leaf1 4': 1 },
      [
        [
          'planned-link-missing',
          "plug the cable between rail2-leaf1 port 4 and spine-1 port 5, or reseat it at both ends; if the link stays down, replace the cable or transceiver (ibportstate -G 0x0002c90200700005 4 query shows the port's state)",
        ],
      ],
    ],
    [
      'miswired',
      'healthy',
      { 'rail0-leaf1 1': 2, 'rail0-leaf2 1': 2, 'rail1-leaf1 2': 2, 'rail1-leaf1 3': 2, 'rail2-leaf1 4': 1 },
      [
        ['cable-misplaced', 'move the cable in rail0-leaf1 port 6 to rail0-leaf1 port 1'],
        ['cable-misplaced', 'move the cable in rail1-leaf2 port 7 to rail0-leaf2 port 1'],
        ['cable-swapped', 'swap the cables of rail1-leaf1 ports 2 and 3'],
        [
          'planned-link-missing',
          "plug the cable between rail2-leaf1 port 4 and spine-1 port 5, or reseat it at both ends; if the link stays down, replace the cable or transceiver (ibportstate -G 0x0002c90200700005 4 query shows the port's state)",
        ],
        ['rail-violation', 'move its cable to rail0-leaf2 port 1, where the plan puts it'],
      ],
    ],
  ])('%s (topology discovered in %s)', (scenario, discoveredIn, expectedStatuses, expectedFindings) => {
    const { conformance, findings } = judge(saved, recordedRailTree(scenario, discoveredIn), railTreeNames());
    expect(statuses(conformance)).toEqual(expectedStatuses);
    expect(findings).toEqual(expectedFindings);
  });

  it('says where each cable is and where it belongs, and names the swap once with both ports', () => {
    const { topology, readings } = recordedRailTree('miswired');
    const planned = resolvePlan(plan(saved, 'plan.txt'), topology, railTreeNames());
    const conformance = judgeConformance(planned, topology, readings);
    const summaries = cablingFindings(
      { conformance, rails: judgeRails(topology, currentCabling(topology, readings), undefined) },
      topology,
    ).map((finding) => finding.summary);
    expect(summaries).toEqual([
      'the cable from gpu01 mlx5_0 port 1 is in rail0-leaf1 port 6, the plan has it in rail0-leaf1 port 1 (plan.txt line 7)',
      'the cable from gpu04 mlx5_0 port 1 is in rail1-leaf2 port 7, the plan has it in rail0-leaf2 port 1 (plan.txt line 12)',
      'the cables in rail1-leaf1 ports 2 and 3 are swapped: rail1-leaf1 port 2 has the cable from gpu03 mlx5_1 port 1 and rail1-leaf1 port 3 the one from gpu02 mlx5_1 port 1, the plan has them the other way round (plan.txt lines 18 and 19)',
      'no link between rail2-leaf1 port 4 and spine-1 port 5, a cable of the plan (plan.txt line 30): the cable is not plugged in, or it, a transceiver or a port is broken',
      'gpu04 mlx5_0 port 1 belongs to rail mlx5_0 (where most hosts cable that adapter) but is cabled to rail1-leaf2 port 7, a switch of rail mlx5_1',
    ]);
    // The moved cables are cables the plan does not have, switch end first.
    expect(conformance.unplanned.map((cable) => cable.ends.map((end) => `${end.nodeGuid}/${end.port}`).join(' '))).toEqual([
      '0x0002c90200700001/6 0x0002c90300c01000/1',
      '0x0002c90200700003/2 0x0002c90300c03100/1',
      '0x0002c90200700003/3 0x0002c90300c02100/1',
      '0x0002c90200700004/7 0x0002c90300c04000/1',
    ]);
  });
});

describe("judgeCabling, the collector's one call", () => {
  it('runs nothing without a plan or rails, the rails alone with fabric.rails, both with a plan', () => {
    const { topology, readings } = recordedRailTree('rail');
    expect(judgeCabling(undefined, undefined, topology, readings)).toBeUndefined();
    expect(judgeCabling(undefined, [], topology, readings)).toBeUndefined();
    const railsOnly = judgeCabling(undefined, [{ name: 'rail0', leaves: ['rail0-*'], adapter: 'mlx5_0' }], topology, readings)!;
    expect(railsOnly.conformance).toBeUndefined();
    expect(railsOnly.rails?.violations.map((v) => v.leafRail)).toEqual(['']);
    const healthy = recordedRailTree('healthy');
    const both = judgeCabling(
      resolved(formatPlan(healthy.topology, healthy.readings), topology, railTreeNames()),
      undefined,
      topology,
      readings,
    )!;
    expect(both.conformance?.actions).toHaveLength(1);
    expect(both.rails?.source).toBe('inferred');
  });
});

describe('tangles', () => {
  it.each([
    [
      'a chain into a free port: the move into it first',
      'leaf07 12 n1 1\nleaf07 13 n2 1',
      'leaf07 13 n1 1\nleaf07 14 n2 1',
      [['cables-misplaced', 'move the cable in leaf07 port 13 to leaf07 port 12; then the cable in leaf07 port 14 to leaf07 port 13']],
    ],
    [
      "three cables each in the next one's port: two swaps",
      'leaf 1 a 1\nleaf 2 b 1\nleaf 3 c 1',
      'leaf 2 a 1\nleaf 3 b 1\nleaf 1 c 1',
      [['cables-rotated', 'swap the cables of leaf ports 1 and 3; then of ports 1 and 2']],
    ],
    [
      'two uplinks swapped at the leaf, not across the spines',
      'leaf1 19 spine1 1\nleaf1 20 spine2 1',
      'leaf1 19 spine2 1\nleaf1 20 spine1 1',
      [['cable-swapped', 'swap the cables of leaf1 ports 19 and 20']],
    ],
    [
      'two adapters of one host crossed: swapped at the host, not across two leaves',
      'rail0-a 1 "gpu1 mlx5_0" 1\nrail1-a 1 "gpu1 mlx5_1" 1',
      'rail0-a 1 "gpu1 mlx5_1" 1\nrail1-a 1 "gpu1 mlx5_0" 1',
      [['cable-swapped', 'swap the cables of gpu1 mlx5_0 port 1 and gpu1 mlx5_1 port 1']],
    ],
    [
      "a host cable moved to the next switch's port the plan leaves free",
      'leaf1 3 h 1\nleaf2 3 g 1',
      'leaf1 5 x 1\nleaf2 4 h 1\nleaf2 3 g 1',
      [['cable-misplaced', 'move the cable in leaf2 port 4 to leaf1 port 3']],
    ],
    [
      'a cable in the port of another, which is in a port the plan leaves free: one move, then a cable plugged',
      'leaf 1 a 1\nleaf 2 b 1',
      'leaf 2 a 1\nleaf 9 b 2',
      [
        [
          'cable-misplaced',
          'move the cable in leaf port 2 to leaf port 1; then plug a cable between leaf port 2 and b port 1 (planned, no link now)',
        ],
        [
          'cable-unplanned',
          'add it to the plan if it belongs there (infiniband-exporter topology save writes the fabric as it is), or unplug it',
        ],
      ],
    ],
    [
      'a foreign cable on the planned port of a missing host: unplug it',
      'leaf 1 0x00000000000000a1 1\nleaf 2 b 1',
      'leaf 1 z 1\nleaf 2 b 1',
      [
        ['cable-misplaced', 'unplug the cable between leaf port 1 and z port 1 (the plan has no cable there)'],
        ['plan-node-missing', 'power it on and check its cables to leaf port 1; a node not installed yet can wait'],
      ],
    ],
    [
      'an extra cable between two nodes of the plan',
      'leaf 1 spine 1\nleaf 2 spine 2',
      'leaf 1 spine 1\nleaf 2 spine 2\nleaf 3 spine 3',
      [
        [
          'cable-unplanned',
          'add it to the plan if it belongs there (infiniband-exporter topology save writes the fabric as it is), or unplug it',
        ],
      ],
    ],
    [
      "a link below the plan's rate",
      'leaf 1 spine 1 4X HDR',
      'leaf 1 spine 1 2X HDR',
      [
        [
          'link-below-plan',
          `check that the cable and transceivers are the planned type, reseat the cable at both ends, and make the link retrain: ibportstate -G 0x0002c90300000100 1 reset`,
        ],
      ],
    ],
    [
      'cables of hosts the plan does not name stay out of a plan of the inter-switch links',
      'leaf 20 spine 1',
      'leaf 20 spine 1\nleaf 1 "gpu1 mlx5_0" 1',
      [],
    ],
  ])('%s', (_, planText, now, expected) => {
    expect(judge(planText, fabricFromPlan(now)).findings).toEqual(expected);
  });

  it('reports a node of the plan the fabric lacks, by GUID, with its cables', () => {
    const fabric = fabricFromPlan('leaf 2 b 1');
    const { conformance, findings } = judge('leaf 1 0x00000000000000a1 1\nleaf 2 b 1', fabric);
    expect(conformance.links.map((link) => link.status)).toEqual([1, 0]);
    expect(findings).toEqual([['plan-node-missing', 'power it on and check its cables to leaf port 1; a node not installed yet can wait']]);
    expect(cablingFindings({ conformance, rails: undefined }, fabric.topology)[0]?.summary).toBe(
      '0x00000000000000a1 (0x00000000000000a1), a node of the plan with 1 cable (to leaf port 1), is not in the fabric (plan.txt line 1)',
    );
  });
});

/** Apply an action's steps to a cabling, each to a port that must be free when it is plugged. */
function apply(cabling: Map<string, PortAddress>, action: CablingAction): void {
  const key = (address: PortAddress): string => fabricPortKey(address.nodeGuid, address.port);
  const unplug = (a: PortAddress): PortAddress => {
    const b = cabling.get(key(a))!;
    expect(b, `a cable in ${key(a)}`).toBeDefined();
    cabling.delete(key(a));
    cabling.delete(key(b));
    return b;
  };
  const plug = (a: PortAddress, b: PortAddress): void => {
    expect(cabling.has(key(a)), `${key(a)} free`).toBe(false);
    expect(cabling.has(key(b)), `${key(b)} free`).toBe(false);
    cabling.set(key(a), b);
    cabling.set(key(b), a);
  };
  for (const cable of action.unplug) unplug(cable.ends[0]);
  if (action.kind === 'move') {
    for (const move of action.moves) plug(move.to, unplug(move.from));
  } else {
    for (const [a, b] of action.swaps) {
      const atA = unplug(a);
      const atB = unplug(b);
      plug(a, atB);
      plug(b, atA);
    }
  }
  for (const cable of action.plug)
    plug({ nodeGuid: cable.ends[0].nodeGuid!, port: cable.ends[0].port }, { nodeGuid: cable.ends[1].nodeGuid!, port: cable.ends[1].port });
}

describe('the fewest moves, on random miswirings of a leaf', () => {
  it("fixes any shuffle of host cables over a leaf's ports with one swap per 2-cycle, k − 1 per k-cycle and one move per cable in a free port", () => {
    fc.assert(
      fc.property(
        fc
          .integer({ min: 2, max: 12 })
          .chain((hosts) =>
            fc.tuple(fc.constant(hosts), fc.shuffledSubarray([...Array(hosts + 3).keys()], { minLength: hosts, maxLength: hosts })),
          ),
        ([hosts, ports]) => {
          const planText = [...Array(hosts).keys()].map((h) => `leaf ${h + 1} h${h} 1`).join('\n');
          const nowText = ports.map((port, h) => `leaf ${port + 1} h${h} 1`).join('\n');
          const fabric = fabricFromPlan(nowText);
          // The plan's nodes are those of the fabric (every host is cabled somewhere).
          const planned = resolved(planText, fabric.topology);
          const conformance = judgeConformance(planned, fabric.topology, fabric.readings);
          // The minimum: a cable in a free port is one move; each cycle of k misplaced cables is k − 1 swaps.
          const target = new Map(ports.map((port, h) => [port, h]));
          let minimum = 0;
          const seen = new Set<number>();
          for (let h = 0; h < hosts; h++) {
            if (seen.has(h) || ports[h] === h) continue;
            // Follow h's port to the host whose planned port it is.
            let length = 0;
            let current: number | undefined = h;
            let closed = false;
            while (current !== undefined && !seen.has(current)) {
              seen.add(current);
              length += 1;
              current = target.get(current);
              if (current === h) closed = true;
            }
            minimum += closed ? length - 1 : length;
          }
          // A chain that ends in a host already counted (entered mid-way) adds its own moves.
          const steps = conformance.actions.reduce(
            (sum, action) =>
              sum + (action.kind === 'move' ? action.moves.length : action.swaps.length) + action.unplug.length + action.plug.length,
            0,
          );
          const cabling = currentCabling(fabric.topology, fabric.readings);
          for (const action of conformance.actions) apply(cabling, action);
          const fixed = judgeConformance(
            planned,
            { ...fabric.topology, ports: new Map() },
            new Map(
              [...cabling].map(([key, peer]) => {
                const slash = key.lastIndexOf('/');
                return [
                  key,
                  {
                    nodeGuid: key.slice(0, slash),
                    port: Number(key.slice(slash + 1)),
                    state: { id: 4, name: 'ACTIVE' },
                    physicalState: { id: 5, name: 'LinkUp' },
                    width: 4,
                    speed: 'HDR',
                    peer,
                    counters: CounterRow.EMPTY,
                  } satisfies FabricPortReading,
                ];
              }),
            ),
          );
          expect(fixed.links.every((link) => link.status === 0)).toBe(true);
          expect(fixed.actions).toEqual([]);
          expect(steps).toBe(minimum);
        },
      ),
      { numRuns: 200 },
    );
  });
});
