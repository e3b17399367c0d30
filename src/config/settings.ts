// Command line and config file merged into one Settings value. Flags win over the file; the file
// wins over defaults. Every flag has the node_exporter-style dotted name of DESIGN.md.
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import type { DeviceFilter } from '../sources/device-filter.js';
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { parseNodeNameMap } from './node-name-map.js';
import { loadConfigFile, parseShard, validateScalar, type ExpectationRule, type FabricExpectationRule, LOG_FORMATS, LOG_LEVELS } from './config-file.js';
import { parseDuration } from './duration.js';
import { UsageError } from './errors.js';
import { parseListenAddress, type ListenAddress } from './listen-address.js';

type FlagType = 'string' | 'boolean' | 'duration' | 'integer' | 'regex' | 'level' | 'format' | 'shard';

interface FlagSpec {
  name: string;
  type: FlagType;
  default: string | boolean | undefined;
  help: string;
}

export const FLAGS: readonly FlagSpec[] = [
  { name: 'web.listen-address', type: 'string', default: ':10460', help: 'Address to serve on, host:port (":10460" = every interface).' },
  { name: 'web.telemetry-path', type: 'string', default: '/metrics', help: 'Path under which metrics are served.' },
  { name: 'web.config.file', type: 'string', default: undefined, help: 'exporter-toolkit web config (tls_server_config, basic_auth_users).' },
  { name: 'web.disable-exporter-metrics', type: 'boolean', default: false, help: 'Leave out the process_* and nodejs_* metrics of the exporter itself.' },
  { name: 'path.sysfs', type: 'string', default: '/sys', help: 'sysfs mount point (/host/sys in a container).' },
  { name: 'config.file', type: 'string', default: undefined, help: 'YAML config file: expectations, filters, intervals (flags win over it).' },
  { name: 'collection.interval', type: 'duration', default: '10s', help: 'How often sysfs and IPoIB are read.' },
  { name: 'collector.diag', type: 'boolean', default: true, help: 'Query perfquery, sminfo and smpquery (--no-collector.diag turns it off).' },
  { name: 'diag.interval', type: 'duration', default: '30s', help: 'How often the infiniband-diags tools run.' },
  { name: 'diag.timeout', type: 'duration', default: '5s', help: 'Time limit of one infiniband-diags command; its process tree is killed after it.' },
  { name: 'diag.max-concurrent', type: 'integer', default: '4', help: 'infiniband-diags commands run at once.' },
  { name: 'perfquery.path', type: 'string', default: undefined, help: 'perfquery executable (default: found on PATH).' },
  { name: 'sminfo.path', type: 'string', default: undefined, help: 'sminfo executable (default: found on PATH).' },
  { name: 'smpquery.path', type: 'string', default: undefined, help: 'smpquery executable (default: found on PATH).' },
  { name: 'collector.fabric', type: 'boolean', default: false, help: 'Fabric mode: every switch port, link, subnet manager and multicast group of the subnet, from this host (run it on one or two hosts per subnet, e.g. the subnet manager hosts).' },
  { name: 'fabric.interval', type: 'duration', default: '60s', help: 'How often fabric mode reads the state and PMA counters of every switch port, and the subnet administrator\'s records.' },
  { name: 'fabric.discovery-interval', type: 'duration', default: '10m', help: 'How often fabric mode discovers the topology (ibnetdiscover); also at start, and early when the fabric changed.' },
  { name: 'fabric.max-concurrent', type: 'integer', default: '8', help: 'Fabric-mode commands run at once (each bounded by --diag.timeout).' },
  { name: 'fabric.node-name-map', type: 'string', default: undefined, help: 'node-name-map file (infiniband-diags/opensm format: 0xGUID "name" per line) naming fabric nodes.' },
  { name: 'fabric.hca-ports', type: 'boolean', default: false, help: 'Fabric mode also reads CA ports (for hosts that run no exporter of their own).' },
  { name: 'fabric.shard', type: 'shard', default: '1/1', help: 'i/n: read only the nodes whose GUID hashes to shard i of n, so that n instances split a fabric.' },
  { name: 'ibnetdiscover.path', type: 'string', default: undefined, help: 'ibnetdiscover executable (default: found on PATH).' },
  { name: 'iblinkinfo.path', type: 'string', default: undefined, help: 'iblinkinfo executable (default: found on PATH).' },
  { name: 'ibqueryerrors.path', type: 'string', default: undefined, help: 'ibqueryerrors executable (default: found on PATH).' },
  { name: 'saquery.path', type: 'string', default: undefined, help: 'saquery executable (default: found on PATH).' },
  { name: 'device.include', type: 'regex', default: undefined, help: 'Only devices whose name matches this regular expression.' },
  { name: 'device.exclude', type: 'regex', default: undefined, help: 'Skip devices whose name matches this regular expression (never read).' },
  { name: 'metrics.port-state-series', type: 'boolean', default: false, help: 'Also serve infiniband_port_state{state} and infiniband_port_physical_state{state}, one series per state name (13 per port; the _id gauges carry the same).' },
  { name: 'log.level', type: 'level', default: 'info', help: `Log level: ${LOG_LEVELS.join(', ')}.` },
  { name: 'log.format', type: 'format', default: 'json', help: `Log format: ${LOG_FORMATS.join(', ')}.` },
  { name: 'demo', type: 'boolean', default: false, help: 'Serve the bundled fixture host (test/fixtures/sys/zoo) instead of /sys.' },
];

