// The Collection one Settings value asks for, as the server and `infiniband-exporter check` both
// run it: the sysfs root and filters, the expectations, the infiniband-diags tools found on PATH
// (or at --<tool>.path) and ethtool when it is installed.
import type { Logger } from 'pino';
import type { Settings } from '../config/settings.js';
import { RecurringErrors } from '../log/recurring-errors.js';
import { ExecaRunner, locateTools, type CommandRunner } from '../sources/command-runner.js';
import { ETHTOOL_MAX_OUTPUT_BYTES, ETHTOOL_TIMEOUT_MS, type EthtoolCommand } from '../sources/ethtool.js';
import { SysfsFiles } from '../sources/sysfs-files.js';
import { DIAG_COMMANDS, FABRIC_COMMANDS, type CollectorName, type DiagCommand, type FabricCommand } from '../model/snapshot.js';
import { Collection } from './collection.js';

export interface ToolRunners {
  /** Runs the infiniband-diags tools; by default the real ones, found on PATH or at --<tool>.path. */
  diag?: CommandRunner<DiagCommand>;
  /** Runs ethtool; by default the real one when it is installed ('not-installed': as if it were not). */
  ethtool?: CommandRunner<EthtoolCommand> | 'not-installed';
  /** Runs fabric mode's tools (--collector.fabric); by default the real ones. */
  fabric?: CommandRunner<FabricCommand>;
}

export interface CollectionSetup {
  collection: Collection;
  /** The diag tools that run; empty when the diag collector is off. */
  diagTools: readonly DiagCommand[];
  /** Why the diag collector is off although the settings enable it (tools not installed). */
  diagOff: string | undefined;
}

interface DiagSetup {
  runner: CommandRunner<DiagCommand>;
  tools: ReadonlySet<DiagCommand>;
}

/** The diag runner, or why there is none (with one log line) when no tool is installed. */
function setUpDiag(settings: Settings, logger: Logger, injected: CommandRunner<DiagCommand> | undefined): DiagSetup | string | undefined {
  if (!settings.diag.enabled) return undefined;
  if (injected) return { runner: injected, tools: new Set(DIAG_COMMANDS) };
  const { found, missing } = locateTools(DIAG_COMMANDS, settings.diag.paths);
  const tools = new Set(DIAG_COMMANDS.filter((tool) => found[tool] !== undefined));
  if (tools.size === 0) {
    logger.warn({ missing }, 'diag collector off: infiniband-diags tools not found (install infiniband-diags or set --perfquery.path, --sminfo.path, --smpquery.path; --no-collector.diag silences this)');
    return `infiniband-diags tools not found: ${missing.join('; ')}`;
  }
  if (missing.length > 0) logger.warn({ missing }, `diag collector partly off: ${missing.join('; ')}`);
  const paths = { perfquery: found.perfquery ?? 'perfquery', sminfo: found.sminfo ?? 'sminfo', smpquery: found.smpquery ?? 'smpquery' };
  const runner = new ExecaRunner({ paths, timeoutMs: settings.diag.timeoutMs, maxConcurrent: settings.diag.maxConcurrent });
  return { runner, tools };
}

/** The real ethtool, bounded like every tool, or undefined when it is not installed. */
function ethtoolRunner(): CommandRunner<EthtoolCommand> | undefined {
  const path = locateTools(['ethtool'] as const, {}).found.ethtool;
  if (path === undefined) return undefined;
  return new ExecaRunner({ paths: { ethtool: path }, timeoutMs: ETHTOOL_TIMEOUT_MS, maxConcurrent: 1, maxOutputBytes: ETHTOOL_MAX_OUTPUT_BYTES });
}

const FABRIC_COLLECTORS: readonly CollectorName[] = ['fabric_discovery', 'fabric_ports', 'fabric_sa'];

/** Fabric-mode commands print up to a few MB per sweep at 2 000 nodes; much more is not a sweep. */
const FABRIC_MAX_OUTPUT_BYTES = 64 * 1024 * 1024;

/** Fabric mode's runner over the real tools; a missing tool makes its commands fail visibly (collector_success 0). */
export function fabricRunnerFromSettings(settings: Settings, logger: Logger): CommandRunner<FabricCommand> {
  const { found, missing } = locateTools(FABRIC_COMMANDS, { ...settings.fabric.paths, sminfo: settings.diag.paths.sminfo, perfquery: settings.diag.paths.perfquery });
  if (missing.length > 0) logger.error({ missing }, `fabric mode cannot run every tool (install infiniband-diags or set --<tool>.path): ${missing.join('; ')}`);
  const paths = Object.fromEntries(FABRIC_COMMANDS.map((tool) => [tool, found[tool] ?? tool])) as Record<FabricCommand, string>;
  return new ExecaRunner({ paths, timeoutMs: settings.diag.timeoutMs, maxConcurrent: settings.fabric.maxConcurrent, maxOutputBytes: FABRIC_MAX_OUTPUT_BYTES });
}

export interface CollectionHooks {
  now?: () => number;
  /** Makes the host reading fresh before a diag cycle (the server's scrape-driven reading). */
  freshHost?: () => Promise<void>;
  /** Keep the files read every pass open between passes (a long-running exporter; see sources/sysfs-files.ts). */
  keepFilesOpen?: boolean;
}

export function collectionFromSettings(settings: Settings, logger: Logger, runners: ToolRunners = {}, hooks: CollectionHooks = {}): CollectionSetup {
  const diag = setUpDiag(settings, logger, runners.diag);
  const diagSetup = typeof diag === 'object' ? diag : undefined;
  const diagTools = diagSetup ? [...diagSetup.tools] : [];
  const collection = new Collection({
    files: new SysfsFiles(settings.sysfsPath, {
      keepOpen: hooks.keepFilesOpen ?? false,
      onKeepingStopped: (reason) => logger.warn(`no longer keeping sysfs files open between readings: ${reason}; each reading opens them again`),
    }),
    devices: settings.devices,
    expectations: settings.expectations,
    logger,
    errors: new RecurringErrors(logger),
    collectors: ['sysfs', 'ipoib', ...diagTools, ...(settings.fabric.enabled ? FABRIC_COLLECTORS : [])],
    commands: [...diagTools, ...(settings.fabric.enabled ? FABRIC_COMMANDS : [])],
    diag: diagSetup && {
      runner: diagSetup.runner,
      tools: diagSetup.tools,
      timeoutMs: settings.diag.timeoutMs,
      // The tools try 3 times: a quarter of the limit per try lets them report "no answer" themselves.
      madTimeoutMs: Math.max(10, Math.floor(settings.diag.timeoutMs / 4)),
    },
    ethtool: runners.ethtool === 'not-installed' ? undefined : (runners.ethtool ?? ethtoolRunner()),
    ...(hooks.now && { now: hooks.now }),
    ...(hooks.freshHost && { freshHost: hooks.freshHost }),
  });
  return { collection, diagTools, diagOff: typeof diag === 'string' ? diag : undefined };
}
