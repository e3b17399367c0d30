// The command line of both commands (the server, `check`) and later ones: the program's own flags
// (log, config file, demo), the server's, and every flag of the registry's collectors, merged with
// the config file into one Settings value. Flags win over the file; the file wins over defaults.
// Everything comes from the flags' declarations: parsing, checking, --help.
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { STRING, checkFlag, choice, flag, optionalFlag, Settings, type Flag, type FlagValue, type Section } from '../config/flags.js';
import { loadConfigFile } from '../config/config-file.js';
import { UsageError } from '../config/errors.js';
import type { Collector } from '../collection/collector.js';
import { DIAG_SWITCH } from '../collectors/diag/diag-group.js';
import { MODULE_SWITCH } from '../collectors/host/module.js';
import { SYSFS_PATH } from '../collectors/host/host-reading.js';
import { collectorFlags, collectorSections } from '../collectors/registry.js';

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export const LOG_FORMATS = ['json', 'logfmt'] as const;

export const CONFIG_FILE = optionalFlag(STRING, {
  name: 'config.file',
  help: 'YAML config file: expectations, filters, intervals (flags win over it).',
  check: true,
});
export const LOG_LEVEL = flag(choice(LOG_LEVELS), {
  name: 'log.level',
  key: 'log.level',
  default: 'info',
  help: `Log level: ${LOG_LEVELS.join(', ')}.`,
});
export const LOG_FORMAT = flag(choice(LOG_FORMATS), {
  name: 'log.format',
  key: 'log.format',
  default: 'json',
  help: `Log format: ${LOG_FORMATS.join(', ')}.`,
});
export const DEMO_MODES = ['host', 'fabric'] as const;
export const DEMO = optionalFlag(choice(DEMO_MODES), {
  name: 'demo',
  help: 'Read bundled data instead of this machine: host (also a bare --demo) a host with every quirk, fabric a recorded fabric with its faults.',
  check: true,
});

/** The bundled demo data, shipped in the package (demo/README.md): the demo host and its config, the recorded fabric. */
export const DEMO_DIRECTORY = fileURLToPath(new URL('../../demo/', import.meta.url));
export const DEMO_SYSFS = fileURLToPath(new URL('../../demo/host/sys', import.meta.url));
export const DEMO_CONFIG = fileURLToPath(new URL('../../demo/host/config.yml', import.meta.url));
export const DEMO_FABRIC = fileURLToPath(new URL('../../demo/fabric', import.meta.url));

/** The flags of one command: its own, then the collectors', then the program's. */
export interface FlagSet {
  flags: readonly Flag<unknown>[];
  sections: readonly Section<unknown>[];
}

export function flagSet(commandFlags: readonly Flag<unknown>[], collectors: readonly Collector[]): FlagSet {
  const flags = [...new Set([...commandFlags, CONFIG_FILE, ...collectorFlags(collectors), LOG_LEVEL, LOG_FORMAT, DEMO])];
  return { flags, sections: collectorSections(collectors) };
}

type Extra = Record<string, { type: 'string' | 'boolean'; short?: string }>;

/** The flags of `set` plus `extra`, strictly: an unknown flag or a positional argument is a usage error. */
export function parseCommandLine(
  argv: readonly string[],
  set: FlagSet,
  extra: Extra = {},
): { settings: Settings; extra: Record<string, FlagValue | undefined>; help: boolean } {
  const options: Extra = { help: { type: 'boolean', short: 'h' }, ...extra };
  argv = demoArguments(argv);
  for (const flag of set.flags) options[flag.name] = { type: flag.kind.placeholder === undefined ? 'boolean' : 'string' };
  let values: Record<string, FlagValue | undefined>;
  try {
    values = parseArgs({ args: [...argv], options, strict: true, allowPositionals: false, allowNegative: true }).values as Record<
      string,
      FlagValue | undefined
    >;
  } catch (error) {
    throw new UsageError(`${(error as Error).message.replace(/\. To specify.*$/s, '')} (see --help)`);
  }
  const rest = Object.fromEntries(Object.keys(extra).map((name) => [name, values[name]]));
  if (values.help) return { settings: new Settings(new Map(), new Map()), extra: rest, help: true };
  return { settings: settingsOf(set, values), extra: rest, help: false };
}

/** A bare `--demo` is the host demo; `--demo fabric` (npm run demo -- fabric) is `--demo=fabric`. */
function demoArguments(argv: readonly string[]): readonly string[] {
  const at = argv.indexOf('--demo');
  if (at < 0) return argv;
  const next = argv[at + 1];
  const mode = next !== undefined && (DEMO_MODES as readonly string[]).includes(next) ? next : 'host';
  return [...argv.slice(0, at), `--demo=${mode}`, ...argv.slice(at + (mode === next ? 2 : 1))];
}

