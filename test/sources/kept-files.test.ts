// Files kept open between passes (sources/sysfs-files.ts): read again with a pread at offset 0,
// opened again by path whenever what the path names may have changed.
import { execFileSync, spawn } from 'node:child_process';
import { closeSync, readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { mkdir, mkdtemp, rename, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RECENT_CHANGE_MS, openFilesLimit, type ReadResult } from '../../src/sources/sysfs-attribute.js';
import { SysfsFiles } from '../../src/sources/sysfs-files.js';
import { buildOnce, MAIN } from '../support/built.js';
import { copyTree, ZOO } from '../support/trees.js';

let dir: string;
let files: SysfsFiles | undefined;

const COUNTERS = 'class/infiniband/mlx5_0/ports/1/counters';

/** A counters directory with two files, last changed a minute ago. */
async function quietTree(): Promise<void> {
  await mkdir(path.join(dir, COUNTERS), { recursive: true });
  await writeFile(path.join(dir, COUNTERS, 'symbol_error'), '1\n');
  await writeFile(path.join(dir, COUNTERS, 'port_rcv_errors'), '2\n');
  await ageDirectory(COUNTERS);
}

/** Move a directory's mtime a minute back (its ctime stays now: the clock is moved forward instead). */
async function ageDirectory(relative: string): Promise<void> {
  const minuteAgo = new Date(Date.now() - 60_000);
  await utimes(path.join(dir, relative), minuteAgo, minuteAgo);
}

/** A clock RECENT_CHANGE_MS ahead, so that a ctime set just now counts as quiet. */
const later = () => Date.now() + RECENT_CHANGE_MS + 1_000;

function openFds(): number {
  return readdirSync('/proc/self/fd').length;
}

/** A counter file read with `keep`: its value, its text, or `kind: message` of its failure. */
function value(relative: string, reader: SysfsFiles = files!): bigint | string {
  const slash = relative.lastIndexOf('/');
  const values: (bigint | undefined)[] = [];
  const others: { index: number; result: ReadResult }[] = [];
  reader.readDecimals(relative.slice(0, slash), [relative.slice(slash + 1)], true, values, others);
  const read = others[0]?.result;
  if (read === undefined) return values[0]!;
  return read.ok ? read.text : `${read.failure.kind}: ${read.failure.message}`;
}

/** The quiet tree, read by a SysfsFiles that keeps files open, its first pass begun. */
async function keptQuietTree(): Promise<SysfsFiles> {
  await quietTree();
  const kept = new SysfsFiles(dir, { keepOpen: true, now: later });
  kept.beginPass();
  return kept;
}

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'ibx-kept-'));
});
afterEach(async () => {
  files?.close();
  files = undefined;
  await rm(dir, { recursive: true, force: true });
});

