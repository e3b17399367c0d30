// Rails: configured (fabric.rails in the config file: test/collectors/fabric/cabling/rails-section.test.ts)
// and inferred from where most hosts cable each
// adapter, on the rail tree recorded on ibsim (test/fixtures/cabling/) and on plain-plan fabrics.
import { describe, expect, it } from 'vitest';
import { cablingFindings } from '../../src/collectors/fabric/cabling/findings.js';
import { buildTopology } from '../../src/sources/fabric/discovery.js';
import { parseIbnetdiscover } from '../../src/sources/fabric/ibnetdiscover.js';
import { currentCabling, type RailRule } from '../../src/model/cabling.js';
import { judgeRails } from '../../src/model/rails.js';
import { fabricFromPlan, recordedRailTree } from '../support/cabling.js';
import { stdout } from '../support/fabric-recordings.js';

/** The rails of the config file's example (test/collectors/fabric/cabling/rails-section.test.ts reads them). */
const CONFIGURED: readonly RailRule[] = [
  { name: 'rail0', leaves: ['rail0-*'], adapter: 'mlx5_0' },
  { name: 'rail1', leaves: ['rail1-*'], adapter: '* mlx5_1' },
  { name: 'rail 3', leaves: ['MF0;rail2-*'], adapter: 'mlx5_2' },
];

describe('rail violations', () => {
  const violations = (report: ReturnType<typeof judgeRails>): string[] =>
    (report?.violations ?? []).map(
      (v) => `${v.adapter.nodeGuid}/${v.adapter.port} ${v.rail} on ${v.leaf.nodeGuid}/${v.leaf.port} ${v.leafRail}`,
    );

  it("judges the configured rails: an adapter on another rail's switch", () => {
    for (const [scenario, expected] of [
      ['healthy', []],
      ['rail', ['0x0002c90300c04000/1 rail0 on 0x0002c90200700004/7 rail1']],
    ] as const) {
      const { topology, readings } = recordedRailTree(scenario);
      const report = judgeRails(topology, currentCabling(topology, readings), CONFIGURED);
      expect(report?.source).toBe('config');
      expect([...report!.rails.keys()]).toEqual(['rail0', 'rail1', 'rail 3']);
      expect(report!.rails.get('rail0')).toEqual(['0x0002c90200700001', '0x0002c90200700002']);
      expect(violations(report)).toEqual(expected);
    }
  });

  it('infers the rails from most hosts, and finds the outlier', () => {
    const healthy = recordedRailTree('healthy');
    const clean = judgeRails(healthy.topology, currentCabling(healthy.topology, healthy.readings), undefined)!;
    expect(clean.source).toBe('inferred');
    expect(
      Object.fromEntries([...clean.rails].map(([rail, leaves]) => [rail, leaves.map((guid) => healthy.topology.nodes.get(guid)!.name)])),
    ).toEqual({
      mlx5_0: ['rail0-leaf1', 'rail0-leaf2'],
      mlx5_1: ['rail1-leaf1', 'rail1-leaf2'],
      mlx5_2: ['rail2-leaf1', 'rail2-leaf2'],
    });
    expect(clean.violations).toEqual([]);
    const { topology, readings } = recordedRailTree('rail');
    const report = judgeRails(topology, currentCabling(topology, readings), undefined);
    expect(violations(report)).toEqual(['0x0002c90300c04000/1 mlx5_0 on 0x0002c90200700004/7 mlx5_1']);
    expect(
      cablingFindings({ conformance: undefined, rails: report }, topology).map((finding) => [finding.summary, finding.remedy]),
    ).toEqual([
      [
        'gpu04 mlx5_0 port 1 belongs to rail mlx5_0 (where most hosts cable that adapter) but is cabled to rail1-leaf2 port 7, a switch of rail mlx5_1',
        'move its cable to a free port of a switch of rail mlx5_0 (rail0-leaf1, rail0-leaf2)',
      ],
    ]);
  });

  it('finds both adapters of a host whose cables are crossed', () => {
    const fabric = fabricFromPlan(
      [
        'r0-a 1 "g1 mlx5_0" 1',
        'r0-a 2 "g2 mlx5_0" 1',
        'r0-a 3 "g3 mlx5_0" 1',
        'r0-a 4 "g4 mlx5_1" 1',
        'r1-a 1 "g1 mlx5_1" 1',
        'r1-a 2 "g2 mlx5_1" 1',
        'r1-a 3 "g3 mlx5_1" 1',
        'r1-a 4 "g4 mlx5_0" 1',
      ].join('\n'),
      (name) => name.startsWith('r'),
    );
    const report = judgeRails(fabric.topology, currentCabling(fabric.topology, fabric.readings), undefined);
    expect(violations(report)).toEqual([
      `${fabric.guidOf('g4 mlx5_1')}/1 mlx5_1 on ${fabric.guidOf('r0-a')}/4 mlx5_0`,
      `${fabric.guidOf('g4 mlx5_0')}/1 mlx5_0 on ${fabric.guidOf('r1-a')}/4 mlx5_1`,
    ]);
  });

  it('infers nothing where the fabric is not rail-optimised', () => {
    // One adapter per host (the fat tree of the fabric-mode tests).
    const fatTree = buildTopology(parseIbnetdiscover(stdout('healthy', 'ibnetdiscover')), undefined, new Map(), 0);
    expect(judgeRails(fatTree, currentCabling(fatTree, new Map()), undefined)).toBeUndefined();
    // Every adapter of two hosts on one leaf: no switch has a majority.
    const mixed = fabricFromPlan(
      ['leaf 1 "g1 mlx5_0" 1', 'leaf 2 "g1 mlx5_1" 1', 'leaf 3 "g2 mlx5_0" 1', 'leaf 4 "g2 mlx5_1" 1'].join('\n'),
    );
    expect(judgeRails(mixed.topology, currentCabling(mixed.topology, mixed.readings), undefined)).toBeUndefined();
    // No discovery yet: nothing to judge.
    expect(judgeRails(undefined, new Map(), undefined)).toBeUndefined();
  });
});
