// Wires the pipeline for one Settings value: sources → snapshot → metrics → HTTP. No process
// concerns here (signals, exit codes): those live in main.ts.
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { buildInfo } from './build-info.js';
import type { Settings } from './config/settings.js';
import { RecurringErrors } from './log/recurring-errors.js';
import { EncodedPart, RenderedPart, TimedPart } from './metrics/exposition-parts.js';
import { processRegistry } from './metrics/process.js';
import { renderSnapshot } from './metrics/render.js';
import { OWN_METRICS_MAX_AGE_MS, buildApp, type MetricsSource } from './server/app.js';
import { WebSecurity } from './server/web-config.js';
import { ExecaRunner, locateTools, type CommandRunner } from './sources/command-runner.js';
import { SysfsFiles } from './sources/sysfs-files.js';
import { Collection } from './collection/collection.js';
import { Periodic } from './collection/periodic.js';
import { DIAG_COMMANDS, type DiagCommand, type Snapshot } from './snapshot/types.js';

export interface ExporterOptions {
  settings: Settings;
  logger: Logger;
  /** Runs the infiniband-diags tools; by default the real ones, found on PATH or at --<tool>.path. */
  diagRunner?: CommandRunner<DiagCommand>;
  now?: () => number;
}

interface DiagSetup {
  runner: CommandRunner<DiagCommand>;
  tools: ReadonlySet<DiagCommand>;
}

/** The diag runner, or undefined (with one log line) when diag is off or no tool is installed. */
function setUpDiag(settings: Settings, logger: Logger, injected: CommandRunner<DiagCommand> | undefined): DiagSetup | undefined {
  if (!settings.diag.enabled) return undefined;
  if (injected) return { runner: injected, tools: new Set(DIAG_COMMANDS) };
  const { found, missing } = locateTools(DIAG_COMMANDS, settings.diag.paths);
  const tools = new Set(DIAG_COMMANDS.filter((tool) => found[tool] !== undefined));
  if (tools.size === 0) {
    logger.warn({ missing }, 'diag collector off: infiniband-diags tools not found (install infiniband-diags or set --perfquery.path, --sminfo.path, --smpquery.path; --no-collector.diag silences this)');
    return undefined;
  }
  if (missing.length > 0) logger.warn({ missing }, `diag collector partly off: ${missing.join('; ')}`);
  const paths = { perfquery: found.perfquery ?? 'perfquery', sminfo: found.sminfo ?? 'sminfo', smpquery: found.smpquery ?? 'smpquery' };
  const runner = new ExecaRunner({ paths, timeoutMs: settings.diag.timeoutMs, maxConcurrent: settings.diag.maxConcurrent });
  return { runner, tools };
}

export class Exporter {
  readonly app: FastifyInstance;
  readonly collection: Collection;
  /** The full host reading: at start, and when a scrape or a diag cycle finds the last too old. */
  private readonly hostReading: Periodic;
  /** Port states, every --collection.interval. */
  private readonly stateSampler: Periodic;
  private readonly diag: Periodic | undefined;
  private readonly intervalMs: number;

