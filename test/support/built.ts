// The compiled entry point, built once per test run for the test files that need a real process:
// tsc, then the bundle that dist/main.js runs (scripts/bundle.mjs, without the code-cache runs:
// the first exporter a test stops writes one; test/startup/bundle.test.ts checks the build's own).
// Test files run two at a time (vitest.config.ts): the first to need dist/ builds it while holding
// a lock, and stamps it with the run's id (test-run.ts); the others wait for the lock and find the
// stamp. No worker rebuilds dist/ while another one runs it.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';

export const PROJECT = fileURLToPath(new URL('../../', import.meta.url));
export const MAIN = `${PROJECT}dist/main.js`;

const STAMP = `${PROJECT}dist/.test-run`;
const LOCK = `${PROJECT}.dist-build-lock`;
/** A lock older than this was left by a worker that died while building (a build takes seconds). */
const STALE_LOCK_MS = 300_000;

let built = false;

const stamped = (run: string): boolean => {
  try {
    return readFileSync(STAMP, 'utf8') === run;
  } catch {
    return false;
  }
};

const pause = (ms: number): void => {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
};

function build(): void {
  execFileSync(process.execPath, [`${PROJECT}node_modules/typescript/bin/tsc`, '-p', `${PROJECT}tsconfig.build.json`], {
    stdio: 'inherit',
  });
  execFileSync(process.execPath, [`${PROJECT}scripts/bundle.mjs`, '--no-code-cache'], { stdio: 'inherit' });
}

export function buildOnce(): void {
  if (built) return;
  const run = inject('testRun');
  while (!stamped(run)) {
    try {
      mkdirSync(LOCK);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const since = statSync(LOCK, { throwIfNoEntry: false })?.mtimeMs ?? Date.now();
      if (Date.now() - since > STALE_LOCK_MS) rmSync(LOCK, { recursive: true, force: true });
      else pause(200);
      continue;
    }
    try {
      if (!stamped(run)) {
        build();
        writeFileSync(STAMP, run);
      }
    } finally {
      rmSync(LOCK, { recursive: true, force: true });
    }
  }
  built = true;
}
