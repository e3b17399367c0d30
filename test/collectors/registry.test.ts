// The registry is the one place collectors are listed, and a collector is one module: a collector
// added the way docs/architecture.md says (a module, one line in the list) reaches /metrics, the
// command line, the config file, `check` and its "Not checked" list, with nothing else touched.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { COUNT, collectorSwitch, flag } from '../../src/config/flags.js';
import { UsageError } from '../../src/config/errors.js';
import type { ExpositionBuffer } from '../../src/exposition/buffer.js';
import { gauge } from '../../src/exposition/metric-spec.js';
import { Samples } from '../../src/exposition/samples.js';
import { defineCollector, type Collector } from '../../src/collection/collector.js';
import { HOST_READING } from '../../src/collectors/host/host-reading.js';
import { COLLECTORS, collectorFlags } from '../../src/collectors/registry.js';
import { runCheck } from '../../src/commands/check/command.js';
import { flagSet } from '../../src/commands/command-line.js';
import { parseServeCommandLine, serveHelpText } from '../../src/commands/serve/command-line.js';
import { SERVE_FLAGS } from '../../src/commands/serve/flags.js';
import { allMetrics } from '../../src/metrics/catalog.js';
import type { Snapshot } from '../../src/model/snapshot.js';
import { exporterFromFlags } from '../support/exporter.js';
import { scrape } from '../support/exposition.js';
import { PROJECT_ROOT, ZOO, ZOO_CONFIG } from '../support/trees.js';

// A collector as a contributor would add one, following docs/architecture.md: it "reads" a
// number per device (here: a flag's value times the device's port count) in the host reading.
const PROBE_SWITCH = collectorSwitch('probe', 'probe', true, 'Read the probe of every device.');
const PROBE_GAIN = flag(COUNT, {
  name: 'probe.gain',
  key: 'probe.gain',
  default: '1',
  help: 'What every reading is multiplied by.',
  check: true,
});
const PROBE_VALUE = gauge('infiniband_test_probe_value', ['device'], 'The probe of a device.');

const PROBE: Collector<ReadonlyMap<string, number>> = defineCollector({
  name: 'probe',
  checks: 'the probe of every device',
  enabledBy: PROBE_SWITCH,
  flags: [PROBE_SWITCH, PROBE_GAIN],
  scope: 'host',
  schedule: { cycle: HOST_READING },
  onOverrun: 'keep',
  setUp: (context) => ({
    read: async (snapshot) => ({
      part: new Map(snapshot.devices.map((device) => [device.name, device.ports.length * context.settings.get(PROBE_GAIN)])),
    }),
  }),
  metrics: {
    families: [PROBE_VALUE],
    write: (snapshot: Snapshot, out: ExpositionBuffer) => {
      const samples = new Samples();
      for (const [device, value] of PROBE.of(snapshot) ?? []) samples.add(PROBE_VALUE, { device }, value);
      samples.writeTo([PROBE_VALUE], out);
    },
  },
  findings: (snapshot) =>
    [...(PROBE.of(snapshot) ?? [])]
      .filter(([, value]) => value > 100)
      .map(([device, value]) => ({
        condition: 'probe-high',
        severity: 'warning' as const,
        subject: { kind: 'host' as const },
        summary: `the probe of ${device} reads ${value}`,
        meaning: 'A test finding.',
        cause: 'A high gain.',
        remedy: 'lower --probe.gain',
        runbook: 'probe',
        alert: undefined,
      })),
  failure: { consequence: 'the probe is unknown', meaning: 'nothing', cause: 'nothing' },
});

const REGISTRY = [...COLLECTORS, PROBE];
const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

async function check(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runCheck(
    argv,
    { stdout: { write: (text: string) => (stdout += text) }, stderr: { write: (text: string) => (stderr += text) }, env: {} },
    { collectors: REGISTRY, runners: { module: 'not-installed', ethtool: 'not-installed' } },
  );
  return { code, stdout, stderr };
}

