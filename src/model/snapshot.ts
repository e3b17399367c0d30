// The snapshot: what every collector last read, as plain immutable data, and how each collector
// fared. Collectors fill it (src/collectors/); metrics and findings are made from it; nothing in
// it refers back to files or processes. A new snapshot replaces the old one whole when a cycle
// finishes.
import type { Device } from './host.js';

/** One item a source could not read; the collector that ran the source reports it. */
export interface ItemError {
  /** What failed, e.g. `class/infiniband/mlx5_0/ports/1/rate` or `perfquery -x mlx5_0 1`. */
  item: string;
  message: string;
  /**
   * How many read errors it stands for (1 when absent): the lines of one output that were not
   * understood are one entry, however many, so that junk output holds no entry per line.
   */
  count?: number;
}

/** How many read errors a list holds (`infiniband_exporter_read_errors_total` grows by as many). */
export function readErrorCount(errors: readonly ItemError[]): number {
  let total = 0;
  for (const error of errors) total += error.count ?? 1;
  return total;
}

/** One thing that could not be read: a log line and a count in `infiniband_exporter_read_errors_total`. */
export interface ReadError extends ItemError {
  collector: string;
}

export interface CollectorReport {
  collector: string;
  success: boolean;
  durationSeconds: number;
  /** Unix time, seconds, at which its cycle finished. */
  finishedAt: number;
  errors: readonly ReadError[];
}

/** Counts that only grow while the exporter runs. */
export interface RunningTotals {
  /** By collector. */
  readErrors: ReadonlyMap<string, number>;
  /** Commands killed at their time limit, by tool. */
  commandTimeouts: ReadonlyMap<string, number>;
}

export interface Snapshot {
  /**
   * The host's InfiniBand devices and their ports as last read (the sysfs collector's reading):
   * what every other host collector reads about, and adds to in its own part.
   */
  devices: readonly Device[];
  /** Each enabled collector's latest part, by collector name: read it with the collector's `of`. */
  parts: ReadonlyMap<string, unknown>;
  /** The last cycle of each enabled collector, in the registry's order. */
  reports: readonly CollectorReport[];
  totals: RunningTotals;
}
