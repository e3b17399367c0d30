// Wires the pipeline for one Settings value: sources → snapshot → metrics → HTTP. No process
// concerns here (signals, exit codes): those live in main.ts.
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { Registry, collectDefaultMetrics } from 'prom-client';
import { buildInfo, type BuildInfo } from './build-info.js';
import type { Settings } from './config/settings.js';
import { RecurringErrors } from './log/recurring-errors.js';
import { renderSnapshot, type RenderOptions } from './metrics/render.js';
import { buildApp, type MetricsSource } from './server/app.js';
import { WebSecurity } from './server/web-config.js';
import { ExecaRunner, locateTools, type CommandRunner } from './sources/command-runner.js';
import { SysfsFiles } from './sources/sysfs-files.js';
import { Collection } from './collection/collection.js';
import { Periodic } from './collection/periodic.js';
import { DIAG_COMMANDS, type DiagCommand, type Snapshot } from './snapshot/types.js';

/** Holds the rendered text of the newest snapshot; renders finishing out of order are dropped. */
class RenderedSnapshot implements MetricsSource {
  private rendered: { text: string; takenAt: number } | undefined;
  private sequence = 0;

  constructor(
    private readonly build: BuildInfo,
    private readonly options: RenderOptions,
    private readonly logger: Logger,
    private readonly now: () => number,
  ) {}

  update(snapshot: Snapshot): Promise<void> {
    const mine = ++this.sequence;
    const takenAt = this.now();
    return renderSnapshot(snapshot, this.build, this.options).then(
      (text) => {
        if (mine === this.sequence) this.rendered = { text, takenAt };
      },
      (error: unknown) => this.logger.error({ err: error }, 'rendering metrics failed; serving the previous snapshot'),
    );
  }

  text(): string | undefined {
    return this.rendered?.text;
  }

  takenAt(): number | undefined {
    return this.rendered?.takenAt;
  }
}

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
  private readonly rendered: RenderedSnapshot;
  private readonly host: Periodic;
  private readonly diag: Periodic | undefined;
  private pendingRender: Promise<void> = Promise.resolve();

  constructor(options: ExporterOptions) {
    const { settings, logger } = options;
    const now = options.now ?? Date.now;
    const build = buildInfo();
    this.rendered = new RenderedSnapshot(build, { portStateSeries: settings.portStateSeries }, logger, now);
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
      now,
    });
    this.collection.subscribe((snapshot) => {
      this.pendingRender = this.rendered.update(snapshot);
    });
    this.host = new Periodic({
      intervalMs: settings.collectionIntervalMs,
      task: (signal) => this.collection.collectHost(signal),
      onOverrun: (deadlineMs) => this.collection.recordOverrun(['sysfs', 'ipoib'], deadlineMs),
      onError: (error) => logger.error({ err: error }, 'sysfs collection cycle failed'),
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

    let processRegistry: Registry | undefined;
    if (!settings.disableExporterMetrics) {
      processRegistry = new Registry();
      collectDefaultMetrics({ register: processRegistry });
      // These three are gauges named like counters (promtool flags them); the per-type
      // nodejs_active_handles/requests/resources gauges carry the same numbers.
      for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) {
        processRegistry.removeSingleMetric(name);
      }
    }
    // --web.config.file: a broken file is a UsageError here, before anything listens.
    const web = settings.webConfigFile === undefined ? undefined : WebSecurity.load(settings.webConfigFile, logger);
    this.app = buildApp({
      source: this.rendered,
      telemetryPath: settings.telemetryPath,
      processRegistry,
      maxSnapshotAgeMs: 3 * settings.collectionIntervalMs,
      version: build.version,
      logger,
      now,
      ...(web && { serverOptions: web.serverOptions(), authenticate: web.authenticate }),
    });
    web?.attach(this.app.server);
  }

  /** Start the collection loops; the first cycle runs at once. */
  start(): void {
    this.host.start();
    this.diag?.start();
  }

  /** Run one host cycle now and wait until its metrics are rendered (tests, --demo warm-up). */
  async collectOnce(): Promise<void> {
    await this.host.runNow();
    await this.pendingRender;
  }

  /** Run one diag cycle now (after a host cycle) and wait until its metrics are rendered. */
  async collectDiagOnce(): Promise<void> {
    await this.diag?.runNow();
    await this.pendingRender;
  }

  async stop(): Promise<void> {
    await Promise.all([this.host.stop(), this.diag?.stop()]);
    await this.app.close();
  }
}
