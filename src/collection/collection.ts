// The collection loop's state: the latest reading of each source, the totals that only grow while
// the exporter runs, and the current snapshot, replaced whole when a cycle finishes.
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { ExpectationRule } from '../config/config-file.js';
import type { RecurringErrors } from '../log/recurring-errors.js';
import type { DeviceFilter } from '../sources/device-filter.js';
import { readInfinibandClass } from '../sources/infiniband.js';
import { readDiag, type DiagOptions } from '../sources/diag/local-ports.js';
import { readIpoib } from '../sources/ipoib.js';
import { readTcpSegmentationOffload, type EthtoolCommand } from '../sources/ethtool.js';
import type { CommandRunner } from '../sources/command-runner.js';
import { hasTsoErratum } from '../infiniband/tso-erratum.js';
import type { SysfsFiles } from '../sources/sysfs-files.js';
import { ExpectationRules } from './expectation-rules.js';
import {
  portKey,
  type CollectorName,
  type CollectorReport,
  type Device,
  type CommandName,
  type DiagPort,
  type IpoibInterface,
  type LinkExpectation,
  type ReadError,
  type Snapshot,
  type TsoReading,
} from '../snapshot/types.js';
import type { FabricSnapshot } from '../snapshot/fabric.js';

export interface CollectionOptions {
  files: SysfsFiles;
  devices: DeviceFilter;
  expectations: readonly ExpectationRule[];
  logger: Logger;
  errors: RecurringErrors;
  /** Collectors whose counters are pre-initialised to 0 (the enabled ones). */
  collectors: readonly CollectorName[];
  /** Commands whose time-outs are counted (pre-initialised to 0): the enabled diag and fabric tools. */
  commands: readonly CommandName[];
  /** How to run the infiniband-diags tools; absent when the diag collector is off. */
  diag?: Omit<DiagOptions, 'signal'>;
  /** Runs `ethtool -k` for IPoIB interfaces on adapters with the TSO erratum; absent when ethtool is not installed. */
  ethtool?: CommandRunner<EthtoolCommand>;
  now?: () => number;
}

export class Collection {
  private devices: readonly Device[] = [];
  private ipoib: readonly IpoibInterface[] = [];
  private tso: ReadonlyMap<string, TsoReading> = new Map();
  private diag: ReadonlyMap<string, DiagPort> = new Map();
  private readonly firstHostCycle: Promise<void>;
  private hostCycleDone: () => void = () => undefined;
  private readonly reports = new Map<CollectorName, CollectorReport>();
  private readonly lastState = new Map<string, number>();
  private readonly stateChanges = new Map<string, number>();
  private readonly readErrors = new Map<CollectorName, number>();
  private readonly commandTimeouts = new Map<CommandName, number>();
  private readonly rules: ExpectationRules;
  private readonly listeners: ((snapshot: Snapshot) => void)[] = [];
  private current: Snapshot | undefined;
  private fabric: FabricSnapshot | undefined;
  private announcedNoDevices = false;
  private readonly now: () => number;

  constructor(private readonly options: CollectionOptions) {
    this.rules = new ExpectationRules(options.expectations);
    this.now = options.now ?? Date.now;
    for (const collector of options.collectors) this.readErrors.set(collector, 0);
    for (const command of options.commands) this.commandTimeouts.set(command, 0);
    this.firstHostCycle = new Promise((resolve) => {
      this.hostCycleDone = resolve;
    });
  }

  get snapshot(): Snapshot | undefined {
    return this.current;
  }

  subscribe(listener: (snapshot: Snapshot) => void): void {
    this.listeners.push(listener);
  }

  /** Fabric mode's hook: its latest snapshot rides along in the next published host snapshot. */
  setFabric(fabric: FabricSnapshot): void {
    this.fabric = fabric;
  }

  /** One sysfs + IPoIB cycle. Results are dropped when `signal` aborted (deadline passed). */
  async collectHost(signal?: AbortSignal): Promise<void> {
    const { files, devices: filter } = this.options;
    const sysfsStart = performance.now();
    const infiniband = await readInfinibandClass(files, filter);
    const sysfsSeconds = (performance.now() - sysfsStart) / 1000;
    const ipoibStart = performance.now();
    const ipoib = await readIpoib(files, infiniband.devices);
    // Only hosts with an affected adapter ever run ethtool (see infiniband/tso-erratum.ts).
    const affected = new Set(infiniband.devices.filter(hasTsoErratum).map((device) => device.name));
    const tsoInterfaces = ipoib.interfaces.filter((iface) => iface.device !== undefined && affected.has(iface.device)).map((iface) => iface.name);
    const tso = tsoInterfaces.length === 0 ? { readings: new Map<string, TsoReading>(), errors: [] } : await readTcpSegmentationOffload(this.options.ethtool, tsoInterfaces, signal);
    const ipoibSeconds = (performance.now() - ipoibStart) / 1000;
    if (signal?.aborted) return;

    const finishedAt = this.now() / 1000;
    this.devices = infiniband.devices;
    this.ipoib = ipoib.interfaces;
    this.tso = tso.readings;
    this.hostCycleDone();
    this.countStateChanges(infiniband.devices);
    this.finish('sysfs', infiniband.failure, infiniband.errors, sysfsSeconds, finishedAt);
    this.finish('ipoib', ipoib.failure, [...ipoib.errors, ...tso.errors], ipoibSeconds, finishedAt);
    if (!this.announcedNoDevices && infiniband.failure === undefined) {
      this.announcedNoDevices = true;
      if (infiniband.devices.length === 0) {
        this.options.logger.info({ path: files.resolve('class/infiniband') }, 'no InfiniBand devices found; serving the exporter\'s own metrics only');
      } else {
        this.options.logger.info({ devices: infiniband.devices.map((device) => device.name) }, `found ${infiniband.devices.length} InfiniBand device(s)`);
      }
    }
    this.publish();
  }

