// Wires the pipeline for one Settings value: sources → snapshot → metrics → HTTP. No process
// concerns here (signals, exit codes): those live in main.ts.
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { Registry, collectDefaultMetrics } from 'prom-client';
import { buildInfo } from './build-info.js';
import type { Settings } from './config/settings.js';
import { RecurringErrors } from './log/recurring-errors.js';
import { renderSnapshot, type BuildInfo } from './metrics/render.js';
import { buildApp, type MetricsSource } from './server/app.js';
import { SysfsFiles } from './sources/sysfs-files.js';
import { Collection } from './snapshot/collection.js';
import { Periodic } from './snapshot/periodic.js';
import type { Snapshot } from './snapshot/types.js';

/** Holds the rendered text of the newest snapshot; renders finishing out of order are dropped. */
class RenderedSnapshot implements MetricsSource {
  private rendered: { text: string; takenAt: number } | undefined;
  private sequence = 0;

  constructor(
    private readonly build: BuildInfo,
    private readonly logger: Logger,
    private readonly now: () => number,
  ) {}

  update(snapshot: Snapshot): Promise<void> {
    const mine = ++this.sequence;
    const takenAt = this.now();
    return renderSnapshot(snapshot, this.build).then(
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
  now?: () => number;
}

export class Exporter {
  readonly app: FastifyInstance;
  readonly collection: Collection;
  private readonly rendered: RenderedSnapshot;
  private readonly host: Periodic;
  private pendingRender: Promise<void> = Promise.resolve();

  constructor(options: ExporterOptions) {
    const { settings, logger } = options;
    const now = options.now ?? Date.now;
    const build = buildInfo();
    this.rendered = new RenderedSnapshot(build, logger, now);
    this.collection = new Collection({
      files: new SysfsFiles(settings.sysfsPath),
      devices: settings.devices,
      expectations: settings.expectations,
      logger,
      errors: new RecurringErrors(logger),
      collectors: ['sysfs', 'ipoib'],
      commands: [],
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
    this.app = buildApp({
      source: this.rendered,
      telemetryPath: settings.telemetryPath,
      processRegistry,
      maxSnapshotAgeMs: 3 * settings.collectionIntervalMs,
      version: build.version,
      logger,
      now,
    });
  }

  /** Start the collection loops; the first cycle runs at once. */
  start(): void {
    this.host.start();
  }

  /** Run one host cycle now and wait until its metrics are rendered (tests, --demo warm-up). */
  async collectOnce(): Promise<void> {
    await this.host.runNow();
    await this.pendingRender;
  }

  async stop(): Promise<void> {
    await this.host.stop();
    await this.app.close();
  }
}
