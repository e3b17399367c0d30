// The exporter as a process: exit codes, the no-device log line, graceful shutdown.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildOnce, MAIN } from '../../support/built.js';
import { NO_INFINIBAND, ZOO } from '../../support/trees.js';

let dir: string;
const children: ChildProcess[] = [];

beforeAll(async () => {
  buildOnce();
  dir = await mkdtemp(path.join(tmpdir(), 'ibx-process-'));
});
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function run(args: string[]) {
  return spawnSync(process.execPath, [MAIN, ...args], { encoding: 'utf8', timeout: 20_000 });
}

interface Running {
  child: ChildProcess;
  logs: Record<string, unknown>[];
  address: string;
}

/** Start the exporter and wait for its "listening" log line. */
async function start(args: string[]): Promise<Running> {
  const child = spawn(process.execPath, [MAIN, '--web.listen-address=127.0.0.1:0', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  children.push(child);
  const logs: Record<string, unknown>[] = [];
  let buffer = '';
  const address = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "listening" line; logs: ${JSON.stringify(logs)}`)), 15_000);
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => {
      buffer += chunk;
      let newline;
      while ((newline = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        try {
          const entry = JSON.parse(line) as Record<string, unknown>;
          logs.push(entry);
          if (entry.msg === 'listening') {
            clearTimeout(timer);
            resolve(String(entry.address));
          }
        } catch {
          logs.push({ raw: line });
        }
      }
    });
    child.on('exit', (code) => reject(new Error(`exited with ${code}; logs: ${JSON.stringify(logs)}`)));
  });
  return { child, logs, address };
}

function exited(child: ChildProcess): Promise<{ code: number | null; ms: number }> {
  const started = Date.now();
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, ms: Date.now() - started })));
}

describe('exit code 2 and one line for user errors', () => {
  it.each([
    [['--bogus'], /^infiniband-exporter: Unknown option '--bogus' \(see --help\)\n$/],
    [['--collection.interval=soon'], /^infiniband-exporter: --collection.interval: "soon" is not a duration/],
  ])('%j', (args, message) => {
    const result = run(args);
    expect(result.status).toBe(2);
    expect(result.stderr).toMatch(message);
    expect(result.stderr.split('\n').filter(Boolean)).toHaveLength(1);
    expect(result.stderr).not.toMatch(/\bat .*\.js:\d+/);
  });

  it('names a sysfs root that does not exist, or is not one', () => {
    const missing = run(['--path.sysfs', '/nonexistent']);
    expect(missing.status).toBe(2);
    expect(missing.stderr).toBe(
      'infiniband-exporter: --path.sysfs: /nonexistent does not exist; expected the directory where sysfs is mounted (/sys, or /host/sys in a container)\n',
    );
    const file = run(['--path.sysfs', path.join(ZOO, 'class/infiniband/mlx5_0/node_type')]);
    expect(file.status).toBe(2);
    expect(file.stderr).toMatch(/^infiniband-exporter: --path.sysfs: .*node_type is not a directory; expected/);
  });

  it('names the config file and line', async () => {
    const file = path.join(dir, 'bad.yml');
    await writeFile(file, 'collection:\n  interval: 10s\ndiag:\n  timeout: forever\n');
    const result = run(['--config.file', file]);
    expect(result.status).toBe(2);
    expect(result.stderr).toBe(
      `infiniband-exporter: config file ${file}:4: "diag.timeout" must be a duration such as 10s, 1m or 500ms, got "forever"\n`,
    );
  });

  it('prints help and version', () => {
    const help = run(['--help']);
    expect(help.status).toBe(0);
    for (const flag of [
      '--web.listen-address',
      '--path.sysfs',
      '--[no-]collector.diag',
      '--diag.max-concurrent',
      '--device.exclude',
      '--demo',
    ]) {
      expect(help.stdout).toContain(flag);
    }
    const version = run(['--version']);
    expect(version.status).toBe(0);
    expect(version.stdout).toMatch(/^infiniband-exporter \d+\.\d+\.\d+ \(revision \S+, Node\.js v\d+/);
  });
});

describe('running', () => {
  it('starts on a host without InfiniBand (sysfs without class/infiniband), says so once, serves its own metrics and stops on SIGTERM', async () => {
    const { child, logs, address } = await start(['--path.sysfs', NO_INFINIBAND, '--collection.interval=100ms', '--no-collector.diag']);
    const body = await (await fetch(`${address}/metrics`)).text();
    expect(body).toContain('process_cpu_user_seconds_total');
    await new Promise((r) => setTimeout(r, 500)); // several cycles
    const response = await fetch(`${address}/metrics`);
    expect(await response.text()).toContain('infiniband_exporter_collector_success{collector="sysfs"} 1');
    expect(logs.filter((entry) => /no InfiniBand devices found/.test(String(entry.msg)))).toHaveLength(1);
    const exit = exited(child);
    child.kill('SIGTERM');
    const { code, ms } = await exit;
    expect(code).toBe(0);
    expect(ms).toBeLessThan(2000);
  });

  it('stops on SIGINT while serving the zoo host', async () => {
    const { child, address } = await start(['--path.sysfs', ZOO, '--no-collector.diag']);
    for (let i = 0; i < 50; i++) {
      if ((await fetch(`${address}/ready`)).status === 200) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect((await fetch(`${address}/ready`)).status).toBe(200);
    const exit = exited(child);
    child.kill('SIGINT');
    expect((await exit).code).toBe(0);
  });

  it('exits 1 with a log line when the address is taken', async () => {
    const first = await start(['--path.sysfs', ZOO, '--no-collector.diag']);
    const port = new URL(first.address).port;
    const second = spawnSync(
      process.execPath,
      [MAIN, '--path.sysfs', ZOO, '--no-collector.diag', `--web.listen-address=127.0.0.1:${port}`],
      {
        encoding: 'utf8',
        timeout: 15_000,
      },
    );
    expect(second.status).toBe(1);
    expect(second.stderr).toMatch(/cannot listen/);
    expect(second.stderr).toMatch(/EADDRINUSE/);
    first.child.kill('SIGTERM');
    await exited(first.child);
  });
});
