// The exporter's own families (not the process's: see process.ts): its version, and how each
// collector fared in its last cycle, read errors and command time-outs since start. Rendered as
// one part of /metrics, again after every cycle of any collector (a few lines per collector).
import { STABLE, Samples } from '../exposition/samples.js';
import type { ExpositionBuffer } from '../exposition/buffer.js';
import { counter, gauge } from '../exposition/metric-spec.js';
import type { Snapshot } from '../model/snapshot.js';
import type { BuildInfo } from './build-info.js';

export const EXPORTER_METRICS = {
  buildInfo: gauge(
    'infiniband_exporter_build_info',
    ['version', 'revision', 'nodejs_version'],
    'Version of the exporter (value always 1).',
  ),
  success: gauge(
    'infiniband_exporter_collector_success',
    ['collector'],
    "1 when the collector's last cycle succeeded; 0 when it failed, was cut off at its deadline, or a command's output was incomplete (cut short, or lines not understood), so that part of its data is missing. A single file or switch that could not be read counts in read_errors_total only.",
  ),
  duration: gauge('infiniband_exporter_collector_duration_seconds', ['collector'], "Duration of the collector's last cycle."),
  lastCollection: gauge(
    'infiniband_exporter_last_collection_timestamp_seconds',
    ['collector'],
    'Unix time at which the collector last finished a cycle: time() - this is the age of its data.',
  ),
  readErrors: counter(
    'infiniband_exporter_read_errors_total',
    ['collector'],
    'Files, devices or commands that could not be read or parsed, since the exporter started (details in the log).',
  ),
  commandTimeouts: counter(
    'infiniband_exporter_command_timeouts_total',
    ['command'],
    'infiniband-diags commands (diag and fabric mode) killed at --diag.timeout.',
  ),
} as const;

/**
 * The HTTP server's own: connections refused at the cap, and the web config file's reloads
 * (written by commands/serve/server-metrics.ts; declared here, with the exporter's other families).
 */
export const SERVER_METRICS = {
  connectionsRefused: counter(
    'infiniband_exporter_http_connections_refused_total',
    [],
    'Connections closed because --web.max-connections (or --web.max-connections-per-client from one address) were open: the one waiting longest for its request headers, or the newcomer when all were in requests (the log says when it starts).',
  ),
  webConfigReloadSuccessful: gauge(
    'infiniband_exporter_web_config_last_reload_successful',
    [],
    '1 when the web config file (--web.config.file) as last read is in force; 0 when its last change could not be used and the previous configuration is kept (the log says why). Only with --web.config.file.',
  ),
  webConfigReloadSuccessTimestamp: gauge(
    'infiniband_exporter_web_config_last_reload_success_timestamp_seconds',
    [],
    'Unix time at which the web config file was last read and put in force, at start or after a change. Only with --web.config.file.',
  ),
} as const;

const FAMILIES = Object.values(EXPORTER_METRICS);

export function writeExporterMetrics(snapshot: Snapshot, build: BuildInfo, out: ExpositionBuffer): void {
  const samples = new Samples();
  samples.add(EXPORTER_METRICS.buildInfo, { version: build.version, revision: build.revision, nodejs_version: build.nodejsVersion }, 1);
  for (const report of snapshot.reports) {
    const labels = STABLE.one('collector', report.collector);
    samples.add(EXPORTER_METRICS.success, labels, report.success ? 1 : 0);
    samples.add(EXPORTER_METRICS.duration, labels, report.durationSeconds);
    if (report.finishedAt > 0) samples.add(EXPORTER_METRICS.lastCollection, labels, report.finishedAt);
  }
  for (const [collector, count] of snapshot.totals.readErrors)
    samples.add(EXPORTER_METRICS.readErrors, STABLE.one('collector', collector), count);
  for (const [command, count] of snapshot.totals.commandTimeouts)
    samples.add(EXPORTER_METRICS.commandTimeouts, STABLE.one('command', command), count);
  samples.writeTo(FAMILIES, out);
}
