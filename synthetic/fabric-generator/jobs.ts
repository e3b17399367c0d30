// Running jobs on a generated fabric, as a Slurm controller would list them: chosen by a seed over
// the fabric's hosts, placed as a topology-aware scheduler places them (most within one leaf or a
// few leaves of one pod, some across pods, a few over the whole tree), with sizes from 1 to a few
// hundred hosts, and printed by `squeue --noheader --states=RUNNING --format=%i|%u|%P|%N|%j` with
// Slurm's compressed hostlists. A few jobs name hosts the fabric does not have (a host whose cable
// is pulled is not discovered either), so that the exporter counts hosts not found.
import { random, type GeneratedFabric, type GeneratedNode } from './topology.js';

export interface JobsSpec {
  /** Running jobs to generate. */
  count: number;
  seed?: number;
  /** One job in this many names hosts that no adapter of the fabric has (default 40). */
  absentEvery?: number;
}

export interface GeneratedJob {
  id: string;
  user: string;
  partition: string;
  name: string;
  /** Host names (the first word of each adapter's NodeDescription), in the order squeue expands them. */
  hosts: string[];
  /** Hosts named that no adapter of the fabric has. */
  absent: string[];
  /** `%N`: the hosts as Slurm compresses them. */
  hostlist: string;
}

/** A host's name as Slurm knows it: the first word of its NodeDescription (rdma-ndd's `<hostname> <device>`). */
export function hostName(node: GeneratedNode): string {
  return node.description.split(' ')[0]!;
}

/**
 * Slurm's compressed form of a set of host names (`hostlist_ranged_string`): names split into a
 * prefix and a trailing number, numbers of one prefix and width gathered into `prefix[a-b,c]`,
 * zero padding kept, a lone host written bare; groups in the order of their first host.
 */
export function compressHostlist(names: readonly string[]): string {
  const split = names.map((name) => /^(.*?)(\d+)$/.exec(name));
  // A prefix's padded widths: a number of that many digits joins them (`01`…`09` and `10`…`32` are one range of width 2).
  const padded = new Set<string>();
  for (const match of split)
    if (match && match[2]!.length > 1 && match[2]!.startsWith('0')) padded.add(`${match[1]}\u0000${match[2]!.length}`);
  const groups = new Map<string, { prefix: string; width: number; numbers: number[] }>();
  const order: string[] = [];
  for (const [i, match] of split.entries()) {
    const key = match
      ? padded.has(`${match[1]}\u0000${match[2]!.length}`)
        ? `${match[1]}\u0000${match[2]!.length}`
        : `${match[1]}\u00000`
      : `\u0001${names[i]}`;
    let group = groups.get(key);
    if (!group) {
      groups.set(key, (group = { prefix: match ? match[1]! : names[i]!, width: Number(key.split('\u0000')[1] ?? 0), numbers: [] }));
      order.push(key);
    }
    if (match) group.numbers.push(Number(match[2]));
  }
  return order
    .map((key) => {
      const { prefix, width, numbers } = groups.get(key)!;
      if (numbers.length === 0) return prefix;
      const sorted = [...new Set(numbers)].sort((a, b) => a - b);
      const pad = (n: number) => String(n).padStart(width, '0');
      if (sorted.length === 1) return `${prefix}${pad(sorted[0]!)}`;
      const ranges: string[] = [];
      for (let i = 0; i < sorted.length; ) {
        let j = i;
        while (j + 1 < sorted.length && sorted[j + 1] === sorted[j]! + 1) j++;
        ranges.push(i === j ? pad(sorted[i]!) : `${pad(sorted[i]!)}-${pad(sorted[j]!)}`);
        i = j + 1;
      }
      return `${prefix}[${ranges.join(',')}]`;
    })
    .join(',');
}

const NAMES = ['train-llm', 'pretrain 70b', 'eval|sweep', 'nccl-tests', 'md_run', 'cfd.case-3', 'bert', 'allreduce bench'];
const PARTITIONS = ['gpu', 'gpu-long', 'batch', 'debug'];

/**
 * `count` running jobs over the fabric's hosts. Hosts by leaf as the generator built them (leaf
 * order, pods of consecutive leaves); a job's hosts are consecutive hosts of consecutive leaves,
 * or, for the ones across the tree, a few hosts on each of leaves picked anywhere.
 */
