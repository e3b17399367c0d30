// The server: the registry's collectors on their schedules, their snapshot rendered part by part
// (metrics/snapshot-metrics.ts), and the HTTP application. No process concerns here (signals, exit
// codes): those live in cli.ts.
import { hostname } from 'node:os';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Settings } from '../../config/flags.js';
import type { UsageError } from '../../config/errors.js';
import type { Collector } from '../../collection/collector.js';
import { Collectors } from '../../collection/scheduler.js';
import { DIAG_CYCLE } from '../../collectors/diag/diag-group.js';
import { DISCOVERY_CYCLE, FABRIC_PORTS_CYCLE } from '../../collectors/fabric/fabric-mode.js';
import { SA_CYCLE } from '../../collectors/fabric/sa.js';
import { COLLECTION_INTERVAL, HOST_READING } from '../../collectors/host/host-reading.js';
import { COLLECTORS } from '../../collectors/registry.js';
import { buildInfo } from '../../metrics/build-info.js';
import { Exposition } from '../../metrics/snapshot-metrics.js';
import { TimedPart, type EncodedPart } from '../../metrics/exposition-parts.js';
import { processRegistry } from '../../metrics/process.js';
import type { CommandRunner } from '../../sources/command-runner.js';
import { OWN_METRICS_MAX_AGE_MS, buildApp, type MetricsSource } from './app.js';
import {
  DISABLE_EXPORTER_METRICS,
  MAX_CONNECTIONS,
  MAX_CONNECTIONS_PER_CLIENT,
  RUNBOOK_URL,
  TELEMETRY_PATH,
  WEB_CONFIG_FILE,
} from './flags.js';
import { notChecked } from '../../findings/not-checked.js';
import { ServerMetrics } from './server-metrics.js';
import { WebSecurity } from './web-config/reload.js';

export interface ExporterOptions {
  settings: Settings;
  logger: Logger;
  /** The collectors; the registry's by default (a test adds its own). */
  collectors?: readonly Collector[];
  /** Runners in place of a tool group's real tools (tests), by `ToolGroup.key`. */
  runners?: Readonly<Record<string, CommandRunner<string> | 'not-installed' | undefined>>;
  now?: () => number;
  /** A collector found a mistake of the user's while reading (a cabling plan naming no node): exit 2. */
  onFatal?: (error: UsageError) => void;
}

export class Exporter {
  readonly app: FastifyInstance;
  readonly collectors: Collectors;
  private readonly web: WebSecurity | undefined;

  constructor(options: ExporterOptions) {
    const { settings, logger } = options;
    const now = options.now ?? Date.now;
    const registry = options.collectors ?? COLLECTORS;
    const build = buildInfo();
    this.collectors = new Collectors(registry, {
      settings,
      logger,
      mode: 'serve',
      now,
      ...(options.runners && { runners: options.runners }),
      ...(options.onFatal && { onFatal: options.onFatal }),
    });

    // --web.config.file: a broken file is a UsageError here, before anything listens.
    const webConfigFile = settings.get(WEB_CONFIG_FILE);
    const web = webConfigFile === undefined ? undefined : WebSecurity.load(webConfigFile, logger, { now });
    this.web = web;
    const serverMetrics = new ServerMetrics(web && (() => web.reloadStatus()));

    // The parts of /metrics: the collectors' and the exporter's own (metrics/snapshot-metrics.ts) with the
    // HTTP server's, each rendered once per change of what it is made from; then the process's
    // metrics, read at most once a second.
    const exposition = new Exposition(registry, settings, build);
    const registryOfProcess = settings.get(DISABLE_EXPORTER_METRICS) ? undefined : processRegistry();
    const ownPart = registryOfProcess && new TimedPart(() => registryOfProcess.metrics(), OWN_METRICS_MAX_AGE_MS, now);
    const source: MetricsSource = {
      parts: async () => {
        // Counters are never served older than one collection interval.
        await this.collectors.fresh();
        const snapshot = this.collectors.snapshot;
        const server = serverMetrics.current();
        const parts: EncodedPart[] = snapshot ? await exposition.parts(snapshot, server ? [server] : []) : [];
        if (ownPart) parts.push(await ownPart.current());
        return parts;
      },
      takenAt: () => this.collectors.lastReadingAt(),
    };
    // A fabric cycle's parts are rendered (in time slices) as it publishes, not by the scrape that
    // comes next: at 120 000 ports that is seconds of a 10 s scrape timeout.
    this.collectors.store.subscribe((snapshot) => {
      exposition.prepare(snapshot).catch((error: unknown) => logger.error({ err: error }, "rendering the fabric's metrics failed"));
    });
    this.app = buildApp({
      source,
      telemetryPath: settings.get(TELEMETRY_PATH),
      maxSnapshotAgeMs: 3 * settings.get(COLLECTION_INTERVAL),
      version: build.version,
      logger,
      now,
      currentSnapshot: () => this.collectors.snapshot,
      collectors: registry,
      hostname: hostname(),
      notChecked: () => notChecked(this.collectors),
      refreshSeconds: settings.get(COLLECTION_INTERVAL) / 1000,
      ...(settings.get(RUNBOOK_URL) !== undefined && { runbookUrl: settings.get(RUNBOOK_URL)! }),
      maxConnections: settings.get(MAX_CONNECTIONS),
      maxConnectionsPerClient: settings.get(MAX_CONNECTIONS_PER_CLIENT),
      onConnectionRefused: () => serverMetrics.connectionRefused(),
      ...(web && { serverOptions: web.serverOptions(), authenticate: web.authenticate }),
    });
    web?.attach(this.app.server);
  }

  /** Start collecting: a host reading at once, then every collector on its schedule. */
  start(): void {
    void this.collectors.start();
  }

  /** Read the configuration files again (SIGHUP): the collectors' (a cabling plan) at their next reading. */
  reload(): void {
    this.collectors.reload();
  }

  /** One host reading now (tests, --demo warm-up). */
  async collectOnce(): Promise<void> {
    await this.collectors.runCycle(HOST_READING);
  }

  /** One diag cycle now (after a host reading). */
  async collectDiagOnce(): Promise<void> {
    await this.collectors.runCycle(DIAG_CYCLE);
  }

  /** One discovery, then one ports and one SA cycle (tests). */
  async collectFabricOnce(): Promise<void> {
    await this.collectors.runCycle(DISCOVERY_CYCLE);
    await Promise.all([this.collectors.runCycle(FABRIC_PORTS_CYCLE), this.collectors.runCycle(SA_CYCLE)]);
  }

  async stop(): Promise<void> {
    await this.collectors.stop();
    this.web?.close();
    await this.app.close();
  }
}
