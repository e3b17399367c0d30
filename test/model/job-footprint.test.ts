// Jobs on the fabric: hosts matched to adapters, and the footprint over a small fat tree.
import { describe, expect, it } from 'vitest';
import {
  fabricPortKey,
  type DiscoveredPort,
  type FabricNode,
  type FabricPortReading,
  type FabricTopology,
} from '../../src/model/fabric.js';
import { footprint, HostIndex, JobPlacement } from '../../src/model/job-footprint.js';
import { jobLinkCounts, type LinkEvidence } from '../../src/model/job-links.js';
import { switchPortsUp } from '../../synthetic/fat-tree.js';

/** Two spines, three leaves (a leaf with two cables to spine-1), hosts h11..h32 on leaf 1..3. */
function smallFatTree(): FabricTopology {
  const nodes = new Map<string, FabricNode>();
  const ports = new Map<string, DiscoveredPort>();
  const node = (guid: string, type: FabricNode['type'], description: string, name?: string, portCount = 8) =>
    nodes.set(guid, { guid, type, description, name, lid: undefined, portCount, vendorId: undefined, deviceId: undefined });
  const cable = (a: string, ap: number, b: string, bp: number) => {
    const add = (x: string, xp: number, y: string, yp: number) =>
      ports.set(fabricPortKey(x, xp), {
        nodeGuid: x,
        port: xp,
        portGuid: undefined,
        lid: undefined,
        peer: { nodeGuid: y, port: yp },
        enabled: undefined,
      });
    add(a, ap, b, bp);
    add(b, bp, a, ap);
  };
  node('0xs1', 'switch', 'spine 1', 'spine-1');
  node('0xs2', 'switch', 'spine 2', 'spine-2');
  for (const l of [1, 2, 3]) {
    node(`0xl${l}`, 'switch', `leaf ${l}`, `leaf-${l}`);
    cable(`0xl${l}`, 4, '0xs1', l);
    cable(`0xl${l}`, 5, '0xs2', l);
    for (const h of [1, 2]) {
      node(`0xh${l}${h}`, 'ca', `h${l}${h}.cluster mlx5_0`, undefined, 1);
      cable(`0xh${l}${h}`, 1, `0xl${l}`, h);
    }
  }
  cable('0xl1', 6, '0xs1', 6); // a second cable from leaf 1 to spine 1
  node('0xhx', 'ca', 'weird-name HCA-1', 'gpu-special', 1);
  cable('0xhx', 1, '0xl3', 3);
  return { nodes, ports, duplicateGuids: 0, duplicateLids: 0, discoveredAt: 0 };
}

describe('HostIndex', () => {
  const index = new HostIndex(smallFatTree(), /^weird-(\S+)/);
  it.each([
    ['h11', ['0xh11']],
    ['h11.cluster', ['0xh11']],
    ['gpu-special', ['0xhx']],
    ['name', ['0xhx']],
    ['h99', []],
  ])('%s', (host, guids) => expect(index.adapters(host)).toEqual(guids));
});

describe('footprint', () => {
  const topology = smallFatTree();
  it("is the adapters' links alone on one leaf", () => {
    const links = footprint(topology, ['0xh11', '0xh12']);
    expect(links.map((link) => [link.scope, link.owner.nodeGuid])).toEqual([
      ['host', '0xl1'],
      ['host', '0xl1'],
    ]);
  });

  it('adds every minimal-hop inter-switch link between the leaves, parallel cables included', () => {
    const links = footprint(topology, ['0xh11', '0xh21']);
    const switchLinks = links.filter((link) => link.scope === 'switch').map((link) => link.key);
    expect(switchLinks.sort()).toEqual(['0xl1/4 0xs1/1', '0xl1/5 0xs2/1', '0xl1/6 0xs1/6', '0xl2/4 0xs1/2', '0xl2/5 0xs2/2'].sort());
    expect(links.filter((link) => link.scope === 'host')).toHaveLength(2);
  });

  it("leaves out the third leaf's uplinks when no host of the job is there", () => {
    expect(footprint(topology, ['0xh11', '0xh21']).some((link) => link.key.includes('0xl3'))).toBe(false);
    expect(footprint(topology, ['0xh11', '0xh21', '0xh31']).filter((link) => link.scope === 'switch')).toHaveLength(7);
  });
});

