// The files a person points the exporter at (--config.file, --web.config.file,
// --fabric.topology-file, --fabric.node-name-map): a FIFO, a directory or a 50 MB file in their
// place is refused at start with exit 2 and one line naming the file and the reason, at once,
// never a silent hang waiting for a writer nor gigabytes of parsing.
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildOnce, MAIN } from '../support/built.js';
import { ZOO } from '../support/trees.js';

let dir: string;

beforeAll(() => {
  buildOnce();
  dir = mkdtempSync(path.join(tmpdir(), 'ibx-file-flags-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Run the built exporter to its exit (killed by PID after 15 s: a hang fails the test). */
function run(args: string[]): Promise<{ status: number | null; stderr: string; stdout: string; ms: number }> {
  const started = performance.now();
  const child = spawn(process.execPath, [MAIN, '--path.sysfs', ZOO, '--web.listen-address=127.0.0.1:0', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const timer = setTimeout(() => process.kill(child.pid!, 'SIGKILL'), 15_000);
  return new Promise((resolve) =>
    child.once('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stderr, stdout, ms: performance.now() - started });
    }),
  );
}

const FLAGS = [
  { flag: '--config.file', kind: 'config file', extra: [] as string[] },
  { flag: '--web.config.file', kind: 'web config file', extra: [] },
  { flag: '--fabric.topology-file', kind: '', extra: ['--collector.fabric'] },
  { flag: '--fabric.node-name-map', kind: '', extra: [] },
];

describe.each(FLAGS)('$flag', ({ flag, kind, extra }) => {
  const name = flag.replace(/^--/, '').replace(/\W/g, '-');

  it('a FIFO in its place: exit 2 with one line, no hang', async () => {
    const fifo = path.join(dir, `${name}.fifo`);
    execFileSync('mkfifo', [fifo]);
    const result = await run([...extra, `${flag}=${fifo}`]);
    expect(result.status).toBe(2);
    expect(result.stderr).toMatch(
      new RegExp(`^infiniband-exporter: .*${kind}.*${fifo.replace(/\./g, '\\.')}:? is a FIFO, not a regular file\\n$`),
    );
    expect(result.ms).toBeLessThan(10_000);
  });

  it('a directory in its place: exit 2 with one line', async () => {
    const folder = path.join(dir, `${name}.d`);
    mkdirSync(folder);
    const result = await run([...extra, `${flag}=${folder}`]);
    expect(result.status).toBe(2);
    expect(result.stderr).toMatch(/^infiniband-exporter: .* is a directory, not a regular file\n$/);
  });

  it('a 50 MB file: refused at once, exit 2 with one line', async () => {
    const big = path.join(dir, `${name}.big`);
    writeFileSync(big, Buffer.alloc(50 * 1000 * 1000, '# a comment line that goes nowhere\n'));
    const result = await run([...extra, `${flag}=${big}`]);
    expect(result.status).toBe(2);
    expect(result.stderr).toMatch(/^infiniband-exporter: .* is 47\.7 MiB, more than the \d+\.0 MiB a [\w -]+ may have\n$/);
    // Node.js starting and loading the program is most of it; reading or parsing 50 MB is seconds.
    expect(result.ms).toBeLessThan(5_000);
  });
});