describe('a collector added through the registry', () => {
  it('reaches /metrics with its families and its own collector metrics', async () => {
    const exporter = exporterFromFlags(['--path.sysfs', ZOO, '--no-collector.diag', '--probe.gain', '3'], undefined, {
      collectors: REGISTRY,
      runners: { module: 'not-installed', ethtool: 'not-installed' },
    });
    try {
      await exporter.collectOnce();
      const text = await scrape(exporter);
      expect(text).toContain('# TYPE infiniband_test_probe_value gauge');
      expect(text).toContain('infiniband_test_probe_value{device="mlx5_0"} 3');
      expect(text).toContain('infiniband_exporter_collector_success{collector="probe"} 1');
      expect(text).toContain('infiniband_exporter_read_errors_total{collector="probe"} 0');
    } finally {
      await exporter.stop();
    }
  });

  it('is turned off by its --no-collector.<name> flag, and then serves nothing', async () => {
    const exporter = exporterFromFlags(['--path.sysfs', ZOO, '--no-collector.diag', '--no-collector.probe'], undefined, {
      collectors: REGISTRY,
      runners: { module: 'not-installed', ethtool: 'not-installed' },
    });
    try {
      await exporter.collectOnce();
      const text = await scrape(exporter);
      expect(text).not.toContain('infiniband_test_probe_value');
      expect(text).not.toContain('collector="probe"');
      expect(text).toContain('infiniband_exporter_collector_success{collector="sysfs"} 1');
    } finally {
      await exporter.stop();
    }
  });

  it('has its flags on the command line, in --help and in the config file, whose schema knows them', async () => {
    expect(serveHelpText(REGISTRY)).toMatch(/--\[no-\]collector\.probe +Read the probe of every device\. \(default: true\)/);
    expect(serveHelpText(REGISTRY)).toMatch(/--probe\.gain=<n> +What every reading is multiplied by\. \(default: 1\)/);
    const dir = await mkdtemp(path.join(tmpdir(), 'ibx-probe-'));
    dirs.push(dir);
    const good = path.join(dir, 'good.yml');
    await writeFile(good, 'probe:\n  enabled: false\n  gain: 7\n');
    const command = parseServeCommandLine(['--config.file', good], REGISTRY);
    expect(command.action === 'run' && [command.settings.get(PROBE_SWITCH), command.settings.get(PROBE_GAIN)]).toEqual([false, 7]);
    const bad = path.join(dir, 'bad.yml');
    await writeFile(bad, 'probe:\n  gian: 7\n');
    expect(() => parseServeCommandLine(['--config.file', bad], REGISTRY)).toThrow(
      new UsageError(`config file ${bad}:2: unknown key "probe.gian", expected one of: probe.enabled, probe.gain`),
    );
    // Without the collector in the registry, its flag is unknown.
    expect(() => parseServeCommandLine(['--probe.gain', '2'])).toThrow(UsageError);
  });

  it('is run by check, which judges its findings and names it in "Not checked" when it is off', async () => {
    const high = await check(['--path.sysfs', ZOO, '--config.file', ZOO_CONFIG, '--no-collector.diag', '--probe.gain', '200']);
    expect(high.stdout).toMatch(/WARNING +the probe of mlx5_0 reads 200\n/);
    expect(high.code).toBe(1);
    const off = await check(['--path.sysfs', ZOO, '--no-collector.diag', '--no-collector.probe']);
    expect(off.stdout).toContain(
      'Not checked:\n  cables and optical modules: neither mstlink nor mlxlink is installed\n  subnet manager reachability and link peers: the diag collector is off\n  the probe of every device: the probe collector is off\n',
    );
  });

  it('is in the metric catalog the README table is made from', () => {
    expect(allMetrics(REGISTRY).map((spec) => spec.name)).toContain('infiniband_test_probe_value');
  });
});

/**
 * Every TypeScript file under src/, with its comments left out, the collector each defines, and
 * where that collector's name is spelled: in its own module (`defineCollector({ name: 'x' })`), or
 * in parts.ts where other collectors read its part (`name: X_PART.name`, `X_PART = partOf<…>('x')`).
 */