  constructor(options: ExporterOptions) {
    const { settings, logger } = options;
    const now = options.now ?? Date.now;
    const build = buildInfo();
    this.intervalMs = settings.collectionIntervalMs;
    const diag = setUpDiag(settings, logger, options.diagRunner);
    const diagTools = diag ? [...diag.tools] : [];
    this.collection = new Collection({
      files: new SysfsFiles(settings.sysfsPath),
      devices: settings.devices,
      expectations: settings.expectations,
      logger,
      errors: new RecurringErrors(logger),
      collectors: ['sysfs', 'ipoib', ...diagTools],
      commands: diagTools,
      diag: diag && {
        runner: diag.runner,
        tools: diag.tools,
        timeoutMs: settings.diag.timeoutMs,
        // The tools try 3 times: a quarter of the limit per try lets them report "no answer" themselves.
        madTimeoutMs: Math.max(10, Math.floor(settings.diag.timeoutMs / 4)),
      },
      freshHost: () => this.freshHost(),
      now,
    });
    this.hostReading = new Periodic({
      intervalMs: settings.collectionIntervalMs,
      task: (signal) => this.collection.collectHost(signal),
      onOverrun: (deadlineMs) => this.collection.recordOverrun(['sysfs', 'ipoib'], deadlineMs),
      onError: (error) => logger.error({ err: error }, 'sysfs collection cycle failed'),
    });
    this.stateSampler = new Periodic({
      intervalMs: settings.collectionIntervalMs,
      // A full reading within the last half interval read the states already.
      task: async () => this.collection.sampleStates(settings.collectionIntervalMs / 2),
      onOverrun: (deadlineMs) => logger.warn({ deadlineMs }, 'sampling the port states took longer than the collection interval'),
      onError: (error) => logger.error({ err: error }, 'sampling the port states failed'),
    });
    this.diag = diag && new Periodic({
      intervalMs: settings.diag.intervalMs,
      // A cycle waits for up to three commands in a row per port (node info, then the peer's
      // port info, then its counters), each bounded by the time limit.
      deadlineMs: Math.max(settings.diag.intervalMs, 4 * settings.diag.timeoutMs),
      task: (signal) => this.collection.collectDiag(signal),
      onOverrun: (deadlineMs) => this.collection.recordDiagOverrun(deadlineMs),
      onError: (error) => logger.error({ err: error }, 'diag collection cycle failed'),
    });

    // The parts of /metrics: the host snapshot, rendered once per snapshot that is scraped, then
    // the process's own metrics, read at most once a second.
    const hostPart = new RenderedPart<Snapshot>((snapshot) => renderSnapshot(snapshot, build, { portStateSeries: settings.portStateSeries }));
    const registry = settings.disableExporterMetrics ? undefined : processRegistry();
    const ownPart = registry && new TimedPart(() => registry.metrics(), OWN_METRICS_MAX_AGE_MS, now);
    const source: MetricsSource = {
      parts: async () => {
        await this.freshHost();
        const snapshot = this.collection.snapshot;
        const parts: EncodedPart[] = snapshot ? [hostPart.of(snapshot)] : [];
        if (ownPart) parts.push(await ownPart.current());
        return parts;
      },
      takenAt: () => this.collection.lastReadingAt,
    };
    // --web.config.file: a broken file is a UsageError here, before anything listens.
    const web = settings.webConfigFile === undefined ? undefined : WebSecurity.load(settings.webConfigFile, logger);
    this.app = buildApp({
      source,
      telemetryPath: settings.telemetryPath,
      maxSnapshotAgeMs: 3 * settings.collectionIntervalMs,
      version: build.version,
      logger,
      now,
      ...(web && { serverOptions: web.serverOptions(), authenticate: web.authenticate }),
    });
    web?.attach(this.app.server);
  }

  /**
   * Make the host reading at most one collection interval old: counters are never served older.
   * Concurrent callers share one reading; callers within the interval share the snapshot.
   */
  async freshHost(): Promise<void> {
    if (!this.collection.hostFresh(this.intervalMs)) await this.hostReading.runNow();
  }

  /** Start collecting: a full host reading at once, then port states every interval, and diag. */
  start(): void {
    void this.hostReading.runNow();
    this.stateSampler.start();
    this.diag?.start();
  }

  /** Run one full host reading now (tests, --demo warm-up). */
  async collectOnce(): Promise<void> {
    await this.hostReading.runNow();
  }

  /** Run one diag cycle now (after a host reading). */
  async collectDiagOnce(): Promise<void> {
    await this.diag?.runNow();
  }

  async stop(): Promise<void> {
    await Promise.all([this.hostReading.stop(), this.stateSampler.stop(), this.diag?.stop()]);
    await this.app.close();
  }
}
