// Reading the exporter's /metrics in tests, as a Prometheus would see it.
import pino, { type Logger } from 'pino';
import type { Settings } from '../../src/config/flags.js';
import type { Collector } from '../../src/collection/collector.js';
import { Collectors } from '../../src/collection/scheduler.js';
import { HOST_READING, SYSFS_FILES } from '../../src/collectors/host/host-reading.js';
import { COLLECTORS } from '../../src/collectors/registry.js';
import type { Exporter } from '../../src/commands/serve/exporter.js';
import { buildInfo } from '../../src/metrics/build-info.js';
import { exposition } from '../../src/metrics/snapshot-metrics.js';
import type { EncodedPart } from '../../src/metrics/exposition-parts.js';
import type { Snapshot } from '../../src/model/snapshot.js';
import type { SysfsFiles } from '../../src/sources/sysfs-files.js';

export async function scrape(exporter: Exporter): Promise<string> {
  return (await exporter.app.inject({ method: 'GET', url: '/metrics' })).body;
}

/** The value of one exact series (`name{labels}`), or undefined when it is absent. */
export function sampleValue(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** Every sample line of one metric name. */
export function samplesOf(text: string, name: string): string[] {
  return text.split('\n').filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `));
}

/**
 * A snapshot's exposition as the exporter renders it (its collectors' families and its own),
 * without the process's metrics; `others`: the HTTP server's part, as `serve` adds it.
 */
export function renderExposition(
  snapshot: Snapshot,
  settings: Settings,
  collectors: readonly Collector[] = COLLECTORS,
  others: readonly EncodedPart[] = [],
): string {
  return exposition(collectors, settings, buildInfo(), snapshot, others);
}

/** The host collectors (sysfs, ipoib, tso) of the registry, as one program runs them, on a sysfs tree. */
export function hostCollectors(settings: Settings, options: { files?: SysfsFiles; now?: () => number; logger?: Logger } = {}): Collectors {
  return new Collectors(
    COLLECTORS.filter((collector) => collector.schedule.cycle === HOST_READING),
    {
      settings,
      logger: options.logger ?? pino({ level: 'silent' }),
      mode: 'serve',
      runners: { module: 'not-installed', ethtool: 'not-installed' },
      ...(options.now && { now: options.now }),
      ...(options.files && { provided: new Map([[SYSFS_FILES, options.files]]) }),
    },
  );
}
