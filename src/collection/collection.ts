// The collection's state: the latest reading of each source, the totals that only grow while the
// exporter runs, and the current snapshot, replaced whole when a reading finishes.
//
// How often each sysfs file is read (docs/benchmarks.md, "What changed"):
//   - `state` and `phys_state` of every port: every --collection.interval (sampleStates), so that
//     flaps between scrapes are counted in infiniband_port_state_changes_total;
//   - everything else that changes (rate, LIDs, PMA and hw counters, IPoIB): in a full reading
//     (collectHost), which the exporter runs at start and whenever a scrape finds the last one
//     older than one interval, or a sample saw a port change state or the device list change;
//   - device identity and port layout (node type, GUIDs, firmware, board, description, link layer,
//     port GUID, SM SL, LMC, capability mask, which counter files exist): with the first full
//     reading of a device, then again when one of its ports changed state, when the last reading
//     of it had errors, and every IDENTITY_MAX_AGE_MS.
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { ExpectationRule } from '../config/config-file.js';
import type { ItemsRead, RecurringErrors } from '../log/recurring-errors.js';
import type { DeviceFilter } from '../sources/device-filter.js';
import { INFINIBAND_CLASS, listInfinibandDevices, readDevice, readDeviceIdentity, readPortStates, type DeviceIdentity } from '../sources/infiniband.js';
import { isQueriedPort, readDiag, type DiagOptions } from '../sources/diag/local-ports.js';
import { NET_CLASS, listInterfaces, placeHcas, readCarrier, readInterfaceIdentity, type HcaPlacement, type InterfaceIdentity } from '../sources/ipoib.js';
import { readTcpSegmentationOffload, type EthtoolCommand } from '../sources/ethtool.js';
import type { CommandRunner } from '../sources/command-runner.js';
import { hasTsoErratum } from '../infiniband/tso-erratum.js';
import type { SysfsFiles } from '../sources/sysfs-files.js';
import { readUmadPorts } from '../sources/umad.js';
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

/** Identity and port layout are read again at least this often (firmware updates, node_desc). */
export const IDENTITY_MAX_AGE_MS = 300_000;

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
  /**
   * Makes the host reading fresh (at most one interval old) before a diag cycle queries ports:
   * which ports are linked and their LIDs come from it. Without it the latest reading is used.
   */
  freshHost?: () => Promise<void>;
  /** Runs `ethtool -k` for IPoIB interfaces on adapters with the TSO erratum; absent when ethtool is not installed. */
  ethtool?: CommandRunner<EthtoolCommand>;
  now?: () => number;
}

interface KnownIdentity {
  identity: DeviceIdentity;
  readAt: number;
  /** A port changed state since it was read, or it was read with errors: read it again. */
  stale: boolean;
  /** Read in the full reading under way. */
  readNow: boolean;
}

interface KnownInterface {
  identity: InterfaceIdentity;
  readAt: number;
  stale: boolean;
  carrier: 0 | 1 | undefined;
}

export class Collection {
  private devices: readonly Device[] = [];
  private readonly interfaces = new Map<string, KnownInterface>();
  private ipoib: readonly IpoibInterface[] = [];
  private tso: ReadonlyMap<string, TsoReading> = new Map();
  private diag: ReadonlyMap<string, DiagPort> = new Map();
  private readonly identities = new Map<string, KnownIdentity>();
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
  /** The devices last listed (selected ones, by name), to log those that come and go after start. */
  private listedDevices: readonly string[] | undefined;
  private announcedDiagSkips = '';
  private readonly now: () => number;
  /** When the last full host reading finished (ms), and whether a sample found it outdated. */
  private hostReadAt: number | undefined;
  private hostOutdated = false;
  /** When port states were last read, by a full reading or a sample (ms). */
  private statesReadAt: number | undefined;
  private readingHost = false;

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

  /** Unix time (ms) at which port states were last read; undefined before the first full reading. */
  get lastReadingAt(): number | undefined {
    return this.statesReadAt;
  }

  /** The last full host reading is younger than `maxAgeMs` and no sample found it outdated since. */
  hostFresh(maxAgeMs: number): boolean {
    return this.hostReadAt !== undefined && !this.hostOutdated && this.now() - this.hostReadAt < maxAgeMs;
  }

