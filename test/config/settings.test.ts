// The command line and the config file, as one Settings value: the contract's defaults, every
// flag and key, flags winning over the file, and one line naming the flag, file and line for each
// mistake. The flags and the file's schema come from the declarations (src/config/flags.ts).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/config-file.js';
import { parseDuration } from '../../src/config/duration.js';
import { UsageError } from '../../src/config/errors.js';
import type { Settings } from '../../src/config/flags.js';
import { parseListenAddress } from '../../src/config/listen-address.js';
import { FABRIC_EXPECTATIONS } from '../../src/collectors/fabric/ports/index.js';
import { COLLECTORS } from '../../src/collectors/registry.js';
import { EXPECTATIONS } from '../../src/collectors/host/sysfs/index.js';
import { CONFIG_FILE, DEMO, DEMO_CONFIG, DEMO_FABRIC, DEMO_SYSFS, flagSet } from '../../src/commands/command-line.js';
import { parseServeCommandLine as parseCommandLine } from '../../src/commands/serve/command-line.js';
import { SERVE_FLAGS } from '../../src/commands/serve/flags.js';
import { checkSysfsRoot } from '../../src/collectors/host/host-reading.js';
import { NO_INFINIBAND, ZOO } from '../support/trees.js';

const FLAGS = flagSet(SERVE_FLAGS, COLLECTORS);

function settings(argv: string[]): Settings {
  const command = parseCommandLine(argv);
  if (command.action !== 'run') throw new Error('not a run');
  return command.settings;
}

/** Every flag's value by its name (regular expressions as their source). */
function view(s: Settings): Record<string, unknown> {
  return Object.fromEntries(
    FLAGS.flags.map((flag) => {
      const value = s.get(flag);
      return [flag.name, value instanceof RegExp ? value.source : value];
    }),
  );
}

const parseText = (text: string, file: string) => parseConfigText(text, file, FLAGS.flags, FLAGS.sections);

function usageError(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    return (error as Error).message;
  }
  throw new Error('expected a UsageError');
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'ibx-config-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function configFile(name: string, text: string): Promise<string> {
  const file = path.join(dir, name);
  await writeFile(file, text);
  return file;
}

