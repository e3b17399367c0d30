// The snapshot store: each collector's latest part, how each fared in its last cycle, and the
// totals that only grow. A cycle hands it its readings; publishing makes a new Snapshot, which
// replaces the previous one whole. A part that did not change is the same object in the next
// snapshot, so what is made from it (a collector's exposition text) is made again only when it did.
import type { ItemsRead, RecurringErrors } from '../log/recurring-errors.js';
import type { Device } from '../model/host.js';
import { readErrorCount, type CollectorReport, type Snapshot } from '../model/snapshot.js';

export class SnapshotStore {
  private readonly parts = new Map<string, unknown>();
  private devices: readonly Device[] = [];
  private readonly reports = new Map<string, CollectorReport>();
  private readonly readErrors = new Map<string, number>();
  private readonly commandTimeouts = new Map<string, number>();
  private current: Snapshot | undefined;
  private readonly listeners: ((snapshot: Snapshot) => void)[] = [];

  constructor(private readonly errors: RecurringErrors) {}

  /** The last published snapshot; undefined before the first cycle finished. */
  get snapshot(): Snapshot | undefined {
    return this.current;
  }

  /** A running collector, in the registry's order: its read errors are counted from 0. */
  enroll(collector: string): void {
    if (!this.readErrors.has(collector)) this.readErrors.set(collector, 0);
  }

  /** Tools whose time-outs are counted (from 0). */
  countCommands(tools: readonly string[]): void {
    for (const tool of tools) if (!this.commandTimeouts.has(tool)) this.commandTimeouts.set(tool, 0);
  }

  countTimeout(tool: string): void {
    this.commandTimeouts.set(tool, (this.commandTimeouts.get(tool) ?? 0) + 1);
  }

  setDevices(devices: readonly Device[]): void {
    this.devices = devices;
  }

  part(collector: string): unknown {
    return this.parts.get(collector);
  }

  setPart(collector: string, part: unknown): void {
    this.parts.set(collector, part);
  }

  dropPart(collector: string): void {
    this.parts.delete(collector);
  }

  /**
   * The end of one collector's cycle: its report, its read errors counted and logged. `read`: the
   * items the cycle read (an earlier error of an item it did not read is neither gone nor back).
   */
  report(report: CollectorReport, read?: ItemsRead): void {
    this.reports.set(report.collector, report);
    this.readErrors.set(report.collector, (this.readErrors.get(report.collector) ?? 0) + readErrorCount(report.errors));
    this.errors.cycle(report.collector, report.errors, read);
  }

  lastReport(collector: string): CollectorReport | undefined {
    return this.reports.get(collector);
  }

  /** The parts as they stand, with a cycle's readings over them (before it publishes). */
  view(staged: ReadonlyMap<string, unknown>, devices: readonly Device[] | undefined): Snapshot {
    const parts = new Map(this.parts);
    for (const [name, part] of staged) parts.set(name, part);
    return {
      devices: devices ?? this.devices,
      parts,
      reports: this.current?.reports ?? [],
      totals: this.current?.totals ?? { readErrors: new Map(), commandTimeouts: new Map() },
    };
  }

  subscribe(listener: (snapshot: Snapshot) => void): void {
    this.listeners.push(listener);
  }

  publish(): Snapshot {
    // Reports in the order collectors enrolled (the registry's), whichever cycle ended last.
    const reports = [...this.readErrors.keys()].flatMap((name) => this.reports.get(name) ?? []);
    const snapshot: Snapshot = {
      devices: this.devices,
      parts: new Map(this.parts),
      reports,
      totals: { readErrors: new Map(this.readErrors), commandTimeouts: new Map(this.commandTimeouts) },
    };
    this.current = snapshot;
    for (const listener of this.listeners) listener(snapshot);
    return snapshot;
  }
}
