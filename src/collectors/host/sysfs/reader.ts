// The sysfs collector's reader: every device and port under /sys/class/infiniband, sampling the
// port states between full readings (index.ts says how often each file is read).
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { REGEX, optionalFlag, type Section } from '../../../config/flags.js';
import { ExpectationRules, type ExpectationRule } from '../../../model/expectations.js';
import { EXPECTATIONS_SECTION } from '../../expectation-sections.js';
import type { LinkExpectation } from '../../../model/link-rate.js';
import { portKey, type Device } from '../../../model/host.js';
import { PORT_STATE_ACTIVE } from '../../../model/port-state.js';
import { plural } from '../../../model/finding.js';
import type { ItemError, Snapshot } from '../../../model/snapshot.js';
import type { DeviceFilter } from '../../../sources/device-filter.js';
import {
  INFINIBAND_CLASS,
  listInfinibandDevices,
  readDevice,
  readDeviceIdentity,
  readPortStates,
  type DeviceIdentity,
} from '../../../sources/infiniband.js';
import type { SysfsFiles } from '../../../sources/sysfs-files.js';
import type { CollectorContext, Reader, Reading } from '../../../collection/collector.js';
import { IDENTITY_MAX_AGE_MS, readUnder, sysfsFiles } from '../host-reading.js';
import type { SysfsPart } from '../../parts.js';

export const DEVICE_INCLUDE = optionalFlag(REGEX, {
  name: 'device.include',
  key: 'devices.include',
  help: 'Only devices whose name matches this regular expression.',
  check: true,
});
export const DEVICE_EXCLUDE = optionalFlag(REGEX, {
  name: 'device.exclude',
  key: 'devices.exclude',
  help: 'Skip devices whose name matches this regular expression (never read).',
  check: true,
});

/** `expectations` in the config file: what each host link should run at, first match wins. */
export const EXPECTATIONS: Section<readonly ExpectationRule[]> = EXPECTATIONS_SECTION;

interface KnownIdentity {
  identity: DeviceIdentity;
  readAt: number;
  /** A port changed state since it was read, or it was read with errors: read it again. */
  stale: boolean;
  /** Read in the full reading under way. */
  readNow: boolean;
}

export class SysfsReader implements Reader<SysfsPart> {
  private readonly files: SysfsFiles;
  private readonly filter: DeviceFilter;
  private readonly rules: ExpectationRules;
  private readonly identities = new Map<string, KnownIdentity>();
  private readonly lastState = new Map<string, number>();
  private readonly stateChanges = new Map<string, number>();
  private readonly linkUpAt = new Map<string, number>();
  /** The device names of the last reading, to tell when devices come or go. */
  private known: readonly string[] | undefined;

  constructor(private readonly context: CollectorContext) {
    const { settings } = context;
    this.files = sysfsFiles(context);
    this.filter = { include: settings.get(DEVICE_INCLUDE), exclude: settings.get(DEVICE_EXCLUDE) };
    this.rules = new ExpectationRules(settings.section(EXPECTATIONS));
  }

  async read(_snapshot: Snapshot, signal: AbortSignal): Promise<Reading<SysfsPart>> {
    const { files } = this;
    files.beginPass();
    const listing = listInfinibandDevices(files, this.filter);
    const devices: Device[] = [];
    const errors: ItemError[] = [];
    for (const name of [...this.identities.keys()]) if (!listing.names.includes(name)) this.forgetDevice(name);
    for (const [index, name] of listing.names.entries()) {
      // Reads are synchronous: the event loop gets a turn between devices.
      if (index > 0) await yieldToEventLoop();
      if (signal.aborted) return {};
      const identityErrors: ItemError[] = [];
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
    this.countStateChanges(devices);
    if (listing.failure === undefined) this.announce(listing.names);
    const configured = new Map<string, LinkExpectation>();
    for (const device of devices) {
      for (const port of device.ports) {
        const expectation = this.rules.forPort(device.name, port.port);
        if (expectation) configured.set(portKey(device.name, port.port), expectation);
      }
    }
    return {
      devices,
      part: { stateChanges: new Map(this.stateChanges), configured, linkUpAt: new Map(this.linkUpAt) },
      errors,
      // A device that went away is neither failing nor back.
      read: readUnder(INFINIBAND_CLASS, new Set(devices.map((device) => device.name))),
      ...(listing.failure !== undefined && { failure: listing.failure }),
    };
  }

  /**
   * One line when the devices are first found, and one whenever they change: by a full reading or a
   * sample, whichever sees it first.
   */
  private announce(names: readonly string[]): void {
    const before = this.known;
    this.known = names;
    const { logger } = this.context;
    if (before === undefined) {
      if (names.length === 0)
        logger.info({ path: this.files.resolve(INFINIBAND_CLASS) }, "no InfiniBand devices found; serving the exporter's own metrics only");
      else logger.info({ devices: names }, `found ${plural(names.length, 'InfiniBand device')}`);
      return;
    }
    const appeared = names.filter((name) => !before.includes(name));
    const vanished = before.filter((name) => !names.includes(name));
    if (appeared.length > 0)
      logger.info(
        { devices: appeared },
        `InfiniBand ${appeared.length === 1 ? 'device appeared' : 'devices appeared'}: ${appeared.join(', ')}`,
      );
    if (vanished.length > 0)
      logger.warn(
        { devices: vanished },
        `InfiniBand ${vanished.length === 1 ? 'device disappeared' : 'devices disappeared'}: ${vanished.join(', ')}`,
      );
  }

  /** The identity of `name`, read again when it is due; undefined when the device vanished. */
  private knownIdentity(name: string, errors: ItemError[]): KnownIdentity | undefined {
    const known = this.identities.get(name);
    if (known && !known.stale && this.context.now() - known.readAt < IDENTITY_MAX_AGE_MS) return known;
    const reading = readDeviceIdentity(this.files, name);
    errors.push(...reading.errors);
    if (!reading.identity) {
      this.forgetDevice(name);
      return undefined;
    }
    const fresh: KnownIdentity = {
      identity: reading.identity,
      readAt: this.context.now(),
      stale: reading.errors.length > 0,
      readNow: true,
    };
    this.identities.set(name, fresh);
    return fresh;
  }

  /** A device that went away: its identity, and the files kept open for it. */
  private forgetDevice(name: string): void {
    this.identities.delete(name);
    this.files.release(`${INFINIBAND_CLASS}/${name}`);
  }

  /**
   * The state of every known port, between full readings: counts logical state changes. A change,
   * or a device that appeared or vanished, makes the last reading out of date.
   */
  sample(): boolean {
    const { files } = this;
    files.beginPass();
    const listing = listInfinibandDevices(files, this.filter);
    const known = this.known ?? [];
    let outdated = listing.names.length !== known.length || listing.names.some((name, i) => name !== known[i]);
    if (listing.failure === undefined && this.known !== undefined) this.announce(listing.names);
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
        this.linkCameUp(key, state);
        entry.stale = true;
        outdated = true;
      }
    }
    return outdated;
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
          this.linkCameUp(key, state);
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
    for (const key of [...this.linkUpAt.keys()]) if (!present.has(key)) this.linkUpAt.delete(key);
  }

  /** A port that became ACTIVE came up now; one that left ACTIVE is no longer up. */
  private linkCameUp(key: string, state: number): void {
    if (state === PORT_STATE_ACTIVE) this.linkUpAt.set(key, this.context.now());
    else this.linkUpAt.delete(key);
  }

  close(): void {
    this.files.close();
  }
}

// ---- metrics ------------------------------------------------------------------------------
