// An error nothing catches, in the built exporter: one log line and exit code 1 (systemd restarts
// it), never a silent stop nor a half-dead process. The fault comes from outside the program: a
// module preloaded with node's --import that throws or rejects on SIGUSR2, once the server listens.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildOnce, MAIN } from '../support/built.js';
import { waitFor } from '../../synthetic/processes.js';
import { ZOO } from '../support/trees.js';

let dir: string;
beforeAll(() => {
  buildOnce();
  dir = mkdtempSync(path.join(tmpdir(), 'ibx-crash-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const FAULTS = {
  rejection: "process.on('SIGUSR2', () => { Promise.reject(new Error('injected fault')); });",
  exception: "process.on('SIGUSR2', () => { setImmediate(() => { throw new Error('injected fault'); }); });",
};

describe.each([
  ['rejection', 'stopping: unhandled promise rejection'],
  ['exception', 'stopping: uncaught exception'],
] as const)('an uncaught %s', (fault, message) => {
  it('ends the server with one log line and exit code 1', async () => {
    const preload = path.join(dir, `${fault}.mjs`);
    writeFileSync(preload, `${FAULTS[fault]}\n`);
    const child = spawn(process.execPath, ['--import', preload, MAIN, '--path.sysfs', ZOO, '--web.listen-address=127.0.0.1:0'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdout.resume();
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      await waitFor('the server to listen', () => (stderr.includes('"msg":"listening"') ? true : undefined), 20_000);
      const before = stderr.split('\n').filter(Boolean).length;
      process.kill(child.pid!, 'SIGUSR2');
      expect(await exited).toBe(1);
      // The collectors may log as they start; the crash is one line, the last.
      const lines = stderr
        .split('\n')
        .filter(Boolean)
        .slice(before)
        .map((line) => JSON.parse(line) as { level: string; msg: string; err?: { message: string } });
      expect(lines.filter((line) => line.level === 'fatal')).toHaveLength(1);
      expect(lines.at(-1)).toMatchObject({ level: 'fatal', msg: message, err: { message: 'injected fault' } });
    } finally {
      if (child.exitCode === null && child.signalCode === null) process.kill(child.pid!, 'SIGKILL');
    }
  }, 60_000);
});
