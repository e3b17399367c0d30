// The single executable: Node.js's single-executable application (the node binary running this
// build, the pinned one of scripts/release/runtime.mjs, with a blob injected by postject) whose main
// script is src/startup/sea-main.ts and whose assets are the standalone bundle, its V8 code caches
// and the demo host (src/startup/sea-assets.ts).
//
// tsc compiles into the work directory, not dist/: tests build dist/ at the same time. Each code
// cache comes from a run of the bundle by this node with the exporter's own V8 flags (a start, a
// collection of the demo host, a scrape with and without gzip), as `npm run build` makes dist/'s:
// one run as a host, one in fabric mode, whose V8 flags differ. V8 takes them in the binary, whose
// V8 and flags are the same (NODE_DEBUG=infiniband-exporter shows it). Node's "useCodeCache" is
// left off: it would only cache the main script, as compiled.
import { chmodSync, copyFileSync, cpSync, mkdirSync, readFileSync, readdirSync, realpathSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { inject } from 'postject';
import { bundle, writeCodeCaches } from '../bundle.mjs';
import { pinnedVersion } from './runtime.mjs';
import { PROJECT, UserError, run } from './tools.mjs';

// The fuse Node.js looks for to know that a blob was injected (the single-executable documentation).
const SENTINEL_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

/** A node whose own parts (libuv, OpenSSL, V8, ...) are linked in: the binary then needs only libc and libstdc++. */
function checkSelfContained() {
  const shared = Object.entries(process.config.variables).filter(([key, value]) => key.startsWith('node_shared') && value === true);
  if (shared.length > 0)
    throw new Error(
      `${process.execPath} loads shared libraries of its own (${shared.map(([key]) => key).join(', ')}): build the release with a node from nodejs.org or NodeSource`,
    );
}

// What LIEF (inside postject) says for each section whose name it cannot write back: node's build
// notes (annobin's, among others), which end up without a name in the section table. Only section
// headers lose it; the program headers the loader maps, and the blob's own note, are whole.
const NAMELESS_SECTION = /^warning: Can't find string offset for section name '\.note[\w.]*'$/;

/** postject's inject, its known-harmless warnings counted instead of printed (one line for them all, in the log). */
async function injectQuietly(binary, blob) {
  const warn = console.warn;
  let nameless = 0;
  // postject binds console.warn when inject() loads its WebAssembly module: replaced around the call.
  console.warn = (...args) => {
    if (args.length === 1 && NAMELESS_SECTION.test(String(args[0]))) nameless++;
    else warn(...args);
  };
  try {
    await inject(binary, 'NODE_SEA_BLOB', blob, { sentinelFuse: SENTINEL_FUSE });
  } finally {
    console.warn = warn;
  }
  return nameless;
}

/**
 * Builds `<out>/infiniband-exporter`; `work` is a scratch directory inside the project. Returns its
 * path and the Node.js flags its launchers pass it in NODE_OPTIONS (NODE_FLAGS of the modules it
 * was built from, src/startup/v8-flags.ts).
 */
export async function buildBinary({ work: given, out, meta, log = (message) => process.stderr.write(`${message}\n`) }) {
  // The blob and the code caches are this node's, and the binary is a copy of it: the pinned one.
  if (process.version !== pinnedVersion())
    throw new UserError(
      `the binary is built by the Node.js it ships, ${pinnedVersion()}, not ${process.version}: npm run release, or npm run bench -- --node=shipped binary`,
    );
  checkSelfContained();
  mkdirSync(given, { recursive: true });
  // Its real path: Node.js gives the modules imported from it theirs (node_modules may be a link).
  const work = realpathSync(given);
  const dist = path.join(work, 'dist');
  // The compiled modules are ES modules: a package.json says so where the project's does not reach.
  writeFileSync(path.join(work, 'package.json'), '{"type": "module"}\n');
  await run(process.execPath, [
    path.join(PROJECT, 'node_modules/typescript/bin/tsc'),
    '-p',
    path.join(PROJECT, 'tsconfig.build.json'),
    '--outDir',
    dist,
  ]);
  const standalone = { version: meta.version, revision: meta.revision };
  await bundle({ dist, entry: 'cli.js', output: 'exporter.cjs', standalone });
  await bundle({ dist, entry: 'startup/sea-main.js', output: 'sea-main.cjs', standalone });

  // The demo data (the host, the recorded fabric) where the bundle's modules look for it, beside
  // dist/: for the warm-up run here, and as the asset the binary unpacks in the same place.
  const commandLine = await import(pathToFileURL(path.join(dist, 'commands/command-line.js')).href);
  const demo = [commandLine.DEMO_DIRECTORY].map((file) => path.relative(work, file).split(path.sep).join('/'));
  for (const relative of demo) cpSync(path.join(PROJECT, relative), path.join(work, relative), { recursive: true, verbatimSymlinks: true });
  const { ASSETS, codeCacheAsset, packTree } = await import(pathToFileURL(path.join(dist, 'startup/sea-assets.js')).href);
  const { NODE_FLAGS, GLIBC_TUNABLES, chooseV8Flags } = await import(pathToFileURL(path.join(dist, 'startup/v8-flags.js')).href);
  // One code cache per set of V8 flags the exporter chooses for itself: a host's, and fabric mode's
  // (the optimizing compilers on). Each warm-up runs without NODE_OPTIONS, as the binary's V8 flags
  // are then its own alone (the unit's and image's --v8-pool-size=1 is Node.js's, not V8's).
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  const caches = {};
  for (const [mode, args] of [
    ['host', []],
    ['fabric', ['--collector.fabric']],
  ]) {
    await writeCodeCaches({ dist, main: 'sea-main.cjs', starts: [[]], args, env });
    const written = readdirSync(path.join(dist, 'code-cache'));
    if (written.length !== 1) throw new Error(`expected one code cache from the ${mode} warm-up, found ${written.length}`);
    const kept = `code-cache-${mode}.bin`;
    renameSync(path.join(dist, 'code-cache', written[0]), path.join(work, kept));
    caches[codeCacheAsset(chooseV8Flags([], { fabric: mode === 'fabric' }))] = kept;
  }

  const demoHost = path.join(work, 'demo-host.json');
  writeFileSync(demoHost, JSON.stringify(packTree(work, demo)));
  const blob = path.join(work, 'sea-prep.blob');
  // Paths relative to the work directory, whose name is random: the blob keeps the main script's.
  const config = {
    main: 'dist/sea-main.cjs',
    output: 'sea-prep.blob',
    disableExperimentalSEAWarning: true,
    useSnapshot: false,
    useCodeCache: false,
    assets: {
      [ASSETS.bundle]: 'dist/exporter.cjs',
      ...caches,
      [ASSETS.demoHost]: path.relative(work, demoHost),
    },
  };
  writeFileSync(path.join(work, 'sea-config.json'), `${JSON.stringify(config, null, 2)}\n`);
  await run(process.execPath, ['--experimental-sea-config', 'sea-config.json'], { cwd: work });

  const binary = path.join(out, meta.name);
  copyFileSync(process.execPath, binary);
  chmodSync(binary, 0o755);
  const nameless = await injectQuietly(binary, readFileSync(blob));
  if (nameless > 0)
    log(
      `postject left ${nameless} of node's note sections nameless ("Can't find string offset for section name '.note…'", LIEF): harmless, nothing reads a section's name to load or run the binary`,
    );
  // Written anew: run right after postject wrote it, the binary counted up to 11 MiB more of its
  // own file as resident than the same bytes written by cp, dpkg or install (the kernel maps the
  // page cache of that one large write in larger pieces); measured at 66 against 53 MiB.
  const copy = `${binary}.${process.pid}.tmp`;
  copyFileSync(binary, copy);
  renameSync(copy, binary);
  return { binary, nodeFlags: NODE_FLAGS, glibcTunables: GLIBC_TUNABLES };
}