describe('files kept open between passes', () => {
  it('keeps a file open and reads what was written into it since', async () => {
    files = await keptQuietTree();
    expect(value(`${COUNTERS}/symbol_error`)).toBe(1n);
    expect(files.keptFiles).toBe(1);
    const fds = openFds();
    await writeFile(path.join(dir, COUNTERS, 'symbol_error'), '12345\n');
    for (let pass = 0; pass < 3; pass++) {
      files.beginPass();
      expect(value(`${COUNTERS}/symbol_error`)).toBe(12345n);
    }
    expect(openFds()).toBe(fds);
    expect(files.keptFiles).toBe(1);
  });

  it('opens and closes each file when not asked to keep it, or without keepOpen', async () => {
    files = await keptQuietTree();
    expect(files.read(`${COUNTERS}/symbol_error`)).toEqual({ ok: true, text: '1' });
    expect(files.keptFiles).toBe(0);
    const plain = new SysfsFiles(dir, { now: later });
    plain.beginPass();
    expect(value(`${COUNTERS}/symbol_error`, plain)).toBe(1n);
    expect(plain.keptFiles).toBe(0);
  });

  it('reads a file replaced by another (an atomic write) in the next pass', async () => {
    files = await keptQuietTree();
    expect(value(`${COUNTERS}/symbol_error`)).toBe(1n);
    await writeFile(path.join(dir, 'new'), '99\n');
    await rename(path.join(dir, 'new'), path.join(dir, COUNTERS, 'symbol_error'));
    files.beginPass();
    expect(value(`${COUNTERS}/symbol_error`)).toBe(99n);
  });

  it('sees a kept file turned into a FIFO or removed, without blocking', async () => {
    files = await keptQuietTree();
    expect(value(`${COUNTERS}/symbol_error`)).toBe(1n);
    expect(value(`${COUNTERS}/port_rcv_errors`)).toBe(2n);
    await rm(path.join(dir, COUNTERS, 'symbol_error'));
    execFileSync('mkfifo', [path.join(dir, COUNTERS, 'symbol_error')]);
    await rm(path.join(dir, COUNTERS, 'port_rcv_errors'));
    files.beginPass();
    expect(value(`${COUNTERS}/symbol_error`)).toMatch(/^error: a FIFO/);
    expect(value(`${COUNTERS}/port_rcv_errors`)).toMatch(/^missing:/);
    expect(files.keptFiles).toBe(0);
  });

  it('reads the new files of a device that was unplugged and plugged back in', async () => {
    files = await keptQuietTree();
    expect(value(`${COUNTERS}/symbol_error`)).toBe(1n);
    await rm(path.join(dir, 'class/infiniband/mlx5_0'), { recursive: true });
    files.beginPass();
    expect(value(`${COUNTERS}/symbol_error`)).toMatch(/^missing:/);
    await mkdir(path.join(dir, COUNTERS), { recursive: true });
    await writeFile(path.join(dir, COUNTERS, 'symbol_error'), '7\n');
    await ageDirectory(COUNTERS);
    files.beginPass();
    expect(value(`${COUNTERS}/symbol_error`)).toBe(7n);
  });

  it('does not keep the files of a directory changed in the last RECENT_CHANGE_MS', async () => {
    await quietTree();
    let now = Date.now();
    files = new SysfsFiles(dir, { keepOpen: true, now: () => now });
    // The directory's ctime is now (utimes changed it): recent.
    files.beginPass();
    expect(value(`${COUNTERS}/symbol_error`)).toBe(1n);
    expect(files.keptFiles).toBe(0);
    now += RECENT_CHANGE_MS + 1_000;
    files.beginPass();
    expect(value(`${COUNTERS}/symbol_error`)).toBe(1n);
    expect(files.keptFiles).toBe(1);
  });

  it('opens a kept file again by its path when reading it fails', async () => {
    files = await keptQuietTree();
    expect(value(`${COUNTERS}/symbol_error`)).toBe(1n);
    // What a kernfs file does when its device goes away (ENODEV), done here by closing the
    // descriptor behind the reader's back (EBADF).
    const target = path.join(dir, COUNTERS, 'symbol_error');
    const fd = readdirSync('/proc/self/fd')
      .map(Number)
      .find((candidate) => {
        try {
          return readlinkSync(`/proc/self/fd/${candidate}`) === target;
        } catch {
          return false;
        }
      });
    expect(fd).toBeDefined();
    closeSync(fd!);
    files.beginPass();
    expect(value(`${COUNTERS}/symbol_error`)).toBe(1n);
    expect(files.keptFiles).toBe(1);
  });

  it('keeps no more files than its budget, and reads the others by their paths', async () => {
    await quietTree();
    files = new SysfsFiles(dir, { keepOpen: true, now: later, maxKeptFiles: 1 });
    for (let pass = 0; pass < 2; pass++) {
      files.beginPass();
      const values: (bigint | undefined)[] = [];
      files.readDecimals(COUNTERS, ['symbol_error', 'port_rcv_errors'], true, values, []);
      expect(values).toEqual([1n, 2n]);
      expect(files.keptFiles).toBe(1);
    }
  });

  it('reads the limit on open files it budgets half of from /proc/self/limits', () => {
    const limit = Number(/^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'latin1'))![1]);
    expect(openFilesLimit()).toBe(limit);
  });

  it('sorts a kept listing again only when the directory lists other names', async () => {
    for (const name of ['mlx5_10', 'mlx5_2', 'mlx5_1']) await mkdir(path.join(dir, 'class/infiniband', name), { recursive: true });
    files = new SysfsFiles(dir, { keepOpen: true, now: later });
    const names = () => {
      const listing = files!.list('class/infiniband', { keep: true });
      return listing.ok ? listing.names : listing.failure.kind;
    };
    expect(names()).toEqual(['mlx5_1', 'mlx5_2', 'mlx5_10']);
    const first = names();
    (first as string[]).push('changed by the caller');
    expect(names()).toEqual(['mlx5_1', 'mlx5_2', 'mlx5_10']);
    await mkdir(path.join(dir, 'class/infiniband/mlx5_0'));
    expect(names()).toEqual(['mlx5_0', 'mlx5_1', 'mlx5_2', 'mlx5_10']);
    await rm(path.join(dir, 'class/infiniband'), { recursive: true });
    expect(names()).toBe('missing');
  });

  it('release closes the files below a path, close all of them', async () => {
    await quietTree();
    await mkdir(path.join(dir, 'class/infiniband/mlx5_1/ports/1/counters'), { recursive: true });
    await writeFile(path.join(dir, 'class/infiniband/mlx5_1/ports/1/counters/symbol_error'), '3\n');
    await ageDirectory('class/infiniband/mlx5_1/ports/1/counters');
    files = new SysfsFiles(dir, { keepOpen: true, now: later });
    files.beginPass();
    value(`${COUNTERS}/symbol_error`);
    value('class/infiniband/mlx5_1/ports/1/counters/symbol_error');
    expect(files.keptFiles).toBe(2);
    const fds = openFds();
    files.release('class/infiniband/mlx5_1');
    expect(files.keptFiles).toBe(1);
    expect(openFds()).toBe(fds - 1);
    files.close();
    expect(files.keptFiles).toBe(0);
    expect(openFds()).toBe(fds - 2);
  });
});