export interface Settings {
  listen: ListenAddress;
  listenAddress: string;
  telemetryPath: string;
  webConfigFile: string | undefined;
  disableExporterMetrics: boolean;
  sysfsPath: string;
  /** Where `sysfsPath` was set, as an error message names it: the flag, or the config file and line. */
  sysfsFrom: string;
  configFile: string | undefined;
  collectionIntervalMs: number;
  diag: {
    enabled: boolean;
    intervalMs: number;
    timeoutMs: number;
    maxConcurrent: number;
    paths: { perfquery: string | undefined; sminfo: string | undefined; smpquery: string | undefined };
  };
  fabric: FabricSettings;
  devices: DeviceFilter;
  /** Serve the one-hot state families as well as the _id gauges. */
  portStateSeries: boolean;
  expectations: readonly ExpectationRule[];
  log: { level: (typeof LOG_LEVELS)[number]; format: (typeof LOG_FORMATS)[number] };
  demo: boolean;
}

export interface FabricSettings {
  enabled: boolean;
  intervalMs: number;
  discoveryIntervalMs: number;
  maxConcurrent: number;
  /** The node-name-map file; checked at start, read again at each discovery. */
  nodeNameMap: string | undefined;
  hcaPorts: boolean;
  shard: { index: number; count: number };
  /** sminfo's is `diag.paths.sminfo`. */
  paths: { ibnetdiscover: string | undefined; iblinkinfo: string | undefined; ibqueryerrors: string | undefined; saquery: string | undefined };
  expectations: readonly FabricExpectationRule[];
}

export type CommandLine = { action: 'help' } | { action: 'version' } | { action: 'run'; settings: Settings };

export const CHECK_FORMATS = ['text', 'json'] as const;
export type CheckFormat = (typeof CHECK_FORMATS)[number];

/** `infiniband-exporter check [flags]`: the server's flags and config file, plus --format. */
export type CheckCommandLine = { action: 'help' } | { action: 'check'; settings: Settings; format: CheckFormat };

/** The bundled demo host and its config, shipped in the package. */
export const DEMO_SYSFS = fileURLToPath(new URL('../../test/fixtures/sys/zoo', import.meta.url));
export const DEMO_CONFIG = fileURLToPath(new URL('../../test/fixtures/config/zoo.yml', import.meta.url));

type FlagValues = Record<string, string | boolean | undefined>;

/** The flags of FLAGS plus `extra`, strictly: an unknown flag or a positional argument is a usage error. */
function parseFlags(argv: readonly string[], extra: Record<string, { type: 'string' | 'boolean'; short?: string }>): FlagValues {
  const options: Record<string, { type: 'string' | 'boolean'; short?: string }> = { help: { type: 'boolean', short: 'h' }, ...extra };
  for (const flag of FLAGS) options[flag.name] = { type: flag.type === 'boolean' ? 'boolean' : 'string' };
  try {
    return parseArgs({ args: [...argv], options, strict: true, allowPositionals: false, allowNegative: true }).values as FlagValues;
  } catch (error) {
    throw new UsageError(`${(error as Error).message.replace(/\. To specify.*$/s, '')} (see --help)`);
  }
}

export function parseCommandLine(argv: readonly string[]): CommandLine {
  const values = parseFlags(argv, { version: { type: 'boolean' } });
  if (values.help) return { action: 'help' };
  if (values.version) return { action: 'version' };
  return { action: 'run', settings: settingsFromFlags(values) };
}