function sourceFiles(): { file: string; text: string; defines?: string; spelledIn?: string }[] {
  const files = (dir: string): string[] =>
    readdirSync(dir).flatMap((name) => {
      const file = path.join(dir, name);
      return statSync(file).isDirectory() ? files(file) : file.endsWith('.ts') ? [file] : [];
    });
  const sources = files(path.join(PROJECT_ROOT, 'src')).map((file) => ({
    file: path.relative(PROJECT_ROOT, file),
    text: readFileSync(file, 'utf8').replace(/\/\/.*$|\/\*[\s\S]*?\*\//gm, ''),
  }));
  const parts = new Map<string, { name: string; file: string }>();
  for (const { file, text } of sources) {
    for (const [, constant, name] of text.matchAll(/export const (\w+)\s*=\s*partOf\s*<[^;]*?>\(\s*'(\w+)'\s*\)/g))
      parts.set(constant!, { name: name!, file });
  }
  return sources.map(({ file, text }) => {
    const literal = /=\s*defineCollector\s*(?:<[^>]*>)?\(\{\s*name:\s*'(\w+)'/.exec(text)?.[1];
    const part = parts.get(/=\s*defineCollector\s*(?:<[^>]*>)?\(\{\s*name:\s*(\w+)\.name\b/.exec(text)?.[1] ?? '');
    const defines = literal ?? part?.name;
    const spelledIn = literal !== undefined ? file : part?.file;
    return { file, text, ...(defines && { defines }), ...(spelledIn && { spelledIn }) };
  });
}

describe('the registry', () => {
  it('lists every collector a module of src/collectors/ defines, each once', () => {
    const names = COLLECTORS.map((collector) => collector.name);
    expect(new Set(names).size).toBe(names.length);
    const defined = sourceFiles().flatMap(({ file, defines }) => (defines ? [{ file, defines }] : []));
    expect(defined.length).toBeGreaterThan(0);
    for (const { file } of defined) expect(file.startsWith('src/collectors/'), file).toBe(true);
    expect(defined.map(({ defines }) => defines).sort()).toEqual([...names].sort());
  });

  it('declares each flag, config key and metric family once', () => {
    const { flags } = flagSet(SERVE_FLAGS, COLLECTORS);
    const names = flags.map((declared) => declared.name);
    expect(new Set(names).size).toBe(names.length);
    const keys = flags.flatMap((declared) => declared.key ?? []);
    expect(new Set(keys).size).toBe(keys.length);
    // Two declarations of one flag name would be two objects: the registry keeps each once.
    expect(collectorFlags(COLLECTORS).length).toBe(new Set(collectorFlags(COLLECTORS).map((declared) => declared.name)).size);
    const families = allMetrics().map((spec) => spec.name);
    expect(new Set(families).size).toBe(families.length);
  });

  it("has a module per collector, and each collector's name is spelled once in src/: in its module, or in parts.ts where others read its part", () => {
    const sources = sourceFiles();
    const SPELLED_IN = Object.fromEntries(
      sources.flatMap(({ defines, spelledIn }) => (defines && spelledIn ? [[defines, spelledIn]] : [])),
    ) as Record<string, string>;
    expect(COLLECTORS.map(({ name }) => name).sort()).toEqual(Object.keys(SPELLED_IN).sort());
    // The diag collectors share their names with the tools they run, which sources and tool groups name.
    // So does the module collector: 'module' is also the key of its tool group (module-tool.ts), shared with fabric_module.
    const TOOLS = ['smpquery', 'sminfo', 'perfquery', 'module'];
    for (const collector of COLLECTORS.filter(({ name }) => !TOOLS.includes(name))) {
      const spelled = sources
        .filter(({ text }) => text.includes(`'${collector.name}'`) || text.includes(`"${collector.name}"`))
        .map(({ file }) => file);
      expect(spelled.sort(), collector.name).toEqual([SPELLED_IN[collector.name]!].flat().sort());
    }
    for (const name of TOOLS)
      expect(
        sources.some(({ file, text }) => file === SPELLED_IN[name] && text.includes(`'${name}'`)),
        name,
      ).toBe(true);
  });
});