export function generateJobs(fabric: GeneratedFabric, spec: JobsSpec): GeneratedJob[] {
  // The topology's seeded generator: the same jobs on every run.
  const next = random(spec.seed ?? 34);
  const int = (low: number, high: number) => low + Math.floor(next() * (high - low + 1));
  const leaves: GeneratedNode[][] = [];
  for (const node of fabric.nodes) {
    if (node.kind !== 'ca') continue;
    const leaf = Number(/^H(\d+)_/.exec(node.id)?.[1]);
    (leaves[leaf - 1] ??= []).push(node);
  }
  const perLeaf = leaves[0]?.length ?? 1;
  const shape = fabric.spec.shape;
  // Leaves under one set of spines: a pod of the three-tier tree, the whole two-tier tree.
  const podLeaves = shape.tiers === 3 ? shape.radix / 2 : leaves.length;
  const absentEvery = spec.absentEvery ?? 40;
  const jobs: GeneratedJob[] = [];
  let id = 4_812_000;
  for (let j = 0; j < spec.count; j++) {
    const kind = next();
    let size: number;
    const chosen: GeneratedNode[] = [];
    if (kind < 0.97) {
      // Within a leaf (most), a few leaves, or a pod: consecutive hosts from a random start.
      size =
        kind < 0.55 ? int(1, perLeaf) : kind < 0.85 ? int(perLeaf + 1, perLeaf * 4) : int(perLeaf * 4, Math.min(perLeaf * podLeaves, 384));
      const pod = int(0, Math.ceil(leaves.length / podLeaves) - 1);
      const podHosts = leaves.slice(pod * podLeaves, (pod + 1) * podLeaves).flat();
      size = Math.min(size, podHosts.length);
      const start = int(0, podHosts.length - size);
      chosen.push(...podHosts.slice(start, start + size));
    } else {
      // Across the tree: 4 to 16 hosts on each of leaves anywhere.
      const blocks = int(8, 40);
      const block = int(4, Math.min(16, perLeaf));
      for (let b = 0; b < blocks; b++) {
        const leaf = leaves[int(0, leaves.length - 1)]!;
        const start = int(0, leaf.length - block);
        chosen.push(...leaf.slice(start, start + block));
      }
    }
    const hosts = [...new Set(chosen.map(hostName))];
    const absent: string[] = [];
    if (j % absentEvery === absentEvery - 1) {
      // Login or service nodes, or hosts of a rack not cabled yet: names in the fabric's pattern, past its last leaf.
      const pattern = hostName(leaves[0]![0]!);
      const count = int(1, 3);
      for (let a = 0; a < count; a++)
        absent.push(pattern.replace(/\d+(?=\D*\d+$)/, (digits) => String(leaves.length + 1 + a).padStart(digits.length, '0')));
    }
    // A host whose cable is pulled is in the job but not on the fabric.
    for (const node of chosen) if (!node.reachable && !absent.includes(hostName(node))) absent.push(hostName(node));
    const all = [...hosts, ...absent.filter((host) => !hosts.includes(host))];
    const hostlist = compressHostlist(all);
    // squeue prints array tasks as <job>_<task> and heterogeneous components as <job>+<offset>.
    const shape = next();
    const jobId = shape < 0.9 ? String(id) : shape < 0.97 ? `${id}_${int(0, 99)}` : `${id}+${int(0, 2)}`;
    id += int(1, 5);
    jobs.push({
      id: jobId,
      user: `user${String(int(1, 120)).padStart(3, '0')}`,
      partition: PARTITIONS[int(0, PARTITIONS.length - 1)]!,
      name: NAMES[int(0, NAMES.length - 1)]!,
      hosts: all,
      absent,
      hostlist,
    });
  }
  return jobs;
}

/** What `squeue --noheader --states=RUNNING --format=%i|%u|%P|%N|%j` prints for these jobs. */
export function squeueOutput(jobs: readonly GeneratedJob[]): string {
  return jobs.map((job) => `${job.id}|${job.user}|${job.partition}|${job.hostlist}|${job.name}\n`).join('');
}