/** The flag of `set` named `name` (the fabric demo sets flags of collectors this module does not import). */
function named(set: FlagSet, name: string): Flag<unknown> | undefined {
  return set.flags.find((candidate) => candidate.name === name);
}

/** Flags (already parsed) merged with the config file they name and the defaults. */
function settingsOf(set: FlagSet, values: Record<string, FlagValue | undefined>): Settings {
  const given = new Map<Flag<unknown>, unknown>();
  for (const flag of set.flags) {
    const value = values[flag.name];
    if (value !== undefined) given.set(flag, checkFlag(flag, value));
  }
  const demo = given.get(DEMO) as (typeof DEMO_MODES)[number] | undefined;
  const preset = (flag: Flag<unknown> | undefined, value: unknown): void => {
    if (flag !== undefined && !given.has(flag)) given.set(flag, value);
  };
  if (demo === 'host') {
    preset(CONFIG_FILE, DEMO_CONFIG);
    preset(SYSFS_PATH, DEMO_SYSFS);
  } else if (demo === 'fabric') {
    // The recorded fabric, from its host (node22): fabric mode on the recordings (commands/demo.ts
    // gives it their runner), the expectations, the plan the fabric was cabled from and its names.
    preset(CONFIG_FILE, path.join(DEMO_FABRIC, 'config.yml'));
    preset(SYSFS_PATH, path.join(DEMO_FABRIC, 'sys'));
    preset(named(set, 'collector.fabric'), true);
    preset(named(set, 'fabric.topology-file'), path.join(DEMO_FABRIC, 'cabling-plan'));
    preset(named(set, 'fabric.node-name-map'), path.join(DEMO_FABRIC, 'node-name-map'));
    // The recorded jobs, unless the jobs are asked of a real squeue.
    if (!given.has(named(set, 'squeue.path')!)) preset(named(set, 'jobs.file'), path.join(DEMO_FABRIC, 'jobs.yaml'));
    // The demo's bad-links list is the demo's: never written over a real exporter's state.
    preset(named(set, 'fabric.state-dir'), path.join(tmpdir(), 'infiniband-exporter-demo'));
  }
  const configFile = given.get(CONFIG_FILE) as string | undefined;
  const file = configFile === undefined ? undefined : loadConfigFile(configFile, set.flags, set.sections);
  const merged = new Map<Flag<unknown>, unknown>(file?.values);
  for (const [flag, value] of given) merged.set(flag, value);
  const settings = new Settings(merged, file?.sections ?? new Map(), new Set(given.keys()), file?.places);
  // The demo host has no fabric to ask, and no adapter a cable tool could read.
  return demo !== undefined
    ? settings.with([
        [DIAG_SWITCH, false],
        [MODULE_SWITCH, false],
      ])
    : settings;
}

/**
 * The checks of the enabled collectors' settings that need the system (collector.verify), run at
 * start by `serve` and `check`: a UsageError names the flag or the config file's line.
 */
export async function verifySettings(settings: Settings, collectors: readonly Collector[]): Promise<void> {
  for (const collector of collectors) {
    if (collector.enabledBy !== undefined && !settings.get(collector.enabledBy)) continue;
    await collector.verify?.(settings);
  }
}

function flagName(flag: Flag<unknown>): string {
  const placeholder = flag.kind.placeholder;
  // A switch that is on by default is turned off with its --no- form.
  return placeholder === undefined ? (flag.default === true ? `--[no-]${flag.name}` : `--${flag.name}`) : `--${flag.name}=<${placeholder}>`;
}

/** Help lines, lined up on the longest flag name of `flags` (and `extra` names). */
export function helpLines(flags: readonly Flag<unknown>[], extra: readonly [string, string][] = []): string[] {
  const names = [...flags.map(flagName), ...extra.map(([name]) => name), '-h, --help'];
  const width = Math.max(...names.map((name) => name.length)) + 1;
  const line = (name: string, help: string): string => `  ${name.padEnd(width)} ${help}`;
  return [
    ...extra.map(([name, help]) => line(name, help)),
    ...flags.map((flag) =>
      line(
        flagName(flag),
        `${flag.help}${flag.default === undefined || flag.default === false ? '' : ` (default: ${String(flag.default)})`}`,
      ),
    ),
    line('-h, --help', 'Show this help.'),
  ];
}
