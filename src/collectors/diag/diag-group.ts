// What the three diag collectors (smpquery, sminfo, perfquery) share: the --collector.diag switch,
// the infiniband-diags tools found on PATH (or at --<tool>.path) behind one runner, the diag
// cycle (every --diag.interval, after a fresh host reading) and the ports it queries.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { COUNT, DURATION, collectorSwitch, flag } from '../../config/flags.js';
import { portKey, type Device } from '../../model/host.js';
import { ExecaRunner, locateTools, type CommandRunner } from '../../sources/command-runner.js';
import { DIAG_COMMANDS, diagTargets, type DiagCommand, type DiagOptions, type DiagReading } from '../../sources/diag/local-ports.js';
import { readUmadPorts } from '../../sources/umad.js';
import type { Snapshot } from '../../model/snapshot.js';
import type { CollectorContext, Cycle, Off, Reader, ToolGroup } from '../../collection/collector.js';
import { HOST_READING, SYSFS_PATH, sysfsFiles } from '../host/host-reading.js';
import { DIAG_TIMEOUT, PERFQUERY_PATH, SMINFO_PATH, SMPQUERY_PATH } from '../infiniband-diags.js';

export const DIAG_SWITCH = collectorSwitch(
  'diag',
  'diag',
  true,
  'Query perfquery, sminfo and smpquery (--no-collector.diag turns it off).',
);
export const DIAG_INTERVAL = flag(DURATION, {
  name: 'diag.interval',
  key: 'diag.interval',
  default: '30s',
  help: 'How often the infiniband-diags tools run.',
});
export const DIAG_MAX_CONCURRENT = flag(COUNT, {
  name: 'diag.max-concurrent',
  key: 'diag.max_concurrent',
  default: '4',
  help: 'infiniband-diags commands run at once.',
  check: true,
});

/** Every flag the diag collectors read. */
export const DIAG_FLAGS = [
  DIAG_SWITCH,
  DIAG_INTERVAL,
  DIAG_TIMEOUT,
  DIAG_MAX_CONCURRENT,
  PERFQUERY_PATH,
  SMINFO_PATH,
  SMPQUERY_PATH,
  SYSFS_PATH,
];

/** What the diag collectors let `check` judge (they are off, or cannot run, together). */
export const DIAG_CHECKS = 'subnet manager reachability and link peers';

export const DIAG_TOOLS: ToolGroup<DiagCommand> = { key: 'diag', tools: DIAG_COMMANDS };

export const DIAG_CYCLE: Cycle = {
  name: 'diag',
  interval: (settings) => settings.get(DIAG_INTERVAL),
  // Up to three commands in a row per port (node info, then the peer's port info, then its
  // counters), each bounded by the time limit; a single run (check) has no interval to fill.
  deadline: (settings, once) =>
    once ? 4 * settings.get(DIAG_TIMEOUT) : Math.max(settings.get(DIAG_INTERVAL), 4 * settings.get(DIAG_TIMEOUT)),
  // Which ports are linked, and their LIDs, come from the host reading.
  after: { cycle: HOST_READING, fresh: true },
};

/** libibumad's own test: the tools open /dev/infiniband/umad* only when this file exists. */
const UMAD_ABI_VERSION = 'class/infiniband_mad/abi_version';

/** The tools as this program runs them: the runner, which tools were found, and the ports to ask through. */
export class DiagTools {
  private announcedSkips = '';
  private lastTargets: { devices: readonly Device[]; targets: ReturnType<typeof diagTargets> } | undefined;

  constructor(
    private readonly context: CollectorContext,
    readonly runner: CommandRunner<DiagCommand>,
    readonly found: ReadonlySet<DiagCommand>,
  ) {}

  options(signal: AbortSignal): DiagOptions {
    const timeoutMs = this.context.settings.get(DIAG_TIMEOUT);
    // The tools try 3 times: a quarter of the limit per try lets them report "no answer" themselves.
    return { runner: this.runner, timeoutMs, madTimeoutMs: Math.max(10, Math.floor(timeoutMs / 4)), signal };
  }

