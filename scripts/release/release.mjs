#!/usr/bin/env node
// npm run release [-- --out=<dir>]: the single executable, the .deb, the .rpm and the container
// image (an OCI archive), for linux-x64, into one folder (release/ by default, git-ignored), with
// SHA256SUMS. docs/deploy.md says how each is installed; scripts/release/*.mjs how each is made.
//
// Versions: package.json's version, and the git revision (12 hex digits, "-dirty" when the work
// tree has changes), written into the binary (--version, infiniband_exporter_build_info) and the
// image's labels. Reproducible as far as the tools allow: SOURCE_DATE_EPOCH (the commit's time
// unless given) fixes every timestamp dpkg-deb, rpmbuild, help2man, mmdebstrap and the image
// archive write (docs/deploy.md, "Reproducible builds", says which bytes still differ and why).
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { buildBinary } from './binary.mjs';
import { buildImage } from './image.mjs';
import { buildPackages } from './packages.mjs';
import { PROJECT, run, sha256 } from './tools.mjs';

/** The names, version, revision and time the release products carry. */
export async function metadata() {
  const pkg = JSON.parse(readFileSync(path.join(PROJECT, 'package.json'), 'utf8'));
  const git = (...args) => run('git', ['-C', PROJECT, ...args]).then((out) => out.trim());
  const dirty = (await git('status', '--porcelain', '--untracked-files=no')) !== '';
  const revision = `${(await git('rev-parse', 'HEAD')).slice(0, 12)}${dirty ? '-dirty' : ''}`;
  const epoch = process.env.SOURCE_DATE_EPOCH ?? (await git('log', '-1', '--format=%ct'));
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

async function main() {
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
    log(`${meta.name} ${meta.version}, revision ${meta.revision}, SOURCE_DATE_EPOCH ${meta.epoch}, into ${out}`);
    const { binary, nodeFlags } = await step('binary', () => buildBinary({ work: path.join(work, 'binary'), out, meta }));
    const packages = await step('packages', () => buildPackages({ work: path.join(work, 'packages'), out, meta, binary, nodeFlags }));
    await step('image', () => buildImage({ work: path.join(work, 'image'), out, meta, deb: packages.deb, nodeFlags }));
    const files = readdirSync(out).sort();
    writeFileSync(path.join(out, 'SHA256SUMS'), files.map((file) => `${sha256(path.join(out, file))}  ${file}\n`).join(''));
    log(`done in ${((Date.now() - started) / 1000).toFixed(1)} s: ${files.join(', ')}`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  main().catch((error) => {
    process.stderr.write(`release: ${error.stack ?? error}\n`);
    process.exit(1);
  });
}
