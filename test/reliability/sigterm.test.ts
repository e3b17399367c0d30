// SIGTERM while a diag cycle waits on a hanging tool: the exporter kills the tool's process group,
// exits 0 (not through its forced-exit path, which exits 1), and leaves no process behind.
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildOnce, MAIN } from '../support/built.js';
import { generateTree } from '../../synthetic/generate-tree.js';
import { waitFor } from '../../synthetic/processes.js';
import { alive, childrenOf, script } from './support.js';

let dir: string;

beforeAll(async () => {
  buildOnce();
  dir = await mkdtemp(path.join(tmpdir(), 'ibx-sigterm-'));
  await generateTree(path.join(dir, 'sys'), 2, 2, { umad: true });
}, 120_000);
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function pidsIn(file: string): Promise<number[]> {
  const text = await readFile(file, 'utf8').catch(() => '');
  return text.split('\n').filter(Boolean).map(Number);
}

describe('SIGTERM during a cycle', () => {
  it.each(['SIGTERM', 'SIGINT'] as const)('%s with hanging tools: exit code 0 and no orphaned process', async (signal) => {
    const pids = path.join(dir, `${signal}.pids`);
    // Every tool hangs far longer than the test, with a child of its own.
    const tool = await script(dir, `hang-${signal}`, `echo $$ >> ${pids}\nsleep 300 & echo $! >> ${pids}\nsleep 300`);
    const child = spawn(
      process.execPath,
      [
        MAIN,
        '--web.listen-address=127.0.0.1:0',
        '--path.sysfs',
        path.join(dir, 'sys'),
        '--perfquery.path',
        tool,
        '--sminfo.path',
        tool,
        '--smpquery.path',
        tool,
        '--diag.timeout',
        '60s',
        '--log.level',
        'error',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exit = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
      child.once('exit', (code, sig) => resolve({ code, signal: sig })),
    );
    try {
      // 4 ports: sminfo and two smpquery per port start at once, up to --diag.max-concurrent (4).
      const tools = await waitFor(
        'the tools to hang',
        async () => {
          const started = await pidsIn(pids);
          return started.length >= 8 ? started : undefined;
        },
        15_000,
      );
      // The tools are the exporter's own children (their sleeps, its grandchildren).
      const before = await childrenOf(child.pid!);
      expect(tools.filter((pid) => before.includes(pid)).length).toBeGreaterThanOrEqual(4);

      child.kill(signal);
      const { code } = await exit;
      expect(code, stderr).toBe(0);
      expect(stderr).not.toMatch(/took too long/);
      const everyTool = await pidsIn(pids);
      await waitFor(
        'every tool process and its children to end',
        async () => {
          const living = [];
          for (const pid of everyTool) if (await alive(pid)) living.push(pid);
          return living.length === 0 ? true : undefined;
        },
        5000,
      );
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      for (const pid of await pidsIn(pids)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone, as it should be
        }
      }
    }
  });
});