describe('command line', () => {
  it('has the contract defaults', () => {
    const s = settings([]);
    expect(view(s)).toEqual({
      'web.listen-address': { host: undefined, port: 10460 },
      'web.telemetry-path': '/metrics',
      'web.config.file': undefined,
      'web.max-connections': 512,
      'web.max-connections-per-client': 64,
      'web.disable-exporter-metrics': false,
      'config.file': undefined,
      'path.sysfs': '/sys',
      'collection.interval': 10_000,
      'device.include': undefined,
      'device.exclude': undefined,
      'metrics.port-state-series': false,
      'collector.ipoib': true,
      'collector.tso': true,
      'collector.pcie': true,
      'collector.module': true,
      'collector.kernel': true,
      'path.kmsg': '/dev/kmsg',
      'module.interval': 300_000,
      'mstlink.path': undefined,
      'collector.diag': true,
      'diag.interval': 30_000,
      'diag.timeout': 5_000,
      'diag.max-concurrent': 4,
      'perfquery.path': undefined,
      'sminfo.path': undefined,
      'smpquery.path': undefined,
      'collector.fabric': false,
      'fabric.interval': 60_000,
      'fabric.module-interval': 300_000,
      'fabric.discovery-interval': 600_000,
      'fabric.max-concurrent': 8,
      'fabric.node-name-map': undefined,
      'fabric.hca-ports': false,
      'fabric.shard': { index: 1, count: 1 },
      'fabric.verdict.ber': 1e-14,
      'fabric.verdict.clean-period': 126 * 60_000,
      'fabric.state-dir': '/var/lib/infiniband-exporter',
      'ibnetdiscover.path': undefined,
      'iblinkinfo.path': undefined,
      'ibqueryerrors.path': undefined,
      'saquery.path': undefined,
      'collector.host_jobs': true,
      'path.cgroup': '/sys/fs/cgroup',
      'squeue.path': undefined,
      'jobs.interval': 30_000,
      'jobs.file': undefined,
      'jobs.min-hosts': 2,
      'log.level': 'info',
      'log.format': 'json',
      demo: undefined,
    });
    expect(s.section(EXPECTATIONS)).toEqual([]);
    expect(s.section(FABRIC_EXPECTATIONS)).toEqual([]);
  });

  it('accepts every flag, in --flag value and --flag=value forms', () => {
    const s = settings([
      '--web.listen-address=127.0.0.1:9999',
      '--web.telemetry-path',
      '/ib',
      '--web.disable-exporter-metrics',
      '--web.max-connections=64',
      '--path.sysfs=/host/sys',
      '--collection.interval=1m30s',
      '--no-collector.diag',
      '--diag.interval=2m',
      '--diag.timeout=500ms',
      '--diag.max-concurrent=8',
      '--perfquery.path=/opt/bin/perfquery',
      '--sminfo.path=/x/sminfo',
      '--smpquery.path=/x/smpquery',
      '--device.include=^mlx5_',
      '--device.exclude=^mlx5_9$',
      '--log.level=debug',
      '--log.format=logfmt',
      '--metrics.port-state-series',
      '--no-collector.ipoib',
      '--no-collector.tso',
    ]);
    expect(view(s)).toMatchObject({
      'web.listen-address': { host: '127.0.0.1', port: 9999 },
      'web.telemetry-path': '/ib',
      'web.max-connections': 64,
      'web.disable-exporter-metrics': true,
      'path.sysfs': '/host/sys',
      'collection.interval': 90_000,
      'collector.diag': false,
      'diag.interval': 120_000,
      'diag.timeout': 500,
      'diag.max-concurrent': 8,
      'perfquery.path': '/opt/bin/perfquery',
      'sminfo.path': '/x/sminfo',
      'smpquery.path': '/x/smpquery',
      'log.level': 'debug',
      'log.format': 'logfmt',
      'metrics.port-state-series': true,
      'collector.ipoib': false,
      'collector.tso': false,
      'device.include': '^mlx5_',
    });
    expect(view(s)['device.exclude']).toBe('^mlx5_9$');
  });

  it.each([
    [['--bogus'], /Unknown option '--bogus' \(see --help\)/],
    [['--collection.interval=often'], /--collection.interval: "often" is not a duration such as 10s/],
    [['--collection.interval=0s'], /--collection.interval: "0s" is not a duration/],
    [['--diag.max-concurrent=0'], /--diag.max-concurrent: "0" is not a whole number of at least 1/],
    [['--web.max-connections=0'], /--web.max-connections: "0" is not a whole number of at least 1/],
    [['--device.include=(mlx5'], /--device.include: "\(mlx5" is not a valid regular expression/],
    [['--log.level=verbose'], /--log.level: "verbose" is not one of debug, info, warn, error/],
    [['--web.listen-address=10460'], /--web.listen-address: "10460" is not a listen address/],
    [['--web.telemetry-path=metrics'], /must start with "\/"/],
    [['--config.file=/nonexistent/config.yml'], /config file \/nonexistent\/config.yml: cannot be read/],
    [['--fabric.shard=0/2'], /--fabric.shard: "0\/2" is not a shard such as 1\/2/],
    [['--fabric.shard=half'], /--fabric.shard: "half" is not a shard/],
    [['--fabric.interval=soon'], /--fabric.interval: "soon" is not a duration/],
  ])('rejects %j', (argv, message) => {
    expect(usageError(() => parseCommandLine(argv))).toMatch(message);
  });

  it('answers --help and --version without running', () => {
    expect(parseCommandLine(['--help'])).toEqual({ action: 'help' });
    expect(parseCommandLine(['-h'])).toEqual({ action: 'help' });
    expect(parseCommandLine(['--version'])).toEqual({ action: 'version' });
  });

  it('demo mode serves the bundled zoo host with its config and no diag tools', () => {
    const s = settings(['--demo']);
    expect(view(s)).toMatchObject({ 'path.sysfs': DEMO_SYSFS, 'config.file': DEMO_CONFIG, 'collector.diag': false });
    expect(s.get(CONFIG_FILE)).toBe(DEMO_CONFIG);
    expect(s.section(EXPECTATIONS).length).toBeGreaterThan(0);
  });

  it('--demo is the host demo; --demo=fabric and --demo fabric the recorded fabric', () => {
    expect(settings(['--demo']).get(DEMO)).toBe('host');
    expect(settings(['--demo=host']).get(DEMO)).toBe('host');
    for (const flags of [['--demo=fabric'], ['--demo', 'fabric']]) {
      const s = settings(flags);
      expect(view(s)).toMatchObject({
        demo: 'fabric',
        'collector.fabric': true,
        'collector.diag': false,
        'fabric.topology-file': path.join(DEMO_FABRIC, 'cabling-plan'),
      });
    }
    expect(() => settings(['--demo=switch'])).toThrow(/demo/);
  });

  it.each([
    [':10460', undefined, 10460],
    ['0.0.0.0:80', '0.0.0.0', 80],
    ['[::1]:10460', '::1', 10460],
    ['localhost:1', 'localhost', 1],
  ])('parses listen address %s', (text, host, port) => {
    expect(parseListenAddress(text, 'x')).toEqual({ host, port });
  });

  it.each([
    ['10s', 10_000],
    ['1m30s', 90_000],
    ['500ms', 500],
    ['2h', 7_200_000],
  ])('parses duration %s', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });
});

