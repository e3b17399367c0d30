// Jobs on a generated three-tier fat tree (synthetic/fabric-generator/, as the scale bench runs
// them, smaller): the generated squeue output parses whole, every host is found or counted, and
// each footprint's inter-switch links are exactly those a brute-force search finds on minimal-hop
// paths between every two of the job's leaves.
import { describe, expect, it } from 'vitest';
import { fabricPortKey, type FabricTopology } from '../../src/model/fabric.js';
import { JobPlacement } from '../../src/model/job-footprint.js';
import { buildTopology } from '../../src/sources/fabric/discovery.js';
import { parseIbnetdiscover } from '../../src/sources/fabric/ibnetdiscover.js';
import { expandHostlist } from '../../src/sources/jobs/hostlist.js';
import { parseSqueue } from '../../src/sources/jobs/squeue.js';
import {
  compressHostlist,
  generateFabric,
  generateJobs,
  hostName,
  ibnetdiscover,
  NDR_PROFILE,
  squeueOutput,
} from '../../synthetic/fabric-generator/index.js';

const pad = (n: number, width: number) => String(n).padStart(width, '0');
const fabric = generateFabric({
  shape: { tiers: 3, hosts: 128, radix: 8 },
  profile: { ...NDR_PROFILE, hostDescription: (leaf, host) => `gpu${pad(leaf, 3)}-${pad(host, 2)} mlx5_0` },
  faults: { seed: 7, pulledHostCables: 3, pulledSwitchCables: 1 },
});

function topologyOf(): FabricTopology {
  let text = '';
  ibnetdiscover(fabric, (chunk) => {
    text += chunk;
  });
  return buildTopology(parseIbnetdiscover(text), undefined, new Map(), 0);
}

/** Every inter-switch cable on a minimal-hop path between two leaves: hops from both ends, by maps. */
function bruteForce(topology: FabricTopology, leaves: readonly string[]): Set<string> {
  const isSwitch = (guid: string) => topology.nodes.get(guid)?.type === 'switch';
  const cables = [...topology.ports.values()].filter((port) => port.peer && isSwitch(port.nodeGuid) && isSwitch(port.peer.nodeGuid));
  const hopsFrom = (source: string) => {
    const hops = new Map([[source, 0]]);
    for (let frontier = [source]; frontier.length > 0; ) {
      const next: string[] = [];
      for (const port of cables) {
        if (!frontier.includes(port.nodeGuid) || hops.has(port.peer!.nodeGuid)) continue;
        hops.set(port.peer!.nodeGuid, hops.get(port.nodeGuid)! + 1);
        next.push(port.peer!.nodeGuid);
      }
      frontier = next;
    }
    return hops;
  };
  const found = new Set<string>();
  for (const [i, s] of leaves.entries()) {
    const fromS = hopsFrom(s);
    for (const t of leaves.slice(i + 1)) {
      const fromT = hopsFrom(t);
      const length = fromS.get(t);
      if (length === undefined) continue;
      for (const port of cables) {
        if (fromS.get(port.nodeGuid)! + 1 + fromT.get(port.peer!.nodeGuid)! !== length) continue;
        const keys = [fabricPortKey(port.nodeGuid, port.port), fabricPortKey(port.peer!.nodeGuid, port.peer!.port)].sort();
        found.add(keys.join(' '));
      }
    }
  }
  return found;
}

describe('generated jobs', () => {
  const jobs = generateJobs(fabric, { count: 120, seed: 34, absentEvery: 10 });

  it('are the same for the same seed, and print as Slurm compresses hostlists', () => {
    expect(squeueOutput(generateJobs(fabric, { count: 120, seed: 34, absentEvery: 10 }))).toBe(squeueOutput(jobs));
    expect(squeueOutput(jobs)).toMatch(/\|gpu\d{3}-\[\d{2}-\d{2}[\],]/);
    for (const job of jobs) expect(new Set(expandHostlist(job.hostlist).hosts)).toEqual(new Set(job.hosts));
  });

  it('parse whole, and every host is on the fabric or counted as not found', () => {
    const parsed = parseSqueue(squeueOutput(jobs));
    expect(parsed.unparsed.count).toBe(0);
    expect(parsed.jobs).toHaveLength(jobs.length);
    const placed = new JobPlacement(undefined).place(topologyOf(), parsed.jobs);
    for (const [i, job] of placed.entries()) {
      expect(job.onFabric.length + job.notFound.length).toBe(jobs[i]!.hosts.length);
      expect(new Set(job.notFound)).toEqual(new Set(jobs[i]!.absent));
    }
    expect(placed.filter((job) => job.notFound.length > 0).length).toBeGreaterThanOrEqual(12);
  });

  it("have footprints whose inter-switch links are every minimal-hop path's between their leaves", () => {
    const topology = topologyOf();
    const placed = new JobPlacement(undefined).place(topology, parseSqueue(squeueOutput(jobs)).jobs);
    const leavesOf = (adapters: Iterable<string>) => [
      ...new Set(
        [...adapters].map((guid) => topology.ports.get(fabricPortKey(guid, 1))?.peer?.nodeGuid).filter((leaf) => leaf !== undefined),
      ),
    ];
    let across = 0;
    for (const job of placed) {
      const leaves = leavesOf(job.adapters.keys());
      if (leaves.length > 2) across += 1;
      const links = [...job.links].filter((link) => link.scope === 'switch').map((link) => link.key);
      expect(new Set(links).size).toBe(links.length);
      expect(new Set(links)).toEqual(bruteForce(topology, leaves));
      expect([...job.links].filter((link) => link.scope === 'host')).toHaveLength(job.adapters.size);
    }
    expect(across).toBeGreaterThan(10);
  });
});

describe('compressHostlist', () => {
  it.each([
    [['gpu001-01', 'gpu001-02', 'gpu001-10', 'gpu002-03'], 'gpu001-[01-02,10],gpu002-03'],
    [['n9', 'n10', 'n11', 'n13'], 'n[9-11,13]'],
    [['login', 'node-1-1', 'node-1-2'], 'login,node-1-[1-2]'],
  ])('%j', (names, hostlist) => {
    expect(compressHostlist(names)).toBe(hostlist);
    expect(expandHostlist(hostlist).hosts).toEqual(names);
  });

  it('names a host by the first word of its NodeDescription', () => {
    expect(hostName(fabric.byId.get('H3_2')!)).toBe('gpu003-02');
  });
});
