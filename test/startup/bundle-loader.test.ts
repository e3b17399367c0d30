// The loader of the build's bundle: V8's code cache made, found, refused; the bundle run as a
// CommonJS module; the modules used instead of a bundle that is missing or older than they are.
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cacheName, compileBundle, runBundle, runCompiled, saveCodeCache } from '../../src/startup/bundle-loader.js';

// A bundle as esbuild writes one: CommonJS, a shebang line, require() of a built-in module. Each
// test's has its own token: V8 keeps what it compiled per source, and a source it has compiled
// before never reaches the code cache at all.
let token = 0;
const source = (n: number) => `#!/usr/bin/env node
// ${String(++token).padStart(6, '0')}
const { sep } = require('node:path');
function square(n) { return n * n; }
globalThis.bundleRuns = [...(globalThis.bundleRuns ?? []), { sep, square: square(${n}), file: __filename, dir: __dirname, exportsIsThis: this === module.exports }];
`;

declare global {
  // eslint-disable-next-line no-var
  var bundleRuns: { sep: string; square: number; file: string; dir: string; exportsIsThis: boolean }[] | undefined;
}

const BUNDLE_TIME = 1_000_000; // seconds: a whole number that utimes() sets exactly
let dir: string;
let file: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'ibx-bundle-'));
  file = path.join(dir, 'exporter.cjs');
  writeFileSync(file, source(7));
  utimesSync(file, BUNDLE_TIME, BUNDLE_TIME);
  globalThis.bundleRuns = [];
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** Writes a new source of the same length and time over the bundle: same cache name, new to V8. */
function rewriteKeepingName(n: number): void {
  writeFileSync(file, source(n));
  utimesSync(file, BUNDLE_TIME, BUNDLE_TIME);
}

describe('compileBundle and saveCodeCache', () => {
  it('compiles without a cache, writes one only into an existing code-cache directory, and V8 runs it the next time', () => {
    const first = compileBundle(file);
    expect(first.cache).toBe('absent');
    expect(saveCodeCache(first)).toBe(false);
    mkdirSync(path.join(dir, 'code-cache'));
    expect(saveCodeCache(first)).toBe(true);
    expect(readdirSync(path.join(dir, 'code-cache'))).toEqual([path.basename(first.cacheFile)]);
    // Proof that V8 runs the cache's code, not the file's: it checks no more of the source than
    // its length, so a file of the same length and time (hence the same cache name) that squares 8
    // still squares 7. The cache name carries the bundle's time for this reason.
    rewriteKeepingName(8);
    const second = compileBundle(file);
    expect(second.cacheFile).toBe(first.cacheFile);
    expect(second.cache).toBe('accepted');
    runCompiled(file, second);
    expect(globalThis.bundleRuns).toEqual([{ sep: path.sep, square: 49, file, dir, exportsIsThis: true }]);
    // Without the cache, the file's own code.
    rmSync(first.cacheFile);
    const third = compileBundle(file);
    expect(third.cache).toBe('absent');
  });

  it('runs the bundle as it is when V8 refuses the cache file', () => {
    mkdirSync(path.join(dir, 'code-cache'));
    const { cacheFile } = compileBundle(file);
    writeFileSync(cacheFile, 'not a code cache');
    rewriteKeepingName(7);
    const compiled = compileBundle(file);
    expect(compiled.cache).toBe('rejected');
    runCompiled(file, compiled);
    expect(globalThis.bundleRuns?.map((run) => run.square)).toEqual([49]);
  });

  it('never writes more than 16 cache files', () => {
    mkdirSync(path.join(dir, 'code-cache'));
    for (let i = 0; i < 16; i++) writeFileSync(path.join(dir, 'code-cache', `other-${i}.bin`), '');
    expect(saveCodeCache(compileBundle(file))).toBe(false);
    expect(readdirSync(path.join(dir, 'code-cache'))).toHaveLength(16);
  });

  it('names the cache by the bundle (size, time), the way Node.js was started and the V8 flags the exporter set', () => {
    const stats = statSync(file);
    const name = cacheName(stats, [], '');
    expect(name).toMatch(/^[0-9a-f]{16}\.bin$/);
    expect(cacheName(stats, [], '')).toBe(name);
    expect(cacheName({ ...stats, size: stats.size + 1 } as typeof stats, [], '')).not.toBe(name);
    expect(cacheName({ ...stats, mtimeMs: stats.mtimeMs + 1 } as typeof stats, [], '')).not.toBe(name);
    expect(cacheName(stats, ['--max-semi-space-size=1'], '')).not.toBe(name);
    expect(cacheName(stats, [], '--max-old-space-size=200')).not.toBe(name);
    expect(cacheName(stats, [], '', ['--no-opt'])).not.toBe(cacheName(stats, [], '', []));
  });
});

describe('runBundle', () => {
  const modules = () => path.join(dir, 'cli.js');
  const setTime = (target: string, seconds: number) => utimesSync(target, seconds, seconds);

  it('runs a bundle newer than the modules, older by less than a second (a copy of dist/), or alone', () => {
    writeFileSync(modules(), '');
    setTime(modules(), 1_000_000);
    setTime(file, 1_000_001);
    expect(runBundle(pathToFileURL(file), pathToFileURL(modules()))).toBe(true);
    setTime(modules(), 1_000_001.5);
    expect(runBundle(pathToFileURL(file), pathToFileURL(modules()))).toBe(true);
    // Without the modules (a dist/ that ships only the bundle), the bundle all the same.
    expect(runBundle(pathToFileURL(file), pathToFileURL(path.join(dir, 'absent.js')))).toBe(true);
    expect(globalThis.bundleRuns).toHaveLength(3);
  });

  it('leaves the modules to the caller when the bundle is missing or older than they are (tsc ran again)', () => {
    writeFileSync(modules(), '');
    setTime(file, 1_000_000);
    setTime(modules(), 1_000_002);
    expect(runBundle(pathToFileURL(file), pathToFileURL(modules()))).toBe(false);
    expect(runBundle(pathToFileURL(path.join(dir, 'missing.cjs')), pathToFileURL(modules()))).toBe(false);
    expect(globalThis.bundleRuns).toEqual([]);
  });
});