describe('config file', () => {
  it('reads every section; flags win over the file', async () => {
    const file = await configFile(
      'full.yml',
      `
web: {listen_address: "127.0.0.1:1234", telemetry_path: /m, disable_exporter_metrics: true, max_connections: 32}
path: {sysfs: /host/sys}
collection: {interval: 5s}
diag: {enabled: false, interval: 1m, timeout: 2s, max_concurrent: 2, perfquery_path: /p}
devices: {include: "^mlx5_", exclude: "^mlx5_(8|9)$"}
metrics: {port_state_series: true}
expectations:
  - device: "mlx5_*"
    port: 1
    width: 4
    speed: ndr
  - {device: "mlx4_?", speed: QDR}
log: {level: warn, format: logfmt}
`,
    );
    const s = settings(['--config.file', file, '--collection.interval=7s']);
    expect(view(s)).toMatchObject({
      'web.listen-address': { host: '127.0.0.1', port: 1234 },
      'web.telemetry-path': '/m',
      'web.max-connections': 32,
      'web.disable-exporter-metrics': true,
      'path.sysfs': '/host/sys',
      'collection.interval': 7_000,
      'collector.diag': false,
      'diag.interval': 60_000,
      'diag.timeout': 2_000,
      'diag.max-concurrent': 2,
      'perfquery.path': '/p',
      'log.level': 'warn',
      'log.format': 'logfmt',
      'metrics.port-state-series': true,
      'device.include': '^mlx5_',
      'device.exclude': '^mlx5_(8|9)$',
    });
    expect(s.section(EXPECTATIONS)).toEqual([
      { device: 'mlx5_*', port: 1, width: 4, speed: 'NDR' },
      { device: 'mlx4_?', port: undefined, width: undefined, speed: 'QDR' },
    ]);
    expect(view(settings(['--config.file', file, '--collector.diag']))['collector.diag']).toBe(true);
  });

  it('reads the fabric section: every flag of fabric mode and the fabric expectations', async () => {
    const map = await configFile('node-name-map', '0x0002c90200410000 "spine-1"\n');
    const file = await configFile(
      'fabric.yml',
      `
fabric:
  enabled: true
  interval: 30s
  discovery_interval: 5m
  max_concurrent: 4
  node_name_map: ${map}
  hca_ports: true
  shard: 2/3
  ibnetdiscover_path: /opt/ibnetdiscover
  iblinkinfo_path: /opt/iblinkinfo
  ibqueryerrors_path: /opt/ibqueryerrors
  saquery_path: /opt/saquery
  expectations:
    - node: "leaf-*"
      ports: [19, 20]
      width: 4
      speed: edr
    - {node: "spine-?", width: 4}
`,
    );
    const s = settings(['--config.file', file, '--fabric.max-concurrent=6']);
    expect(view(s)).toMatchObject({
      'collector.fabric': true,
      'fabric.interval': 30_000,
      'fabric.discovery-interval': 300_000,
      'fabric.max-concurrent': 6,
      'fabric.node-name-map': map,
      'fabric.hca-ports': true,
      'fabric.shard': { index: 2, count: 3 },
      'ibnetdiscover.path': '/opt/ibnetdiscover',
      'iblinkinfo.path': '/opt/iblinkinfo',
      'ibqueryerrors.path': '/opt/ibqueryerrors',
      'saquery.path': '/opt/saquery',
    });
    expect(s.section(FABRIC_EXPECTATIONS)).toEqual([
      { node: 'leaf-*', ports: [19, 20], width: 4, speed: 'EDR' },
      { node: 'spine-?', ports: undefined, width: 4, speed: undefined },
    ]);
    expect(view(settings(['--config.file', file, '--no-collector.fabric']))['collector.fabric']).toBe(false);
  });

  it('checks the node-name-map at start, naming the line the tools would reject', async () => {
    const bad = await configFile('bad-map', '# ok\n0x1 "a"\nleaf-1 0x2\n');
    expect(usageError(() => parseCommandLine(['--fabric.node-name-map', bad]))).toBe(
      `node-name-map ${bad}:3: expected a GUID then a name in quotes (0x0002c90200400000 "leaf-1"), got "leaf-1 0x2"`,
    );
    expect(usageError(() => parseCommandLine(['--fabric.node-name-map', '/nonexistent/map']))).toMatch(
      /^--fabric.node-name-map: \/nonexistent\/map cannot be read/,
    );
  });

  it('accepts an empty file', () => {
    expect(parseText('', 'empty.yml')).toEqual({ values: new Map(), sections: new Map(), places: new Map() });
    expect(parseText('# only a comment\n', 'c.yml')).toEqual({ values: new Map(), sections: new Map(), places: new Map() });
  });

  it.each([
    ['collection:\n  intervall: 10s\n', 'c.yml:2: unknown key "collection.intervall", expected one of: collection.interval'],
    ['colection: {interval: 10s}\n', 'c.yml:1: unknown section "colection"'],
    ['diag:\n  enabled: yes please\n', 'c.yml:2: "diag.enabled" must be true or false, got "yes please"'],
    ['diag:\n  max_concurrent: -1\n', 'c.yml:2: "diag.max_concurrent" must be a whole number of at least 1, got -1'],
    ['devices:\n  include: "(mlx5"\n', 'c.yml:2: "devices.include" must be a valid regular expression'],
    ['collection:\n  interval: 10\n', 'c.yml:2: "collection.interval" must be a duration such as 10s, 1m or 500ms, got 10'],
    ['log: json\n', 'c.yml:1: section "log" must be a mapping of level, format, got "json"'],
    ['expectations:\n  - device: mlx5_0\n    width: 3\n', 'c.yml:3: "width" must be a lane count, one of 1, 2, 4, 8, 12, got 3'],
    [
      'expectations:\n  - device: mlx5_0\n    speed: QDR2\n',
      'c.yml:3: "speed" must be one of SDR DDR QDR FDR10 FDR EDR HDR NDR XDR, got "QDR2"',
    ],
    ['expectations:\n  - device: mlx5_0\n    port: 1\n', 'c.yml:2: the expectation for "mlx5_0" needs "width" and/or "speed"'],
    ['expectations:\n  - width: 4\n', 'c.yml:2: an expectation needs "device"'],
    ['expectations:\n  - device: mlx5_0\n    lanes: 4\n', 'c.yml:3: unknown key "lanes" in an expectation'],
    ['web: {listen_address: ":1", listen_address: ":2"}\n', 'c.yml:1: not valid YAML: Map keys must be unique'],
    ['web: [unclosed\n', 'c.yml:2: not valid YAML'],
    ['- just\n- a list\n', 'c.yml:1: expected a mapping of sections'],
    ['fabric:\n  shard: 3/2\n', 'c.yml:2: "fabric.shard" must be a shard such as 1/2'],
    ['fabric:\n  intervall: 60s\n', 'c.yml:2: unknown key "fabric.intervall", expected one of: fabric.enabled, fabric.interval'],
    [
      'fabric:\n  expectations:\n    - node: "leaf-*"\n      ports: [0]\n      width: 4\n',
      'c.yml:4: "ports" must be a list of port numbers 1–255 such as [1, 2], got a list',
    ],
    ['fabric:\n  expectations:\n    - node: "leaf-*"\n      ports: 5\n      width: 4\n', 'c.yml:4: "ports" must be a list of port numbers'],
    ['fabric:\n  expectations:\n    - node: "leaf-*"\n      width: 3\n', 'c.yml:4: "width" must be a lane count'],
    [
      'fabric:\n  expectations:\n    - node: "leaf-*"\n      ports: [1]\n',
      'c.yml:3: the fabric expectation for "leaf-*" needs "width" and/or "speed"',
    ],
    ['fabric:\n  expectations:\n    - width: 4\n', 'c.yml:3: a fabric expectation needs "node"'],
    [
      'fabric:\n  expectations:\n    - device: "mlx5_*"\n      width: 4\n',
      'c.yml:3: unknown key "device" in a fabric expectation, expected one of: node, ports, width, speed',
    ],
    ['fabric:\n  expectations: {node: x}\n', 'c.yml:2: "fabric.expectations" must be a list of {node, ports, width, speed}'],
  ])('rejects %j naming file, line and expectation', (text, message) => {
    expect(usageError(() => parseText(text, 'c.yml'))).toContain(`config file ${message}`);
  });
});

