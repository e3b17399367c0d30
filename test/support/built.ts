// The compiled entry point, built once per test file that needs a real process.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const PROJECT = fileURLToPath(new URL('../../', import.meta.url));
export const MAIN = `${PROJECT}dist/main.js`;

let built = false;

export function buildOnce(): void {
  if (built) return;
  execFileSync(process.execPath, [`${PROJECT}node_modules/typescript/bin/tsc`, '-p', `${PROJECT}tsconfig.build.json`], { stdio: 'inherit' });
  built = true;
}
