// The build's bundle step (scripts/bundle.mjs) on a copy of dist/: the bundle serves and checks the
// demo host as the modules do, and the code caches the build writes are ones V8 takes for the ways
// the project starts the exporter (plain node, and the flags of npm start, systemd and Docker).
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NODE_FLAGS } from '../../src/startup/v8-flags.js';
import { buildOnce, PROJECT } from '../support/built.js';
import { demoMetrics, servedMetrics } from '../support/demo-metrics.js';

let root: string;
let dist: string;
let probe: string;
/** The caches the bundle step wrote, by file name (later tests start the exporter in other ways). */
let built: Map<string, Buffer>;
const caches = () => readdirSync(path.join(dist, 'code-cache'));

beforeAll(() => {
  buildOnce();
  // A package of its own: dist/ copied, the rest linked, so that other test files building the
  // project's dist/ meanwhile cannot touch it.
  root = mkdtempSync(path.join(tmpdir(), 'ibx-bundle-build-'));
  dist = path.join(root, 'dist');
  cpSync(path.join(PROJECT, 'dist'), dist, { recursive: true });
  for (const shared of ['node_modules', 'package.json', 'test', 'demo']) symlinkSync(path.join(PROJECT, shared), path.join(root, shared));
  execFileSync(process.execPath, [path.join(PROJECT, 'scripts/bundle.mjs'), `--dist=${dist}`], { stdio: 'inherit', timeout: 100_000 });
  built = new Map(caches().map((name) => [name, readFileSync(path.join(dist, 'code-cache', name))]));
  // Compiles the bundle as dist/main.js does, after the same V8 flags, and says what became of the cache.
  probe = path.join(root, 'probe.mjs');
  writeFileSync(
    probe,
    `import './dist/startup/set-v8-flags.js';\nimport { compileBundle } from './dist/startup/bundle-loader.js';\nprocess.stdout.write(compileBundle(${JSON.stringify(path.join(dist, 'exporter.cjs'))}).cache);\n`,
  );
}, 120_000);
afterAll(() => rmSync(root, { recursive: true, force: true }));

// What does not depend on when and how long: the hosts' series, not the process's or the timings.
const facts = (body: string) =>
  body.split('\n').filter((line) => /^infiniband_(device|port|link|ipoib|subnet)/.test(line) && !/_seconds/.test(line));

describe('the bundle (dist/exporter.cjs) that dist/main.js runs', () => {
  it('holds the program and its dependencies in one file', () => {
    const files = readdirSync(dist);
    expect(files).toContain('exporter.cjs');
    expect(files).toContain('exporter.cjs.map');
  });

  it('serves the same host series as the modules (dist/cli.js)', async () => {
    const [bundled, modules] = [
      await demoMetrics([path.join(dist, 'main.js')], root),
      await demoMetrics([path.join(dist, 'cli.js')], root),
    ];
    expect(facts(bundled).length).toBeGreaterThan(100);
    expect(facts(bundled)).toEqual(facts(modules));
  });

  it('loads fabric mode on demand inside the bundle', async () => {
    // No subnet manager to ask here: what matters is that the fabric loops were loaded and ran.
    // A sysfs root without InfiniBand: class/ with nothing in it.
    const empty = path.join(root, 'no-devices');
    mkdirSync(path.join(empty, 'class'), { recursive: true });
    const fabric = (body: string) =>
      body.split('\n').filter((line) => line.startsWith('infiniband_exporter_collector_success{collector="fabric_'));
    const body = await servedMetrics(
      [path.join(dist, 'main.js'), '--collector.fabric', '--no-collector.diag', `--path.sysfs=${empty}`],
      root,
      (text) => fabric(text).length === 3,
    );
    // In the registry's order, whichever cycle ended first.
    expect(fabric(body).map((line) => line.replace(/\} .*/, '}'))).toEqual(
      ['discovery', 'ports', 'sa', 'verdict'].map((name) => `infiniband_exporter_collector_success{collector="fabric_${name}"}`),
    );
  });

  it('runs the check command as the modules do (loaded on demand inside the bundle)', () => {
    const check = (entry: string) =>
      spawnSync(process.execPath, [path.join(dist, entry), 'check', '--demo', '--format=json'], {
        cwd: root,
        encoding: 'utf8',
        timeout: 30_000,
      });
    const [bundled, modules] = [check('main.js'), check('cli.js')];
    expect(bundled.status).toBe(modules.status);
    const findings = (stdout: string) => (JSON.parse(stdout) as { findings: unknown[] }).findings;
    expect(findings(bundled.stdout).length).toBeGreaterThan(3);
    expect(findings(bundled.stdout)).toEqual(findings(modules.stdout));
  });
});

describe('the code caches the build writes (dist/code-cache)', () => {
  it('are taken by V8 for plain node and for the flags of npm start, systemd and Docker', () => {
    expect(built.size).toBe(2);
    for (const flags of [[], NODE_FLAGS]) {
      const result = spawnSync(process.execPath, [...flags, probe], { cwd: root, encoding: 'utf8', timeout: 30_000 });
      expect(result.stderr, flags.join(' ')).toBe('');
      expect(result.stdout, flags.join(' ')).toBe('accepted');
    }
  });

  it('gain one for another way of starting it, written by the exporter at its exit, which V8 then takes', () => {
    const flags = ['--max-old-space-size=300'];
    const before = caches().length;
    const version = spawnSync(process.execPath, [...flags, path.join(dist, 'main.js'), '--version'], {
      cwd: root,
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(version.stdout).toMatch(/^infiniband-exporter \d/);
    expect(caches()).toHaveLength(before + 1);
    const taken = spawnSync(process.execPath, [...flags, probe], { cwd: root, encoding: 'utf8', timeout: 30_000 });
    expect(taken.stdout).toBe('accepted');
  });

  it("keep one for fabric mode, whose V8 flags differ, beside the host's, which it leaves alone", () => {
    const version = spawnSync(process.execPath, [path.join(dist, 'main.js'), '--collector.fabric', '--version'], {
      cwd: root,
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(version.stdout).toMatch(/^infiniband-exporter \d/);
    for (const [name, bytes] of built) expect(readFileSync(path.join(dist, 'code-cache', name)).equals(bytes), name).toBe(true);
    const starts: [readonly string[], string[]][] = [
      [[], []],
      [NODE_FLAGS, []],
      [[], ['--collector.fabric']],
    ];
    for (const [flags, args] of starts) {
      const taken = spawnSync(process.execPath, [...flags, probe, ...args], { cwd: root, encoding: 'utf8', timeout: 30_000 });
      expect(taken.stdout, [...flags, ...args].join(' ')).toBe('accepted');
    }
  });
});
