// Wires the pipeline for one Settings value: sources → snapshot → metrics → HTTP. No process
// concerns here (signals, exit codes): those live in cli.ts.
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { buildInfo } from './build-info.js';
import type { Settings } from './config/settings.js';
import { RenderedPart, TimedPart, type EncodedPart } from './metrics/exposition-parts.js';
import type { FabricParts } from './metrics/fabric.js';
import { processRegistry } from './metrics/process.js';
import { writeSnapshot } from './metrics/render.js';
import { OWN_METRICS_MAX_AGE_MS, buildApp, type MetricsSource } from './server/app.js';
import { ServerMetrics, writeServerMetrics, type ServerState } from './server/server-metrics.js';
import { WebSecurity } from './server/web-config.js';
import type { CommandRunner } from './sources/command-runner.js';
import type { EthtoolCommand } from './sources/ethtool.js';
import type { Collection } from './collection/collection.js';
import type { FabricMode } from './collection/fabric.js';
import { collectionFromSettings, fabricRunnerFromSettings } from './collection/from-settings.js';
import { Periodic } from './collection/periodic.js';
import type { DiagCommand, FabricCommand, Snapshot } from './snapshot/types.js';

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
  /** The full host reading: at start, and when a scrape or a diag cycle finds the last too old. */
  private readonly hostReading: Periodic;
  /**
   * Port states, every --collection.interval after they were last read: a full reading postpones
   * the next sample, so a host scraped every 15 s at the default 10 s interval wakes for one sample
   * between scrapes rather than three every two scrapes.
   */
  private readonly stateSampler: Periodic;
  private readonly diag: Periodic | undefined;
  private readonly intervalMs: number;
  private readonly web: WebSecurity | undefined;
  private fabricMode: Promise<FabricMode> | undefined;
  /** The infiniband_fabric_* families, set once fabric mode is loaded. */
  private fabricParts: FabricParts | undefined;
  private stopped = false;

  constructor(private readonly options: ExporterOptions) {
    const { settings, logger } = options;
    const now = options.now ?? Date.now;
    const build = buildInfo();
    this.intervalMs = settings.collectionIntervalMs;
    const runners = { diag: options.diagRunner, ethtool: options.ethtoolRunner };
    const { collection, diagTools } = collectionFromSettings(settings, logger, runners, { now, freshHost: () => this.freshHost(), keepFilesOpen: true });
    this.collection = collection;
    this.hostReading = new Periodic({
      intervalMs: settings.collectionIntervalMs,
      task: async (signal) => {
        const statesReadAt = this.collection.lastReadingAt;
        await this.collection.collectHost(signal);
        // The reading read the port states: the next sample is due one interval from now.
        if (this.collection.lastReadingAt !== statesReadAt) this.stateSampler.postpone();
      },
      onOverrun: (deadlineMs) => this.collection.recordOverrun(['sysfs', 'ipoib'], deadlineMs),
      onError: (error) => logger.error({ err: error }, 'sysfs collection cycle failed'),
    });
    this.stateSampler = new Periodic({
      intervalMs: settings.collectionIntervalMs,
      // A full reading within the last half interval read the states already (it postpones this
      // timer too; the check covers a reading that ran while a sample was due).
      task: async () => this.collection.sampleStates(settings.collectionIntervalMs / 2),
      onOverrun: (deadlineMs) => logger.warn({ deadlineMs }, 'sampling the port states took longer than the collection interval'),
      onError: (error) => logger.error({ err: error }, 'sampling the port states failed'),
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

    // The parts of /metrics (metrics/exposition-parts.ts): the host snapshot, rendered once per
    // snapshot that is scraped; in fabric mode the fabric's families, each part rendered once per
    // change of its data; then the process's own metrics, read at most once a second.
    // --web.config.file: a broken file is a UsageError here, before anything listens.
    const web = settings.webConfigFile === undefined ? undefined : WebSecurity.load(settings.webConfigFile, logger, { now });
    this.web = web;
    // The host part ends with the HTTP server's own metrics (server-metrics.ts says why).
    const serverMetrics = new ServerMetrics(web && (() => web.reloadStatus()));
    const hostPart = new RenderedPart<{ snapshot: Snapshot; server: ServerState }>(({ snapshot, server }, out) => {
      writeSnapshot(snapshot, build, { portStateSeries: settings.portStateSeries }, out);
      writeServerMetrics(server, out);
    });
    let host: { snapshot: Snapshot; server: ServerState } | undefined;
    const hostOf = (snapshot: Snapshot): EncodedPart => {
      const server = serverMetrics.state();
      if (host?.snapshot !== snapshot || host.server !== server) host = { snapshot, server };
      return hostPart.of(host);
    };
    const registry = settings.disableExporterMetrics ? undefined : processRegistry();
    const ownPart = registry && new TimedPart(() => registry.metrics(), OWN_METRICS_MAX_AGE_MS, now);
    const source: MetricsSource = {
      parts: async () => {
        await this.freshHost();
        const snapshot = this.collection.snapshot;
        const parts: EncodedPart[] = [];
        if (snapshot) parts.push(hostOf(snapshot));
        if (snapshot?.fabric && this.fabricParts) parts.push(...this.fabricParts(snapshot.fabric));
        if (ownPart) parts.push(await ownPart.current());
        return parts;
      },
      takenAt: () => this.collection.lastReadingAt,
    };
    this.app = buildApp({
      source,
      telemetryPath: settings.telemetryPath,
      maxSnapshotAgeMs: 3 * settings.collectionIntervalMs,
      version: build.version,
      logger,
      now,
      currentSnapshot: () => this.collection.snapshot,
      maxConnections: settings.maxConnections,
      onConnectionRefused: () => serverMetrics.connectionRefused(),
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

  /** Start collecting: a full host reading at once, then port states every interval, diag and fabric mode. */
  start(): void {
    void this.hostReading.runNow();
    this.stateSampler.start();
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
    const [{ FabricMode: Mode }, { createFabricParts }] = await Promise.all([import('./collection/fabric.js'), import('./metrics/fabric.js')]);
    this.fabricParts = createFabricParts();
    return new Mode({
      settings: settings.fabric,
      timeoutMs: settings.diag.timeoutMs,
      runner: this.options.fabricRunner ?? fabricRunnerFromSettings(settings, logger),
      collection: this.collection,
      logger,
      ...(this.options.now && { now: this.options.now }),
    });
  }

  /** Run one discovery, then one ports and one SA cycle (tests). */
  async collectFabricOnce(): Promise<void> {
    const mode = await this.fabric();
    if (!mode) return;
    await mode.discovery.runNow();
    await Promise.all([mode.portsLoop.runNow(), mode.saLoop.runNow()]);
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
    this.stopped = true;
    await Promise.all([this.hostReading.stop(), this.stateSampler.stop(), this.diag?.stop(), this.fabricMode?.then((mode) => mode.stop())]);
    this.collection.close();
    this.web?.close();
    await this.app.close();
  }
}