  /**
   * One diag cycle over the ports of the latest sysfs reading (waits for the first one). Every
   * reading replaces the previous one whole: what a failed command would have said is absent, not
   * stale. Results are dropped when `signal` aborted (deadline passed).
   */
  async collectDiag(signal?: AbortSignal): Promise<void> {
    const options = this.options.diag;
    if (!options) return;
    await this.firstHostCycle;
    const reading = await readDiag(this.devices, { ...options, signal });
    if (signal?.aborted) return;
    const finishedAt = this.now() / 1000;
    this.diag = new Map(reading.ports.map((port) => [portKey(port.device, port.port), port]));
    for (const [command, result] of reading.collectors) {
      for (let i = 0; i < result.timeouts; i++) this.countTimeout(command);
      this.finish(command, undefined, result.errors, result.durationSeconds, finishedAt, true);
    }
    this.publish();
  }

  /** A diag cycle passed its deadline: its readings are dropped, not served as fresh. */
  recordDiagOverrun(deadlineMs: number): void {
    this.diag = new Map();
    this.recordOverrun([...(this.options.diag?.tools ?? [])], deadlineMs);
  }

  /** A cycle passed its deadline: its collectors failed this time, their data stays as it was. */
  recordOverrun(collectors: readonly CollectorName[], deadlineMs: number): void {
    for (const collector of collectors) {
      const error: ReadError = { collector, item: 'cycle', message: `did not finish within its deadline of ${deadlineMs} ms; cut off` };
      // The age of the data stays that of the last cycle that finished.
      this.finish(collector, undefined, [error], deadlineMs / 1000, this.reports.get(collector)?.finishedAt ?? 0, true);
    }
    this.publish();
  }

  /** Count a command that was killed at its timeout. */
  countTimeout(command: CommandName): void {
    this.commandTimeouts.set(command, (this.commandTimeouts.get(command) ?? 0) + 1);
  }

  /**
   * Record the end of a cycle of one collector (used by every source, sysfs and diag alike). With
   * `failOnErrors` any error fails the collector (a diag command that failed), not only `failure`.
   */
  finish(
    collector: CollectorName,
    failure: string | undefined,
    errors: readonly ReadError[],
    durationSeconds: number,
    finishedAt: number,
    failOnErrors = false,
  ): void {
    const all = failure === undefined ? errors : [...errors, { collector, item: 'collector', message: failure }];
    const success = failure === undefined && !(failOnErrors && errors.length > 0);
    this.reports.set(collector, { collector, success, durationSeconds, finishedAt, errors: all });
    this.readErrors.set(collector, (this.readErrors.get(collector) ?? 0) + all.length);
    this.options.errors.cycle(collector, all);
  }

  private countStateChanges(devices: readonly Device[]): void {
    const present = new Set<string>();
    for (const device of devices) {
      for (const port of device.ports) {
        const key = portKey(device.name, port.port);
        present.add(key);
        const state = port.state?.id;
        if (state === undefined) continue;
        const before = this.lastState.get(key);
        if (!this.stateChanges.has(key)) this.stateChanges.set(key, 0);
        if (before !== undefined && before !== state) this.stateChanges.set(key, this.stateChanges.get(key)! + 1);
        this.lastState.set(key, state);
      }
    }
    // A port that vanished starts again from 0 if it comes back: its series is new to Prometheus too.
    for (const key of [...this.lastState.keys()]) if (!present.has(key)) this.lastState.delete(key);
    for (const key of [...this.stateChanges.keys()]) if (!present.has(key)) this.stateChanges.delete(key);
  }

  /** Build the snapshot from the latest parts and hand it to the listeners. */
  publish(): void {
    const expectations = new Map<string, LinkExpectation>();
    for (const device of this.devices) {
      for (const port of device.ports) {
        const key = portKey(device.name, port.port);
        const expectation = this.rules.forPort(device.name, port.port) ?? peerExpectation(this.diag.get(key));
        if (expectation) expectations.set(key, expectation);
      }
    }
    const snapshot: Snapshot = {
      devices: withDiagCounters(this.devices, this.diag),
      ipoib: this.ipoib,
      tso: this.tso,
      expectations,
      diag: this.diag,
      reports: [...this.reports.values()],
      totals: {
        stateChanges: new Map(this.stateChanges),
        readErrors: new Map(this.readErrors),
        commandTimeouts: new Map(this.commandTimeouts),
      },
      ...(this.fabric && { fabric: this.fabric }),
    };
    this.current = snapshot;
    for (const listener of this.listeners) listener(snapshot);
  }
}

/** The best width and speed both link ends have enabled, when the config file says nothing. */
function peerExpectation(diag: DiagPort | undefined): LinkExpectation | undefined {
  const capability = diag?.enabledCapability;
  if (!capability || (capability.width === undefined && capability.speed === undefined)) return undefined;
  return { width: capability.width, speed: capability.speed, source: 'peer' };
}

/** Add the counters perfquery read for ports whose sysfs lacks them; sysfs values always win. */
function withDiagCounters(devices: readonly Device[], diag: ReadonlyMap<string, DiagPort>): readonly Device[] {
  if (diag.size === 0) return devices;
  return devices.map((device) => ({
    ...device,
    ports: device.ports.map((port) => {
      const extra = diag.get(portKey(device.name, port.port))?.counters ?? [];
      if (extra.length === 0) return port;
      const present = new Set(port.counters.map((counter) => counter.name));
      return { ...port, counters: [...port.counters, ...extra.filter((counter) => !present.has(counter.name))] };
    }),
  }));
}