  /**
   * The linked InfiniBand ports the tools can query: those with a umad device. Ports left out for
   * want of one are named in the log once, and again whenever that set changes. The same for the
   * three collectors of one cycle.
   */
  targets(devices: readonly Device[], signal: AbortSignal): ReturnType<typeof diagTargets> {
    if (this.lastTargets?.devices === devices) return this.lastTargets.targets;
    const umad = readUmadPorts(sysfsFiles(this.context));
    const all = diagTargets(devices, this.options(signal));
    const targets = all.filter(({ device, port }) => umad.ports.has(portKey(device.name, port.port)));
    const skipped = all.filter((target) => !targets.includes(target)).map(({ device, port }) => portKey(device.name, port.port));
    const summary = skipped.join(' ');
    if (summary !== this.announcedSkips) {
      this.announcedSkips = summary;
      if (skipped.length > 0) {
        this.context.logger.info(
          { ports: skipped, reason: umad.reason },
          'diag collector skips these linked ports: they have no umad device, so infiniband-diags cannot reach the fabric through them',
        );
      } else if (targets.length > 0) {
        this.context.logger.info('diag collector queries every linked InfiniBand port');
      }
    }
    this.lastTargets = { devices, targets };
    return targets;
  }
}

/** The diag tools, set up once for the three collectors; or why they cannot run (logged once). */
function setUpTools(context: CollectorContext): DiagTools | Off {
  const { settings, logger } = context;
  const injected = context.runner(DIAG_TOOLS);
  if (injected === 'not-installed') return { off: 'infiniband-diags tools not installed' };
  if (injected !== undefined) return new DiagTools(context, injected, new Set(DIAG_COMMANDS));
  // Without the user-MAD interface every command fails to open its port: `check` says so once
  // instead of reporting each tool as a failing collector. (A fixture tree has none either.)
  if (context.mode === 'check' && !existsSync(path.join(settings.get(SYSFS_PATH), UMAD_ABI_VERSION))) {
    return {
      off: `the kernel's user-MAD interface is not loaded (no ${path.join(settings.get(SYSFS_PATH), UMAD_ABI_VERSION)}; modprobe ib_umad)`,
    };
  }
  const { found, missing } = locateTools(DIAG_COMMANDS, {
    perfquery: settings.get(PERFQUERY_PATH),
    sminfo: settings.get(SMINFO_PATH),
    smpquery: settings.get(SMPQUERY_PATH),
  });
  const tools = new Set(DIAG_COMMANDS.filter((tool) => found[tool] !== undefined));
  if (tools.size === 0) {
    logger.warn(
      { missing },
      'diag collector off: infiniband-diags tools not found (install infiniband-diags or set --perfquery.path, --sminfo.path, --smpquery.path; --no-collector.diag silences this)',
    );
    return { off: `infiniband-diags tools not found: ${missing.join('; ')}` };
  }
  if (missing.length > 0) logger.warn({ missing }, `diag collector partly off: ${missing.join('; ')}`);
  const paths = { perfquery: found.perfquery ?? 'perfquery', sminfo: found.sminfo ?? 'sminfo', smpquery: found.smpquery ?? 'smpquery' };
  const runner = new ExecaRunner({ paths, timeoutMs: settings.get(DIAG_TIMEOUT), maxConcurrent: settings.get(DIAG_MAX_CONCURRENT) });
  return new DiagTools(context, runner, tools);
}

const TOOLS = {};

/** The diag tools for `tool`'s collector, or why it cannot run. */
function diagTools(context: CollectorContext, tool: DiagCommand): DiagTools | Off {
  const tools = context.shared(TOOLS, () => setUpTools(context));
  if ('off' in tools) return tools;
  if (!tools.found.has(tool)) return { off: `${tool} not found (install infiniband-diags or set --${tool}.path)` };
  context.countCommands([...tools.found]);
  return tools;
}

/**
 * The reader of `tool`'s collector, or why it cannot run: one pass of the tool over the ports to
 * query, as a reading in which any failed command fails the collector.
 */
export function diagReader<T>(
  context: CollectorContext,
  tool: DiagCommand,
  pass: (tools: DiagTools, snapshot: Snapshot, signal: AbortSignal) => Promise<DiagReading<T>>,
): Reader<ReadonlyMap<string, T>> | Off {
  const tools = diagTools(context, tool);
  if ('off' in tools) return tools;
  return {
    read: async (snapshot, signal) => {
      const reading = await pass(tools, snapshot, signal);
      return {
        part: reading.ports,
        errors: reading.errors,
        failOnErrors: true,
        timeouts: Array.from({ length: reading.timeouts }, () => tool),
        read: (item) => reading.ran.has(item),
      };
    },
  };
}
