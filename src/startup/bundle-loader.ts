// Runs the program from the one-file bundle the build makes (scripts/bundle.mjs: dist/cli.js and
// every module it loads, dependencies included, in dist/exporter.cjs), compiled with V8's code
// cache when dist/code-cache holds one made by this Node.js with these V8 flags.
//
// Why: loading the program module by module cost more CPU than the exporter then spends in its
// first two minutes of scrapes: about 240 files resolved, read and compiled one by one (0.29 s of
// CPU from start to the first answer on the 8-device benchmark tree). One file saves the module
// resolution; the code cache saves compiling what start-up and a scrape run (0.19 s in all;
// docs/benchmarks.md). The cache is V8's own format, checked by V8 against its version, its flags
// and the source's length; the file name adds the bundle's size and time, so that a rebuilt bundle
// never meets an older cache, and the V8 flags the exporter set for itself (v8-flags.ts), so that
// fabric mode, which sets others, keeps a cache of its own instead of replacing a host's. The
// build writes the caches for the ways the project starts the exporter; any other way (another
// Node.js, other flags) gets its own on first use, written after the first 30 s or at exit, like
// Python's __pycache__: where dist/code-cache is writable and holds fewer than MAX_CACHES files,
// else never (the exporter then compiles as it goes, no harm done).
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, renameSync, statSync, writeFileSync, type Stats } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { constants, Script } from 'node:vm';
import { v8FlagsSet } from './v8-flags.js';

/** What became of the code cache: used, refused by V8 (other version or flags), or none found. */
export type CodeCacheUse = 'accepted' | 'rejected' | 'absent';

export interface CompiledBundle {
  script: Script;
  cache: CodeCacheUse;
  /** The cache file for this bundle, this Node.js and these flags. */
  cacheFile: string;
}

const CACHE_DIRECTORY = 'code-cache';
const MAX_CACHES = 16;
const WRITE_AFTER_MS = 30_000;
const STALE_SLACK_MS = 1000;
// CommonJS's module wrapper, on the bundle's first line so that line numbers stay the bundle's.
const WRAPPER_START = '(function (exports, require, module, __filename, __dirname) { ';
const WRAPPER_END = '\n});';

/** The cache file's name: this Node.js, its flags, the V8 flags the exporter set, and the bundle's identity. */
export function cacheName(
  bundle: Stats,
  execArgv: readonly string[] = process.execArgv,
  nodeOptions = process.env.NODE_OPTIONS ?? '',
  v8Flags: readonly string[] = v8FlagsSet() ?? [],
): string {
  const key = [
    process.version,
    process.versions.v8,
    process.arch,
    execArgv.join(' '),
    nodeOptions,
    v8Flags.join(' '),
    bundle.size,
    bundle.mtimeMs,
  ].join('\n');
  return `${createHash('sha256').update(key).digest('hex').slice(0, 16)}.bin`;
}

/** Compiles the bundle at `file`, with its cache from `<dir of file>/code-cache` when there is one. */
export function compileBundle(file: string, bundle: Stats = statSync(file)): CompiledBundle {
  const cacheFile = path.join(path.dirname(file), CACHE_DIRECTORY, cacheName(bundle));
  let cachedData: Buffer | undefined;
  try {
    cachedData = readFileSync(cacheFile);
  } catch {
    cachedData = undefined;
  }
  return { ...compileSource(readFileSync(file, 'utf8'), file, cachedData), cacheFile };
}

/** Compiles `source`, a bundle's text, as the file `filename`, with V8's code cache `cachedData` when given. */
export function compileSource(source: string, filename: string, cachedData: Buffer | undefined): Omit<CompiledBundle, 'cacheFile'> {
  const script = new Script(`${WRAPPER_START}${source.replace(/^#!.*/, '')}${WRAPPER_END}`, {
    filename,
    cachedData,
    importModuleDynamically: constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
  });
  const cache: CodeCacheUse = cachedData === undefined ? 'absent' : script.cachedDataRejected ? 'rejected' : 'accepted';
  return { script, cache };
}

/**
 * Writes the code cache of `compiled` (what V8 has compiled of it so far) to its cache file, if its
 * directory exists, is writable and holds fewer than MAX_CACHES files. Returns whether it wrote.
 */
export function saveCodeCache(compiled: CompiledBundle): boolean {
  try {
    if (readdirSync(path.dirname(compiled.cacheFile)).length >= MAX_CACHES) return false;
    const temporary = `${compiled.cacheFile}.${process.pid}.tmp`;
    writeFileSync(temporary, compiled.script.createCachedData());
    renameSync(temporary, compiled.cacheFile);
    return true;
  } catch {
    return false;
  }
}

/** Runs the compiled bundle as the CommonJS module it is. */
export function runCompiled(file: string, compiled: Pick<CompiledBundle, 'script'>): void {
  const wrapper = compiled.script.runInThisContext() as (...args: unknown[]) => void;
  const module = { exports: {} };
  wrapper.call(module.exports, module.exports, createRequire(file), module, file, path.dirname(file));
}

/**
 * Runs the bundle at `bundleUrl` and returns true; returns false, running nothing, when there is no
 * bundle or it is older than the compiled module at `modulesUrl` (tsc ran again, the bundle step
 * not): the caller then loads the modules. A second's slack, because a copy of dist/ that does not
 * keep times (cp, some image builders) writes the files a few milliseconds apart in any order, while
 * tsc takes seconds before it writes anything.
 */
export function runBundle(bundleUrl: URL, modulesUrl: URL): boolean {
  const file = fileURLToPath(bundleUrl);
  const bundle = statSync(file, { throwIfNoEntry: false });
  if (bundle === undefined) return false;
  const modules = statSync(fileURLToPath(modulesUrl), { throwIfNoEntry: false });
  if (modules !== undefined && modules.mtimeMs > bundle.mtimeMs + STALE_SLACK_MS) return false;
  const compiled = compileBundle(file, bundle);
  if (compiled.cache !== 'accepted') {
    let saved = false;
    const save = (): void => {
      if (saved) return;
      saved = true;
      saveCodeCache(compiled);
    };
    setTimeout(save, WRITE_AFTER_MS).unref();
    process.once('exit', save);
  }
  runCompiled(file, compiled);
  return true;
}