export function parseCheckCommandLine(argv: readonly string[]): CheckCommandLine {
  const values = parseFlags(argv, { format: { type: 'string' } });
  if (values.help) return { action: 'help' };
  const format = (values.format ?? 'text') as string;
  if (!(CHECK_FORMATS as readonly string[]).includes(format)) throw new UsageError(`--format: "${format}" is not ${CHECK_FORMATS.join(' or ')}`);
  return { action: 'check', settings: settingsFromFlags(values), format: format as CheckFormat };
}

/** Merge the flags with the config file they name (flags win) and the defaults into Settings. */
function settingsFromFlags(values: FlagValues): Settings {
  const fromFlags = new Map<string, string | boolean>();
  for (const flag of FLAGS) {
    const value = values[flag.name];
    if (value === undefined) continue;
    if (typeof value === 'string') {
      const checked = validateScalar(flag.type, flag.type === 'integer' ? Number(value) : value);
      if (!checked.ok) throw new UsageError(`--${flag.name}: "${value}" is not ${checked.expected}`);
    }
    fromFlags.set(flag.name, value);
  }

  const demo = fromFlags.get('demo') === true;
  const configFile = (fromFlags.get('config.file') as string | undefined) ?? (demo ? DEMO_CONFIG : undefined);
  const file = configFile === undefined ? undefined : loadConfigFile(configFile);
  const pick = (name: string): string | boolean | undefined =>
    fromFlags.get(name) ?? file?.values.get(name) ?? FLAGS.find((flag) => flag.name === name)?.default;
  const str = (name: string): string | undefined => pick(name) as string | undefined;
  const ms = (name: string): number => parseDuration(str(name)!)!;
  const regex = (name: string): RegExp | undefined => {
    const source = str(name);
    return source === undefined ? undefined : new RegExp(source);
  };

  const listenAddress = str('web.listen-address')!;
  const telemetryPath = str('web.telemetry-path')!;
  if (!telemetryPath.startsWith('/') || ['/healthz', '/ready'].includes(telemetryPath)) {
    throw new UsageError(`--web.telemetry-path: "${telemetryPath}" must start with "/" and must not be /healthz or /ready`);
  }
  return {
    listen: parseListenAddress(listenAddress, '--web.listen-address'),
    listenAddress,
    telemetryPath,
    webConfigFile: str('web.config.file'),
    disableExporterMetrics: pick('web.disable-exporter-metrics') === true,
    sysfsPath: demo && !fromFlags.has('path.sysfs') ? DEMO_SYSFS : str('path.sysfs')!,
    sysfsFrom: fromFlags.has('path.sysfs') || !file?.values.has('path.sysfs')
      ? '--path.sysfs'
      : `config file ${configFile}:${file.lines.get('path.sysfs') ?? '?'}: "path.sysfs"`,
    configFile,
    collectionIntervalMs: ms('collection.interval'),
    diag: {
      enabled: pick('collector.diag') === true && !demo,
      intervalMs: ms('diag.interval'),
      timeoutMs: ms('diag.timeout'),
      maxConcurrent: Number(str('diag.max-concurrent')),
      paths: { perfquery: str('perfquery.path'), sminfo: str('sminfo.path'), smpquery: str('smpquery.path') },
    },
    fabric: {
      enabled: pick('collector.fabric') === true,
      intervalMs: ms('fabric.interval'),
      discoveryIntervalMs: ms('fabric.discovery-interval'),
      maxConcurrent: Number(str('fabric.max-concurrent')),
      nodeNameMap: checkedNodeNameMap(str('fabric.node-name-map')),
      hcaPorts: pick('fabric.hca-ports') === true,
      shard: parseShard(str('fabric.shard')!)!,
      paths: { ibnetdiscover: str('ibnetdiscover.path'), iblinkinfo: str('iblinkinfo.path'), ibqueryerrors: str('ibqueryerrors.path'), saquery: str('saquery.path') },
      expectations: file?.fabricExpectations ?? [],
    },
    devices: { include: regex('device.include'), exclude: regex('device.exclude') },
    portStateSeries: pick('metrics.port-state-series') === true,
    expectations: file?.expectations ?? [],
    log: { level: str('log.level') as Settings['log']['level'], format: str('log.format') as Settings['log']['format'] },
    demo,
  };
}

function flagName(flag: FlagSpec): string {
  // A flag that is on by default is turned off with its --no- form.
  return flag.type === 'boolean' ? (flag.default === true ? `--[no-]${flag.name}` : `--${flag.name}`) : `--${flag.name}=<${flag.type === 'integer' ? 'n' : flag.type}>`;
}

