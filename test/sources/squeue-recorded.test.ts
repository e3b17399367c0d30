// Recorded Slurm outputs of other clusters (test/fixtures/squeue/, each with its .source): node
// lists a few nodes of the ibsim lab cannot produce, through the hostlist expansion and the squeue
// parser. Outputs in another format than the contract's (squeue's default columns, sacct's `-P`)
// are taken apart here and their jobs fed to the parser in the contract's order, or their node
// lists to the expansion alone.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { expandHostlist } from '../../src/sources/jobs/hostlist.js';
import { parseSqueue } from '../../src/sources/jobs/squeue.js';

const fixture = (name: string): string => readFileSync(new URL(`../fixtures/squeue/${name}`, import.meta.url), 'utf8');
const lines = (text: string): string[] => text.split('\n').filter((line) => line.trim() !== '');

/** squeue's default columns (JOBID PARTITION NAME USER ST TIME NODES NODELIST) as the contract's `%i|%u|%P|%N|%j`, running jobs only. */
function asContractFormat(text: string): { contract: string; nodes: Map<string, number> } {
  const nodes = new Map<string, number>();
  const rows = lines(text)
    .slice(1)
    .map((line) => line.trim().split(/\s+/))
    .filter((columns) => columns[4] === 'R');
  for (const [id, , , , , , count] of rows) nodes.set(id!, Number(count));
  return {
    contract: rows.map(([id, partition, name, user, , , , nodelist]) => `${id}|${user}|${partition}|${nodelist}|${name}`).join('\n'),
    nodes,
  };
}

describe("recorded squeue outputs in the default format, through the contract's parser", () => {
  it.each([
    ['tacc-stampede-default.txt', [{ id: '12839', user: 'brekepal', partition: 'normal', hosts: ['c262-150', 'c262-151', 'c262-152'] }]],
    [
      'het-job-h100.txt',
      [
        { id: '21+0', user: 'ahmads', partition: 'all', hosts: ['slurm-h100-206-061'] },
        { id: '21+1', user: 'ahmads', partition: 'all', hosts: ['slurm-h100-206-089'] },
      ],
    ],
  ])('%s', (name, expected) => {
    const { contract, nodes } = asContractFormat(fixture(name));
    const parsed = parseSqueue(contract);
    expect(parsed.unparsed.count).toBe(0);
    expect(parsed.jobs.map(({ id, user, partition, hosts }) => ({ id, user, partition, hosts }))).toEqual(expected);
    // As many hosts as squeue's NODES column counts.
    for (const job of parsed.jobs) expect(job.hosts).toHaveLength(nodes.get(job.id)!);
  });
});

describe('recorded node lists of other clusters', () => {
  it("expands each of TACC's two-node lists to two zero-padded hosts", () => {
    const expanded = lines(fixture('tacc-nodelists.txt')).map((hostlist) => expandHostlist(hostlist));
    expect(expanded).toHaveLength(14);
    for (const expansion of expanded) {
      expect(expansion.error).toBeUndefined();
      expect(expansion.hosts).toHaveLength(2);
      for (const host of expansion.hosts!) expect(host).toMatch(/^c\d{3}-\d{3}$/);
    }
    expect(expanded[3]!.hosts).toEqual(['c438-062', 'c438-104']);
    expect(expanded[7]!.hosts).toEqual(['c427-032', 'c429-002']);
  });

  it("expands LUMI's sacct node lists, six-digit padding kept", () => {
    const [header, ...rows] = lines(fixture('lumi-sacct.txt')).map((line) => line.split('|'));
    const column = header!.indexOf('NodeList');
    expect(rows.map((row) => expandHostlist(row[column]!).hosts)).toEqual([
      ['nid005828', 'nid005829', 'nid005830', 'nid005831'],
      ['nid005828'],
      ['nid005829', 'nid005830', 'nid005831'],
    ]);
  });

  // Slurm's own expansion (`scontrol show hostnames`) recorded beside the hostlist: ours must be the same, in the same order.
  it.each(['ml-nodes.hostnames', 'digit-before-bracket.hostnames', 'd05.hostnames'])('%s as Slurm expanded it', (name) => {
    const [hostlist, ...slurm] = lines(fixture(name));
    expect(expandHostlist(hostlist!)).toEqual({ hosts: slurm });
  });
});