describe('the sysfs root (checked by serve and check at start)', () => {
  const expected = 'expected the directory where sysfs is mounted (/sys, or /host/sys in a container)';
  const check = (argv: string[]) => () => checkSysfsRoot(settings(argv));

  it('takes a sysfs mount, with or without InfiniBand in it', () => {
    expect(check(['--path.sysfs', ZOO])).not.toThrow();
    // A host whose InfiniBand stack is not loaded: class/ without class/infiniband. Served as such.
    expect(check(['--path.sysfs', NO_INFINIBAND])).not.toThrow();
    expect(check(['--demo'])).not.toThrow();
  });

  it.each([
    ['a path that does not exist', () => '/nonexistent/sys', 'does not exist'],
    ['a path through a file', () => path.join(ZOO, 'class/infiniband/mlx5_0/node_type/x'), 'does not exist'],
    ['a file', () => path.join(ZOO, 'class/infiniband/mlx5_0/node_type'), 'is not a directory'],
    [
      'a directory that is not a sysfs mount (the class directory itself)',
      () => path.join(ZOO, 'class/infiniband'),
      'has no class/ directory: it is not a sysfs mount',
    ],
  ])('rejects %s, naming the flag and the path', (_name, root, problem) => {
    expect(usageError(check(['--path.sysfs', root()]))).toBe(`--path.sysfs: ${root()} ${problem}; ${expected}`);
  });

  it('names the config file and line when the path came from it; the flag when it wins', async () => {
    const file = await configFile('sysfs.yml', 'collection:\n  interval: 10s\npath:\n  sysfs: /host/sys\n');
    expect(usageError(check(['--config.file', file]))).toBe(`config file ${file}:4: "path.sysfs": /host/sys does not exist; ${expected}`);
    expect(usageError(check(['--config.file', file, '--path.sysfs', '/elsewhere']))).toBe(
      `--path.sysfs: /elsewhere does not exist; ${expected}`,
    );
    expect(check(['--config.file', file, '--path.sysfs', ZOO])).not.toThrow();
  });
});