describe('an exporter short of file descriptors', () => {
  it('stops keeping files open, says so once, and serves every port', async () => {
    buildOnce();
    const tree = await copyTree(ZOO);
    // Old enough to be kept: the copy's directories were all made just now.
    const old = new Date(Date.now() - 60_000);
    execFileSync('find', [tree.root, '-type', 'd', '-exec', 'touch', '-h', '-d', old.toISOString(), '{}', '+']);
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    // Node.js raises its soft limit to the hard one; 40 descriptors is the hard limit here, room for
    // Node.js itself and a few kept files, far fewer than the tree's.
    const child = spawn(
      'bash',
      [
        '-c',
        `ulimit -n 40 && exec "$0" "$@"`,
        process.execPath,
        MAIN,
        '--path.sysfs',
        tree.root,
        '--no-collector.diag',
        '--collection.interval=1s',
        `--web.listen-address=127.0.0.1:${port}`,
      ],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let log = '';
    child.stdout.on('data', (chunk: Buffer) => (log += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (log += chunk.toString()));
    try {
      // Directories become quiet RECENT_CHANGE_MS after the touch (it set their ctime); readings
      // run every second at most, whenever a scrape finds the last one older than that.
      for (let attempt = 0; attempt < 100 && !log.includes('no longer keeping'); attempt++) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        await fetch(`http://127.0.0.1:${port}/metrics`).then(
          (response) => response.text(),
          () => '',
        );
      }
      const second = await fetch(`http://127.0.0.1:${port}/metrics`).then((response) => response.text());
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      const third = await fetch(`http://127.0.0.1:${port}/metrics`).then((response) => response.text());
      expect(log.match(/no longer keeping sysfs files open/g)).toHaveLength(1);
      expect(log).toMatch(/EMFILE/);
      for (const text of [second, third]) expect(text).toContain('infiniband_exporter_read_errors_total{collector="sysfs"} 0');
      const states = (text: string) => text.split('\n').filter((line) => line.startsWith('infiniband_port_state_id{'));
      expect(states(second).length).toBeGreaterThan(10);
      expect(states(third)).toEqual(states(second));
    } finally {
      child.kill('SIGKILL');
      await tree.remove();
    }
  });
});