  /**
   * One full sysfs + IPoIB reading. Reads are synchronous; the event loop gets a turn between
   * devices. Results are dropped when `signal` aborted (deadline passed).
   */
  async collectHost(signal?: AbortSignal): Promise<void> {
    const { files, devices: filter } = this.options;
    this.readingHost = true;
    try {
      files.beginPass();
      const sysfsStart = performance.now();
      const listing = listInfinibandDevices(files, filter);
      const devices: Device[] = [];
      const errors: ReadError[] = [];
      for (const name of [...this.identities.keys()]) if (!listing.names.includes(name)) this.forgetDevice(name);
      for (const [index, name] of listing.names.entries()) {
        if (index > 0) await yieldToEventLoop();
        if (signal?.aborted) return;
        const identityErrors: ReadError[] = [];
        let known = this.knownIdentity(name, identityErrors);
        let reading = known && readDevice(files, known.identity);
        // Errors against a layout read in an earlier pass may only say that the layout changed (a
        // counters/ directory that is a file now): read the identity again and judge against it.
        if (known && reading && reading.errors.length > 0 && !known.readNow) {
          known.stale = true;
          known = this.knownIdentity(name, identityErrors);
          reading = known && readDevice(files, known.identity);
        }
        errors.push(...identityErrors);
        if (!known || !reading) continue;
        known.readNow = false;
        errors.push(...reading.errors);
        if (!reading.device) {
          this.forgetDevice(name);
          continue;
        }
        if (reading.errors.length > 0) known.stale = true;
        devices.push(reading.device);
      }
      const sysfsSeconds = (performance.now() - sysfsStart) / 1000;
      const ipoibStart = performance.now();
      const ipoib = this.readIpoib(devices);
      // Only hosts with an affected adapter ever run ethtool (see infiniband/tso-erratum.ts).
      const affected = new Set(devices.filter(hasTsoErratum).map((device) => device.name));
      const tsoInterfaces = ipoib.interfaces.filter((iface) => iface.device !== undefined && affected.has(iface.device)).map((iface) => iface.name);
      const tso = tsoInterfaces.length === 0 ? { readings: new Map<string, TsoReading>(), errors: [], ran: new Set<string>() } : await readTcpSegmentationOffload(this.options.ethtool, tsoInterfaces, signal);
      const ipoibSeconds = (performance.now() - ipoibStart) / 1000;
      if (signal?.aborted) return;

      const finishedAt = this.now();
      this.devices = devices;
      this.ipoib = ipoib.interfaces;
      this.tso = tso.readings;
      this.hostReadAt = finishedAt;
      this.statesReadAt = finishedAt;
      this.hostOutdated = false;
      this.hostCycleDone();
      this.countStateChanges(devices);
      if (listing.failure === undefined) this.noteDeviceList(listing.names);
      if (!this.announcedNoDevices && listing.failure === undefined) {
        this.announcedNoDevices = true;
        if (devices.length === 0) {
          this.options.logger.info({ path: files.resolve('class/infiniband') }, 'no InfiniBand devices found; serving the exporter\'s own metrics only');
        } else {
          this.options.logger.info({ devices: devices.map((device) => device.name) }, `found ${devices.length} InfiniBand device(s)`);
        }
      }
      const devicesRead = new Set(devices.map((device) => device.name));
      this.finish({ collector: 'sysfs', failure: listing.failure, errors, durationSeconds: sysfsSeconds, finishedAt: finishedAt / 1000, read: readUnder(INFINIBAND_CLASS, devicesRead) });
      const interfacesRead = readUnder(NET_CLASS, new Set(this.interfaces.keys()));
      this.finish({
        collector: 'ipoib',
        failure: ipoib.failure,
        errors: [...ipoib.errors, ...tso.errors],
        durationSeconds: ipoibSeconds,
        finishedAt: finishedAt / 1000,
        // ethtool's items are its command lines: read when it ran for that interface this time.
        read: (item) => (tso.ran.has(item) ? true : interfacesRead(item) && !item.startsWith('ethtool ')),
      });
      this.publish();
    } finally {
      this.readingHost = false;
    }
  }

