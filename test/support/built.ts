// The compiled entry point, built once per test file that needs a real process: tsc, then the
// bundle that dist/main.js runs (scripts/bundle.mjs, without the code-cache runs: the first
// exporter a test stops writes one; test/startup/bundle.test.ts checks the build's own).
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const PROJECT = fileURLToPath(new URL('../../', import.meta.url));
export const MAIN = `${PROJECT}dist/main.js`;

let built = false;

export function buildOnce(): void {
  if (built) return;
  execFileSync(process.execPath, [`${PROJECT}node_modules/typescript/bin/tsc`, '-p', `${PROJECT}tsconfig.build.json`], {
    stdio: 'inherit',
  });
  execFileSync(process.execPath, [`${PROJECT}scripts/bundle.mjs`, '--no-code-cache'], { stdio: 'inherit' });
  built = true;
}
