// The jobs sources: Slurm hostlists, squeue's plain format, and --jobs.file.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { expandHostlist } from '../../src/sources/jobs/hostlist.js';
import { parseJobsFile, readJobsFile } from '../../src/sources/jobs/jobs-file.js';
import { parseSqueue } from '../../src/sources/jobs/squeue.js';

describe('expandHostlist', () => {
  it.each([
    ['node11', ['node11']],
    ['node[1-3]', ['node1', 'node2', 'node3']],
    ['gpu[001-004,010],cpu-a[1,3-4]', ['gpu001', 'gpu002', 'gpu003', 'gpu004', 'gpu010', 'cpu-a1', 'cpu-a3', 'cpu-a4']],
    ['r[1-2]n[01-02]', ['r1n01', 'r1n02', 'r2n01', 'r2n02']],
    ['n[08-11]', ['n08', 'n09', 'n10', 'n11']],
    ['n[098-101]', ['n098', 'n099', 'n100', 'n101']],
    ['rack-1.node[7,9].ib', ['rack-1.node7.ib', 'rack-1.node9.ib']],
    ['a[1-2]-b[3]', ['a1-b3', 'a2-b3']],
    ['node1,node1,node[1-2]', ['node1', 'node2']],
    ['[1-2]x', ['1x', '2x']],
    ['', []],
    ['(null)', []],
  ])('%s', (hostlist, hosts) => {
    expect(expandHostlist(hostlist)).toEqual({ hosts });
  });

  it.each([
    ['node[1-3', '"[" without "]"'],
    ['node1-3]', 'brackets do not pair'],
    ['node[[1]]', 'brackets do not pair'],
    ['node[3-1]', 'runs backwards'],
    ['node[a-b]', 'neither a number'],
    ['node1,,node2', 'an empty name'],
    ['node[0-9999999]', 'more than'],
    ['r[0-999]n[0-9999]', 'more than'],
    ['node 1', 'no white space'],
  ])('refuses %s', (hostlist, message) => {
    expect(expandHostlist(hostlist).error).toContain(message);
  });
});

describe('parseSqueue', () => {
  it('reads the contract format, the name last and allowed its own |', () => {
    const parsed = parseSqueue('48213|alice|gpu|gpu[001-002]|train|llm\n48220_3|bob|cpu|cpu-a1|cfd sweep\n48230|carol|gpu||pending\n');
    expect(parsed.jobs).toEqual([
      { id: '48213', user: 'alice', partition: 'gpu', name: 'train|llm', hosts: ['gpu001', 'gpu002'] },
      { id: '48220_3', user: 'bob', partition: 'cpu', name: 'cfd sweep', hosts: ['cpu-a1'] },
    ]);
    expect(parsed.unparsed.count).toBe(0);
  });

  it('counts lines it cannot read and keeps the rest', () => {
    const parsed = parseSqueue('slurm_load_jobs error: Unable to contact slurm controller\n1|u|p|n[1-|x\n2|u|p|n1|ok\n');
    expect(parsed.jobs.map((job) => job.id)).toEqual(['2']);
    expect(parsed.unparsed.count).toBe(2);
  });

  it("bounds what short lines expand to: one job past a subnet's hosts, all jobs past a million, refused and counted", () => {
    expect(parseSqueue('1|u|p|n[1-70000]|big\n').unparsed.count).toBe(1);
    // 40 lines of 30 bytes, each 60 000 hosts: 16 fit the budget of a million, the others are counted.
    const lines = Array.from({ length: 40 }, (_, i) => `${i + 1}|u|p|h${i}x[1-60000]|j\n`).join('');
    const parsed = parseSqueue(lines);
    expect(parsed.jobs).toHaveLength(16);
    expect(parsed.jobs.reduce((sum, job) => sum + job.hosts.length, 0)).toBe(960_000);
    expect(parsed.unparsed.count).toBe(24);
  });
});

describe('jobs file', () => {
  it("reads the demo fabric's jobs", () => {
    const jobs = readJobsFile(path.join(import.meta.dirname, '../../demo/fabric/jobs.yaml'), '--jobs.file');
    expect(jobs.map((job) => [job.id, job.hosts.length])).toEqual([
      ['48213', 4],
      ['48220', 4],
    ]);
  });

  it('takes JSON, numeric ids and hostlists', () => {
    expect(parseJobsFile('[{"id": 7, "user": "u", "hosts": ["n[1-2]", "m1"]}]', 'jobs.json')).toEqual([
      { id: '7', user: 'u', partition: '', name: '', hosts: ['n1', 'n2', 'm1'] },
    ]);
    expect(parseJobsFile('# none running\n', 'jobs.yaml')).toEqual([]);
  });

  it.each([
    ['- id: 1\n  hosts: n1\n', 'jobs file jobs.yaml:2: "hosts" must be a list'],
    ['- id: 1\n  hosts: [n1]\n  node: x\n', 'jobs file jobs.yaml:3: unknown key "node"'],
    ['- hosts: [n1]\n', 'jobs file jobs.yaml:1: a job without "id"'],
    ['- id: 1\n  hosts:\n    - n[1-\n', 'jobs file jobs.yaml:3: not a host name or hostlist'],
    ['- id: 1\n  hosts: [n1]\n- id: 1\n  hosts: [n2]\n', 'jobs file jobs.yaml:3: job 1 is listed twice'],
    ['id: 1\n', 'jobs file jobs.yaml:1: expected a list of jobs'],
  ])('names the line of a mistake: %j', (content, message) => {
    expect(() => parseJobsFile(content, 'jobs.yaml')).toThrow(message);
  });

  it('refuses hostlists past the budget of a reading, naming the line', () => {
    const content = Array.from({ length: 17 }, (_, i) => `- id: ${i + 1}\n  hosts: ["h${i}x[1-60000]"]\n`).join('');
    expect(() => parseJobsFile(content, 'jobs.yaml')).toThrow(
      'jobs file jobs.yaml:34: not a host name or hostlist: expands to more than 40000 hosts',
    );
    expect(() => parseJobsFile('- id: 1\n  hosts: ["n[1-70000]"]\n', 'jobs.yaml')).toThrow('expands to more than 65536 hosts');
  });

  it('refuses a directory without reading it, naming the flag', () => {
    const directory = mkdtempSync(path.join(tmpdir(), 'jobs-'));
    expect(() => readJobsFile(directory, '--jobs.file')).toThrow(`--jobs.file: ${directory} is a directory, not a regular file`);
    const file = path.join(directory, 'jobs.yaml');
    writeFileSync(file, '- {id: 3, hosts: [a]}\n');
    expect(readJobsFile(file, '--jobs.file')[0]!.id).toBe('3');
  });
});
