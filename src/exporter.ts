// Wires the pipeline for one Settings value: sources → snapshot → metrics → HTTP. No process
// concerns here (signals, exit codes): those live in main.ts.
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { Registry, collectDefaultMetrics } from 'prom-client';
import { buildInfo, type BuildInfo } from './build-info.js';
import type { Settings } from './config/settings.js';
import { renderSnapshot, type RenderOptions } from './metrics/render.js';
import { buildApp, type MetricsSource } from './server/app.js';
import { WebSecurity } from './server/web-config.js';
import type { CommandRunner } from './sources/command-runner.js';
import type { EthtoolCommand } from './sources/ethtool.js';
import type { Collection } from './collection/collection.js';
import type { FabricMode } from './collection/fabric.js';
import { collectionFromSettings, fabricRunnerFromSettings } from './collection/from-settings.js';
import { Periodic } from './collection/periodic.js';
import type { FabricSnapshot } from './snapshot/fabric.js';
import type { DiagCommand, FabricCommand, Snapshot } from './snapshot/types.js';

/**
 * Holds the rendered text of the newest snapshot; renders finishing out of order are dropped. The
 * infiniband_fabric_* families are rendered apart, only when the fabric snapshot changed, and
 * appended.
 */
class RenderedSnapshot implements MetricsSource {
  private rendered: { text: string; takenAt: number } | undefined;
  private sequence = 0;
  private fabric: { snapshot: FabricSnapshot; text: string } | undefined;
  private fabricSequence = 0;
  private joined: { host: string; fabric: string; text: string } | undefined;
  /** Set once fabric mode is loaded. */
  renderFabric: ((fabric: FabricSnapshot) => Promise<string>) | undefined;

  constructor(
    private readonly build: BuildInfo,
    private readonly options: RenderOptions,
    private readonly logger: Logger,
    private readonly now: () => number,
  ) {}

  update(snapshot: Snapshot): Promise<void> {
    const mine = ++this.sequence;
    const takenAt = this.now();
    const host = renderSnapshot(snapshot, this.build, this.options).then(
      (text) => {
        if (mine === this.sequence) this.rendered = { text, takenAt };
      },
      (error: unknown) => this.logger.error({ err: error }, 'rendering metrics failed; serving the previous snapshot'),
    );
    return Promise.all([host, this.updateFabric(snapshot.fabric)]).then(() => undefined);
  }

  private updateFabric(fabric: FabricSnapshot | undefined): Promise<void> {
    if (!fabric || !this.renderFabric || fabric === this.fabric?.snapshot) return Promise.resolve();
    const mine = ++this.fabricSequence;
    return this.renderFabric(fabric).then(
      (text) => {
        if (mine === this.fabricSequence) this.fabric = { snapshot: fabric, text };
      },
      (error: unknown) => this.logger.error({ err: error }, 'rendering fabric metrics failed; serving the previous fabric snapshot'),
    );
  }

  text(): string | undefined {
    const host = this.rendered?.text;
    const fabric = this.fabric?.text ?? '';
    if (host === undefined || fabric === '') return host;
    // Joined once per change, not per scrape: the fabric part is megabytes.
    if (this.joined?.host !== host || this.joined.fabric !== fabric) this.joined = { host, fabric, text: host + fabric };
    return this.joined.text;
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
  /** Runs ethtool; by default the real one when it is installed. */
  ethtoolRunner?: CommandRunner<EthtoolCommand>;
  /** Runs fabric mode's tools; by default the real ones, found on PATH or at --<tool>.path. */
  fabricRunner?: CommandRunner<FabricCommand>;
  now?: () => number;
}

export class Exporter {
  readonly app: FastifyInstance;
  readonly collection: Collection;
  private readonly rendered: RenderedSnapshot;
  private readonly host: Periodic;
  private readonly diag: Periodic | undefined;
  private pendingRender: Promise<void> = Promise.resolve();
  private fabricMode: Promise<FabricMode> | undefined;
  private stopped = false;

  constructor(private readonly options: ExporterOptions) {
    const { settings, logger } = options;
    const now = options.now ?? Date.now;
    const build = buildInfo();
    this.rendered = new RenderedSnapshot(build, { portStateSeries: settings.portStateSeries }, logger, now);
    const { collection, diagTools } = collectionFromSettings(settings, logger, { diag: options.diagRunner, ethtool: options.ethtoolRunner }, now);
    this.collection = collection;
    this.collection.subscribe((snapshot) => {
      this.pendingRender = this.rendered.update(snapshot);
    });
    this.host = new Periodic({
      intervalMs: settings.collectionIntervalMs,
      task: (signal) => this.collection.collectHost(signal),
      onOverrun: (deadlineMs) => this.collection.recordOverrun(['sysfs', 'ipoib'], deadlineMs),
      onError: (error) => logger.error({ err: error }, 'sysfs collection cycle failed'),
    });
    this.diag = diagTools.length === 0 ? undefined : new Periodic({
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
      currentSnapshot: () => this.collection.snapshot,
      ...(web && { serverOptions: web.serverOptions(), authenticate: web.authenticate }),
    });
    web?.attach(this.app.server);
  }

  /** Start the collection loops; the first cycle runs at once. */
  start(): void {
    this.host.start();
    this.diag?.start();
    void this.fabric()?.then((mode) => {
      if (!this.stopped) mode.start();
    });
  }

  /**
   * Fabric mode, loaded on first use and only with --collector.fabric: without it none of its
   * modules is even imported.
   */
  fabric(): Promise<FabricMode> | undefined {
    if (!this.options.settings.fabric.enabled) return undefined;
    this.fabricMode ??= this.loadFabric();
    return this.fabricMode;
  }

  private async loadFabric(): Promise<FabricMode> {
    const { settings, logger } = this.options;
    const [{ FabricMode: Mode }, { createFabricRenderer }] = await Promise.all([import('./collection/fabric.js'), import('./metrics/fabric.js')]);
    this.rendered.renderFabric = createFabricRenderer();
    return new Mode({
      settings: settings.fabric,
      timeoutMs: settings.diag.timeoutMs,
      runner: this.options.fabricRunner ?? fabricRunnerFromSettings(settings, logger),
      collection: this.collection,
      logger,
      ...(this.options.now && { now: this.options.now }),
    });
  }

  /** Run one discovery, then one ports and one SA cycle, and wait until their metrics are rendered (tests). */
  async collectFabricOnce(): Promise<void> {
    const mode = await this.fabric();
    if (!mode) return;
    await mode.discovery.runNow();
    await Promise.all([mode.portsLoop.runNow(), mode.saLoop.runNow()]);
    await this.pendingRender;
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
    this.stopped = true;
    await Promise.all([this.host.stop(), this.diag?.stop(), this.fabricMode?.then((mode) => mode.stop())]);
    await this.app.close();
  }
}