  /**
   * The IPoIB interfaces: carriers every reading, identities when new, due, read with errors, after
   * their carrier changed, or when the InfiniBand devices changed (the HCA ports they map to).
   */
  private readIpoib(devices: readonly Device[]): { interfaces: IpoibInterface[]; errors: ReadError[]; failure: string | undefined } {
    const { files } = this.options;
    const listing = listInterfaces(files);
    const errors: ReadError[] = [];
    const interfaces: IpoibInterface[] = [];
    const names = new Set(listing.names);
    for (const name of [...this.interfaces.keys()]) if (!names.has(name)) this.forgetInterface(name);
    const devicesChanged = devices.length !== this.devices.length || devices.some((device, i) => device.name !== this.devices[i]?.name || device.ports.length !== this.devices[i]?.ports.length);
    let placement: HcaPlacement | undefined;
    for (const name of listing.names) {
      let known = this.interfaces.get(name);
      if (!known || known.stale || devicesChanged || this.now() - known.readAt >= IDENTITY_MAX_AGE_MS) {
        placement ??= placeHcas(files, devices);
        const reading = readInterfaceIdentity(files, name, placement);
        errors.push(...reading.errors);
        if (!reading.identity) {
          this.forgetInterface(name);
          continue;
        }
        known = { identity: reading.identity, readAt: this.now(), stale: reading.errors.length > 0, carrier: known?.carrier };
        this.interfaces.set(name, known);
      }
      if (!known.identity.ipoib) continue;
      const carrier = readCarrier(files, name);
      if (carrier === undefined) {
        this.forgetInterface(name);
        continue;
      }
      // Up or down again: it may have come back with other settings (mode, MTU).
      if (known.carrier !== undefined && carrier !== known.carrier) known.stale = true;
      known.carrier = carrier;
      interfaces.push({ ...known.identity.settings, carrier });
    }
    return { interfaces, errors, failure: listing.failure };
  }

  /** The identity of `name`, read again when it is due; undefined when the device vanished. */
  private knownIdentity(name: string, errors: ReadError[]): KnownIdentity | undefined {
    const known = this.identities.get(name);
    if (known && !known.stale && this.now() - known.readAt < IDENTITY_MAX_AGE_MS) return known;
    const reading = readDeviceIdentity(this.options.files, name);
    errors.push(...reading.errors);
    if (!reading.identity) {
      this.forgetDevice(name);
      return undefined;
    }
    const fresh: KnownIdentity = { identity: reading.identity, readAt: this.now(), stale: reading.errors.length > 0, readNow: true };
    this.identities.set(name, fresh);
    return fresh;
  }

  /** A device that went away: its identity, and the files kept open for it. */
  private forgetDevice(name: string): void {
    this.identities.delete(name);
    this.options.files.release(`${INFINIBAND_CLASS}/${name}`);
  }

  /** An interface that went away: what is known of it, and its carrier file kept open. */
  private forgetInterface(name: string): void {
    this.interfaces.delete(name);
    this.options.files.release(`${NET_CLASS}/${name}`);
  }

  /** Close the files kept open between readings (the exporter is stopping). */
  close(): void {
    this.options.files.close();
  }

  /**
   * Read the state and physical state of every known port, and count logical state changes. A
   * change, or a device that appeared or vanished, makes the next scrape read the host again.
   * Skipped while a full reading runs (it reads the states itself) and shortly after one.
   */
  sampleStates(minimumAgeMs = 0): void {
    if (this.readingHost || this.hostReadAt === undefined) return;
    if (this.statesReadAt !== undefined && this.now() - this.statesReadAt < minimumAgeMs) return;
    const { files, devices: filter } = this.options;
    files.beginPass();
    const listing = listInfinibandDevices(files, filter);
    const known = this.devices.map((device) => device.name);
    if (listing.names.length !== known.length || listing.names.some((name, i) => name !== known[i])) this.hostOutdated = true;
    if (listing.failure === undefined) this.noteDeviceList(listing.names);
    for (const name of listing.names) {
      const entry = this.identities.get(name);
      if (!entry) continue;
      for (const sample of readPortStates(files, entry.identity)) {
        const key = portKey(sample.device, sample.port);
        const state = sample.state?.id;
        const before = this.lastState.get(key);
        if (state === undefined || before === undefined || state === before) continue;
        this.lastState.set(key, state);
        this.stateChanges.set(key, (this.stateChanges.get(key) ?? 0) + 1);
        entry.stale = true;
        this.hostOutdated = true;
      }
    }
    this.statesReadAt = this.now();
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
    let targets = this.diagTargets();
    if (targets.size > 0 && this.options.freshHost) {
      await this.options.freshHost();
      targets = this.diagTargets();
    }
    const reading = await readDiag(this.devices, { ...options, signal }, targets);
    if (signal?.aborted) return;
    const finishedAt = this.now() / 1000;
    this.diag = new Map(reading.ports.map((port) => [portKey(port.device, port.port), port]));
    for (const [command, result] of reading.collectors) {
      for (let i = 0; i < result.timeouts; i++) this.countTimeout(command);
      this.finish({ collector: command, errors: result.errors, durationSeconds: result.durationSeconds, finishedAt, failed: result.errors.length > 0, read: (item) => result.ran.has(item) });
    }
    this.publish();
  }