/** Help columns line up on the longest flag name of the whole list. */
const HELP_WIDTH = Math.max(...FLAGS.map((flag) => flagName(flag).length)) + 1;

function helpLine(name: string, help: string): string {
  return `  ${name.padEnd(HELP_WIDTH)} ${help}`;
}

function flagLine(flag: FlagSpec): string {
  const fallback = flag.default === undefined || flag.default === false ? '' : ` (default: ${String(flag.default)})`;
  return helpLine(flagName(flag), `${flag.help}${fallback}`);
}

/**
 * The sysfs root must be a sysfs mount: a directory with a `class/` directory in it. That is what
 * tells a mistyped --path.sysfs (a path that does not exist, a file, /sys/class/infiniband, /host
 * for /host/sys), a usage error, from a host without InfiniBand (sysfs there, no
 * class/infiniband in it), which is served as such. Run by `serve` and `check` at start.
 */
export function checkSysfsRoot(settings: Pick<Settings, 'sysfsPath' | 'sysfsFrom'>): void {
  const { sysfsPath: root, sysfsFrom: from } = settings;
  const expected = 'expected the directory where sysfs is mounted (/sys, or /host/sys in a container)';
  const problem = ((): string | undefined => {
    try {
      if (!statSync(root).isDirectory()) return 'is not a directory';
    } catch (error) {
      const { code, message } = error as NodeJS.ErrnoException;
      return code === 'ENOENT' || code === 'ENOTDIR' ? 'does not exist' : `cannot be read (${message})`;
    }
    try {
      if (statSync(path.join(root, 'class')).isDirectory()) return undefined;
    } catch {
      // Told below.
    }
    return 'has no class/ directory: it is not a sysfs mount';
  })();
  if (problem !== undefined) throw new UsageError(`${from}: ${root} ${problem}; ${expected}`);
}

/** The node-name-map must be readable and well-formed at start (the tools would ignore a bad one whole). */
function checkedNodeNameMap(file: string | undefined): string | undefined {
  if (file === undefined) return undefined;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new UsageError(`--fabric.node-name-map: ${file} cannot be read: ${(error as Error).message}`);
  }
  const bad = parseNodeNameMap(text).errors[0];
  if (bad) throw new UsageError(`node-name-map ${file}:${bad.line}: expected a GUID then a name in quotes (0x0002c90200400000 "leaf-1"), got ${JSON.stringify(bad.text)}`);
  return file;
}

export function helpText(): string {
  const lines = [
    'usage: infiniband-exporter [flags]',
    '       infiniband-exporter check [flags] [--format=text|json]   (see check --help)',
    '',
    'Prometheus exporter for InfiniBand hosts: port and link health, subnet manager, PMA counters, IPoIB.',
    '',
    'Flags:',
    ...FLAGS.map(flagLine),
    helpLine('-h, --help', 'Show this help.'),
    helpLine('--version', 'Show the version.'),
  ];
  return lines.join('\n') + '\n';
}

/** Flags that change what `check` reads; it accepts the server's other flags too, so one ARGS line serves both. */
const CHECK_FLAGS = new Set([
  'path.sysfs', 'config.file', 'collector.diag', 'diag.timeout', 'diag.max-concurrent', 'perfquery.path', 'sminfo.path', 'smpquery.path',
  'collector.fabric', 'fabric.interval', 'fabric.max-concurrent', 'fabric.node-name-map', 'fabric.hca-ports', 'fabric.shard',
  'ibnetdiscover.path', 'iblinkinfo.path', 'ibqueryerrors.path', 'saquery.path',
  'device.include', 'device.exclude', 'demo',
]);

export function checkHelpText(): string {
  return [
    'usage: infiniband-exporter check [flags]',
    '',
    'Runs one collection cycle, as the server would with the same flags and config file, and prints',
    'what is wrong and what to do, worst first, then a one-line summary. With --collector.fabric it also',
    'runs one fabric discovery, one ports cycle and one SA cycle (each cut off as the server\'s: at',
    '--fabric.interval, or its commands\' time limits if longer) and reports the fabric\'s findings too.',
    'Exit status: 0 nothing critical or warning, 1 something is, 2 usage error.',
    '',
    'Flags:',
    helpLine('--format=<text|json>', 'text for a person (colour on a terminal unless NO_COLOR is set), json for scripts (default: text)'),
    ...FLAGS.filter((flag) => CHECK_FLAGS.has(flag.name)).map(flagLine),
    helpLine('-h, --help', 'Show this help.'),
    '',
    'The server\'s other flags are accepted and have no effect here.',
  ].join('\n') + '\n';
}
