// The single executable's main script (npm run release; scripts/release/binary.mjs makes the
// binary). V8's flags first (set-v8-flags.ts), then the program's bundle, which the binary holds as
// an asset beside its V8 code cache, compiled as dist/main.js compiles dist/exporter.cjs
// (bundle-loader.ts). Node.js's own "useCodeCache" would cache only what compiling the script
// yields; this cache was written after a run that started, collected and answered scrapes. The
// binary holds one for a host's V8 flags and one for fabric mode's, and takes the one made under
// the flags set-v8-flags.ts set; other flags (V8 flags in NODE_OPTIONS) find none, and the bundle
// is compiled as it runs.
//
// The demo data (demo/: --demo's sysfs tree, --demo=fabric's recordings) is read from disk: the
// binary holds it as one asset and, only when --demo is on the command line, writes it into a private directory under
// the temporary directory, removed at exit. The bundle then runs as <that directory>/dist/
// exporter.cjs, where its modules find the demo host as they do in a checkout
// (commands/command-line.ts).
//
// Run by node rather than as the binary, this file runs the bundle beside it as dist/main.js does:
// the release build does so to write the code caches that the binary then holds.
import './set-v8-flags.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { getRawAsset, isSea } from 'node:sea';
import { debuglog } from 'node:util';
import { compileSource, runBundle, runCompiled } from './bundle-loader.js';
import { ASSETS, codeCacheAsset, unpackTree, type PackedEntry } from './sea-assets.js';
import { v8FlagsSet } from './v8-flags.js';

// NODE_DEBUG=infiniband-exporter says whether V8 took the code cache (the release tests ask).
const debug = debuglog('infiniband-exporter');

/** An asset's bytes, in place (getRawAsset does not copy them). */
function asset(key: string): Buffer {
  const raw = getRawAsset(key);
  return typeof raw === 'string' ? Buffer.from(raw) : Buffer.from(raw);
}

/** The code cache made under the V8 flags this process set, if the binary holds one. */
function codeCache(): Buffer | undefined {
  try {
    return asset(codeCacheAsset(v8FlagsSet() ?? []));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ERR_SINGLE_EXECUTABLE_APPLICATION_ASSET_NOT_FOUND') return undefined;
    throw error;
  }
}

function writeDemoHost(): string {
  const root = mkdtempSync(path.join(tmpdir(), 'infiniband-exporter-demo-'));
  process.once('exit', () => rmSync(root, { recursive: true, force: true }));
  unpackTree(JSON.parse(asset(ASSETS.demoHost).toString('utf8')) as PackedEntry[], root);
  return root;
}

if (isSea()) {
  // Without --demo no module reads a file beside the bundle: its path only names it in stack traces.
  const demo = process.argv.some((arg) => arg === '--demo' || arg.startsWith('--demo='));
  const root = demo ? writeDemoHost() : process.execPath;
  const file = path.join(root, 'dist', ASSETS.bundle);
  const compiled = compileSource(asset(ASSETS.bundle).toString('utf8'), file, codeCache());
  debug('code cache %s', compiled.cache);
  runCompiled(file, compiled);
} else {
  runBundle(new URL(`../${ASSETS.bundle}`, import.meta.url), new URL('../cli.js', import.meta.url));
}