describe('JobPlacement', () => {
  it("counts hosts not found and keeps a job's footprint while the topology stays", () => {
    const placement = new JobPlacement(undefined);
    const topology = smallFatTree();
    const job = { id: '1', user: 'u', partition: 'p', name: 'n', hosts: ['h11', 'h21', 'nowhere'] };
    const [first] = placement.place(topology, [job]);
    expect(first!.onFabric).toEqual(['h11', 'h21']);
    expect(first!.notFound).toEqual(['nowhere']);
    const [again] = placement.place(topology, [{ ...job, name: 'renamed' }]);
    expect(again!.links).toBe(first!.links);
    expect(again!.job.name).toBe('renamed');
    const [other] = placement.place(smallFatTree(), [job]);
    expect(other!.links).toBe(first!.links);
  });

  it('computes a footprint once while its hosts and the wiring stay the same, across cycles and discoveries', () => {
    const placement = new JobPlacement(undefined);
    const jobs = [
      { id: '1', user: 'u', partition: 'p', name: 'n', hosts: ['h11', 'h21'] },
      { id: '2', user: 'u', partition: 'p', name: 'n', hosts: ['h12', 'h31', 'h32'] },
    ];
    const first = placement.place(smallFatTree(), jobs);
    expect(placement.computed).toBe(2);
    // Ten jobs cycles, each with a new discovery of the same fabric (a new topology object): nothing computed again.
    for (let cycle = 0; cycle < 10; cycle++) {
      const again = placement.place(smallFatTree(), jobs);
      expect(again.map((placed) => placed.links)).toEqual(first.map((placed) => placed.links));
      expect(again[0]!.links).toBe(first[0]!.links);
    }
    expect(placement.computed).toBe(2);
    // One job's hosts change: that job alone.
    placement.place(smallFatTree(), [jobs[0]!, { ...jobs[1]!, hosts: ['h12', 'h31'] }]);
    expect(placement.computed).toBe(3);
    // A cable moved: the wiring differs, every footprint again.
    const rewired = smallFatTree();
    const moved = rewired.ports.get('0xl1/6')!;
    (rewired.ports as Map<string, DiscoveredPort>).set('0xl1/6', { ...moved, peer: { nodeGuid: '0xs2', port: 6 } });
    const [onRewired] = placement.place(rewired, jobs);
    expect(placement.computed).toBe(5);
    expect(onRewired!.links).not.toBe(first[0]!.links);
    // A job gone and come back is a new job.
    placement.place(rewired, [jobs[1]!]);
    placement.place(rewired, jobs);
    expect(placement.computed).toBe(6);
  });

  it('shares one link object per cable between the jobs that cross it', () => {
    const [a, b] = new JobPlacement(undefined).place(smallFatTree(), [
      { id: '1', user: 'u', partition: 'p', name: 'n', hosts: ['h11', 'h21'] },
      { id: '2', user: 'u', partition: 'p', name: 'n', hosts: ['h11', 'h22'] },
    ]);
    const shared = [...a!.links].filter((link) => [...b!.links].includes(link));
    expect(shared.map((link) => link.key).sort()).toEqual(
      ['0xh11/1 0xl1/1', '0xl1/4 0xs1/1', '0xl1/5 0xs2/1', '0xl1/6 0xs1/6', '0xl2/4 0xs1/2', '0xl2/5 0xs2/2'].sort(),
    );
    expect(new Set([...a!.links, ...b!.links].map((link) => link.id)).size).toBe(new Set([...a!.links, ...b!.links]).size);
  });
});

describe('jobLinkCounts', () => {
  it('counts the links a shard reports and why they are impaired', () => {
    const topology = smallFatTree();
    const [job] = new JobPlacement(undefined).place(topology, [{ id: '1', user: 'u', partition: 'p', name: 'n', hosts: ['h11', 'h21'] }]);
    const ports = switchPortsUp(topology, 'HDR');
    ports.set('0xl1/4', { ...ports.get('0xl1/4')!, width: 1 });
    ports.set('0xl1/5', { ...ports.get('0xl1/5')!, peer: undefined, state: { id: 1, name: 'DOWN' } } as FabricPortReading);
    const evidence: LinkEvidence = {
      ports,
      expectations: new Map([['0xl1/4', { width: 4, speed: 'HDR', source: 'config' }]]) as LinkEvidence['expectations'],
      risingErrors: new Set(['0xs1/6']),
      berOverThreshold: new Set(),
      miswired: new Set(['0xh21/1']),
      // The adapter link of h11 stalled 40 % toward the host; leaf 2 - spine 1 10 % up, 35 % down (the worse counts).
      congestion: new Map([
        ['0xl1/1', 0.4],
        ['0xl2/4', 0.1],
        ['0xs1/2', 0.35],
        ['0xl1/6', 0.2],
      ]),
      shard: { index: 1, count: 1 },
    };
    const counts = jobLinkCounts(job!, evidence);
    expect(counts.host.links).toBe(2);
    expect(counts.host.impaired).toEqual({ down: 0, degraded: 0, errors: 0, ber: 0, congested: 1, miswired: 1 });
    expect(counts.host.congestionMax).toBe(0.4);
    expect(counts.host.congestionSum).toBeCloseTo(0.4);
    expect(counts.switch.links).toBe(5);
    expect(counts.switch.impaired).toEqual({ down: 1, degraded: 1, errors: 1, ber: 0, congested: 1, miswired: 0 });
    expect(counts.switch.congestionMax).toBe(0.35);
    expect(counts.switch.congestionSum).toBeCloseTo(0.55);
    // Two shards count every link once between them.
    const halves = [1, 2].map((index) => jobLinkCounts(job!, { ...evidence, shard: { index, count: 2 } }));
    expect(halves[0]!.switch.links + halves[1]!.switch.links).toBe(5);
    expect(halves[0]!.host.links + halves[1]!.host.links).toBe(2);
    // Evidence that keeps what it judged and counted gives the same counts, judging each link once.
    const kept: LinkEvidence = { ...evidence, judged: [], counted: new WeakMap() };
    const once = jobLinkCounts(job!, kept);
    expect(once).toEqual(counts);
    expect(kept.judged!.filter((judgement) => judgement !== undefined)).toHaveLength(7);
    expect(jobLinkCounts(job!, kept)).toBe(once);
  });
});