  /**
   * The ports the diag tools can query: linked InfiniBand ports with a umad device. Ports left
   * out for want of one are named in the log once, and again whenever that set changes.
   */
  private diagTargets(): ReadonlySet<string> {
    const umad = readUmadPorts(this.options.files);
    const targets = new Set<string>();
    const skipped: string[] = [];
    for (const device of this.devices) {
      for (const port of device.ports.filter(isQueriedPort)) {
        const key = portKey(device.name, port.port);
        if (umad.ports.has(key)) targets.add(key);
        else skipped.push(key);
      }
    }
    const summary = skipped.join(' ');
    if (summary !== this.announcedDiagSkips) {
      this.announcedDiagSkips = summary;
      if (skipped.length > 0) {
        this.options.logger.info({ ports: skipped, reason: umad.reason }, 'diag collector skips these linked ports: they have no umad device, so infiniband-diags cannot reach the fabric through them');
      } else {
        this.options.logger.info('diag collector queries every linked InfiniBand port');
      }
    }
    return targets;
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
      this.finish({ collector, errors: [error], durationSeconds: deadlineMs / 1000, finishedAt: this.reports.get(collector)?.finishedAt ?? 0, failed: true, read: nothingRead });
    }
    this.publish();
  }

  /** Count a command that was killed at its timeout. */
  countTimeout(command: CommandName): void {
    this.commandTimeouts.set(command, (this.commandTimeouts.get(command) ?? 0) + 1);
  }

  /** Record the end of a cycle of one collector (used by every source, sysfs, diag and fabric alike). */
  finish(end: CycleEnd): void {
    const { collector, failure, errors, durationSeconds, finishedAt } = end;
    const all = failure === undefined ? errors : [...errors, { collector, item: 'collector', message: failure }];
    const success = failure === undefined && !end.failed;
    this.reports.set(collector, { collector, success, durationSeconds, finishedAt, errors: all });
    this.readErrors.set(collector, (this.readErrors.get(collector) ?? 0) + all.length);
    this.options.errors.cycle(collector, all, end.read);
  }

  /**
   * One log line for devices that appeared or disappeared since the last listing (the first
   * listing is announced by the first full reading). Called by full readings and state samples,
   * whichever sees the change first.
   */
  private noteDeviceList(names: readonly string[]): void {
    const before = this.listedDevices;
    this.listedDevices = names;
    if (before === undefined) return;
    const appeared = names.filter((name) => !before.includes(name));
    const disappeared = before.filter((name) => !names.includes(name));
    if (appeared.length > 0) this.options.logger.info({ devices: appeared }, `InfiniBand device${appeared.length === 1 ? '' : 's'} appeared: ${appeared.join(', ')}`);
    if (disappeared.length > 0) this.options.logger.warn({ devices: disappeared }, `InfiniBand device${disappeared.length === 1 ? '' : 's'} disappeared: ${disappeared.join(', ')}`);
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
        if (before !== undefined && before !== state) {
          this.stateChanges.set(key, this.stateChanges.get(key)! + 1);
          // The subnet manager may have set the port up differently (SM SL, LMC, capabilities).
          const known = this.identities.get(device.name);
          if (known) known.stale = true;
        }
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

/** How a collector's cycle ended, for `Collection.finish`. */
export interface CycleEnd {
  collector: CollectorName;
  /** The collector could not run at all (its class directory unreadable). */
  failure?: string | undefined;
  errors: readonly ReadError[];
  durationSeconds: number;
  /** Unix time, seconds. */
  finishedAt: number;
  /** Part of the cycle's data is missing (a command failed, output cut short), whatever `failure` says. */
  failed?: boolean;
  /** The items the cycle read: an earlier error of another item is not "works again" but gone. */
  read?: ItemsRead;
}

const nothingRead: ItemsRead = () => false;

/**
 * Items under `<root>/<name>/` were read when `name` (a device, an interface) was; other items
 * (the class directory itself, a cut-off cycle) always are.
 */
function readUnder(root: string, names: ReadonlySet<string>): ItemsRead {
  const prefix = `${root}/`;
  return (item) => !item.startsWith(prefix) || names.has(item.slice(prefix.length).split('/', 1)[0]!);
}
