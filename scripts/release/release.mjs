#!/usr/bin/env node
// npm run release [-- --out=<dir>]: the single executable, the .deb, the .rpm and the container
// image (an OCI archive), for linux-x64, into one folder (release/ by default, git-ignored), with
// SHA256SUMS. docs/deploy.md says how each is installed; scripts/release/*.mjs how each is made.
//
// Versions: package.json's version, and the revision: INFINIBAND_EXPORTER_REVISION when set, else
// git's (12 hex digits, "-dirty" when the work tree has changes), else "unknown" (a source archive
// has no .git); written into the binary (--version, infiniband_exporter_build_info) and the
// image's labels. Reproducible as far as the tools allow: SOURCE_DATE_EPOCH (the commit's time
// unless given; without .git, package.json's modification time, which git archive sets to the
// commit's) fixes every timestamp dpkg-deb, rpmbuild, help2man, mmdebstrap and the image archive
// write (docs/deploy.md, "Reproducible builds", says which bytes still differ and why).
//
// First a preflight: every tool missing from PATH in one line with the apt-get line that brings
// them, exit 2. Then the build runs again under the Node.js it ships (scripts/release/runtime.mjs):
// the single executable's blob and V8 code caches must come from that very node.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { runtimeNode } from './runtime.mjs';
import { PROJECT, UserError, preflight, run, sha256 } from './tools.mjs';

/** The names, version, revision and time the release products carry. */
export async function metadata() {
  const pkg = JSON.parse(readFileSync(path.join(PROJECT, 'package.json'), 'utf8'));
  const given = process.env.INFINIBAND_EXPORTER_REVISION || undefined;
  let revision = given ?? 'unknown';
  let epoch = process.env.SOURCE_DATE_EPOCH;
  // The project's own .git only: a source archive unpacked inside another checkout is not that checkout.
  if (existsSync(path.join(PROJECT, '.git'))) {
    const git = (...args) => run('git', ['-C', PROJECT, ...args]).then((out) => out.trim());
    try {
      if (given === undefined) {
        const dirty = (await git('status', '--porcelain', '--untracked-files=no')) !== '';
        revision = `${(await git('rev-parse', 'HEAD')).slice(0, 12)}${dirty ? '-dirty' : ''}`;
      }
      epoch ??= await git('log', '-1', '--format=%ct');
    } catch (error) {
      // No git, or one that will not read this checkout (another owner's, a shallow clone without HEAD).
      log(
        `git could not read ${PROJECT} (${error.message.split('\n').find((line) => /fatal|not on PATH/.test(line)) ?? error.message.split('\n')[0]}): revision ${revision}`,
      );
    }
  }
  epoch ??= String(Math.floor(statSync(path.join(PROJECT, 'package.json')).mtimeMs / 1000));
  if (!/^\d+$/.test(epoch)) throw new UserError(`SOURCE_DATE_EPOCH=${epoch}: expected seconds since 1970 (date +%s)`);
  return {
    name: pkg.name,
    version: pkg.version,
    revision,
    epoch: Number(epoch),
    summary: 'Prometheus exporter for InfiniBand hosts',
    description: pkg.description,
    license: pkg.license,
    homepage: pkg.homepage,
  };
}

const log = (message) => process.stderr.write(`release: ${message}\n`);

// Set in the run under the shipped Node.js, so that it does not start itself again.
const RUNTIME_RUN = 'INFINIBAND_EXPORTER_RELEASE_RUNTIME';

async function main() {
  const unknown = process.argv.slice(2).filter((arg) => !arg.startsWith('--out=') || arg === '--out=');
  if (unknown.length > 0) throw new UserError(`unknown argument ${unknown[0]}: npm run release [-- --out=<dir>]`);
  preflight();
  if (process.env[RUNTIME_RUN] === undefined) {
    const node = await runtimeNode(log);
    const child = spawnSync(node, process.argv.slice(1), { stdio: 'inherit', env: { ...process.env, [RUNTIME_RUN]: '1' } });
    process.exit(child.status ?? 1);
  }
  // Imported here, after the preflight: they load esbuild and postject from node_modules.
  const [{ buildBinary }, { buildPackages }, { buildImage }] = await Promise.all([
    import('./binary.mjs'),
    import('./packages.mjs'),
    import('./image.mjs'),
  ]);
  const given = process.argv.find((arg) => arg.startsWith('--out='))?.slice('--out='.length);
  const out = path.resolve(given ?? path.join(PROJECT, 'release'));
  const meta = await metadata();
  process.env.SOURCE_DATE_EPOCH = String(meta.epoch);
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  // Scratch space inside the project, so that the compiled modules resolve its node_modules.
  const scratch = path.join(PROJECT, 'node_modules/.cache/infiniband-exporter-release');
  mkdirSync(scratch, { recursive: true });
  const work = mkdtempSync(path.join(scratch, 'build-'));
  const started = Date.now();
  const step = async (name, action) => {
    const at = Date.now();
    const result = await action();
    log(`${name}: ${((Date.now() - at) / 1000).toFixed(1)} s`);
    return result;
  };
  try {
    log(
      `${meta.name} ${meta.version}, revision ${meta.revision}, SOURCE_DATE_EPOCH ${meta.epoch}, Node.js ${process.version}, into ${out}`,
    );
    const { binary, nodeFlags, glibcTunables } = await step('binary', () =>
      buildBinary({ work: path.join(work, 'binary'), out, meta, log }),
    );
    const packages = await step('packages', () => buildPackages({ work: path.join(work, 'packages'), out, meta, binary, nodeFlags }));
    await step('image', () => buildImage({ work: path.join(work, 'image'), out, meta, deb: packages.deb, nodeFlags, glibcTunables }));
    const files = readdirSync(out).sort();
    writeFileSync(path.join(out, 'SHA256SUMS'), files.map((file) => `${sha256(path.join(out, file))}  ${file}\n`).join(''));
    log(`done in ${((Date.now() - started) / 1000).toFixed(1)} s: ${files.join(', ')}`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  main().catch((error) => {
    // A user error is one line; anything else is a fault of the build, with its stack.
    if (error instanceof UserError) {
      process.stderr.write(`release: ${error.message}\n`);
      process.exit(2);
    }
    process.stderr.write(`release: ${error.stack ?? error}\n`);
    process.exit(1);
  });
}
