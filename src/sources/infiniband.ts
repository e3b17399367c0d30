// The sysfs source: /sys/class/infiniband/<device>/… into Device and Port records. It never throws
// for one bad file, port or device: the failure is recorded against that item and the rest is read.
//
// A device is read in two parts, so the collection can read each as often as it needs:
//   identity  what changes rarely: node type, GUIDs, firmware, board, description, and per port the
//             link layer, port GUID, SM SL, LMC, capability mask, and which counter files exist;
//   state     per port `state` and `phys_state`, sampled often so that flaps are counted;
//   device    the rest, read when a scrape needs it: state, rate, LIDs, PMA and hw counters.
import { normaliseGuid, portGuidFromGid } from '../model/guid.js';
import { parseLinkRate } from '../model/link-rate.js';
import {
  LEGACY_EXTENDED_FILES,
  PMA_COUNTER_BY_FILE,
  PMA_COUNTERS,
  counterMaximum,
  isNoPmaText,
  parseCounterValue,
  type PmaCounter,
} from '../model/pma-counters.js';
import { parsePhysicalState, parsePortState, type PhysicalStateName, type PortStateName, type StateReading } from '../model/port-state.js';
import type { Device, Port, PortCounter } from '../model/host.js';
import type { ItemError } from '../model/snapshot.js';
import { deviceSelected, type DeviceFilter } from './device-filter.js';
import type { ReadResult } from './sysfs-attribute.js';
import type { SysfsFiles } from './sysfs-files.js';

export const INFINIBAND_CLASS = 'class/infiniband';

/** Rarely-changing facts of a port, and the counter files it has. */
export interface PortLayout {
  port: number;
  linkLayer: string | undefined;
  portGuid: string | undefined;
  smSl: number | undefined;
  lmc: number | undefined;
  capabilityMask: number | undefined;
  /** Known PMA counter files in `counters/`. */
  counterFiles: readonly string[];
  /** Known legacy 64-bit files in `counters_ext/` (pre-4.5 kernels, MLNX_OFED). */
  legacyCounterFiles: readonly string[];
  /** Files of `hw_counters/` but `lifespan`, in byte order. */
  hwCounterFiles: readonly string[];
}

/** Rarely-changing facts of a device, with the layout of its ports. */
export interface DeviceIdentity extends Omit<Device, 'ports'> {
  ports: readonly PortLayout[];
}

export interface IdentityReading {
  /** Undefined when the device vanished while it was read. */
  identity: DeviceIdentity | undefined;
  errors: ItemError[];
}

export interface DeviceReading {
  /** Undefined when the device vanished while it was read (or is not a directory any more). */
  device: Device | undefined;
  errors: ItemError[];
}

/** One port's logical and physical state, as sampled between full readings. */
export interface PortStateSample {
  device: string;
  port: number;
  state: StateReading<PortStateName> | undefined;
  physicalState: StateReading<PhysicalStateName> | undefined;
}

export interface InfinibandReading {
  devices: Device[];
  errors: ItemError[];
  /** Set when the class directory itself could not be read: the whole collector failed. */
  failure: string | undefined;
}

/** Parse helpers return undefined for text they do not understand; the caller reports it. */
type Parser<T> = (text: string) => T | undefined;

const parseHex: Parser<number> = (text) => (/^\s*0x[0-9a-f]{1,8}\s*$/i.test(text) ? Number.parseInt(text, 16) : undefined);
const parseSmallDecimal: Parser<number> = (text) => (/^\s*\d{1,9}\s*$/.test(text) ? Number(text) : undefined);
const parseLine: Parser<string> = (text) => text.replace(/\s+$/, '');
/** `node_type` is "1: CA"; the name after the colon is exported. */
const parseNodeType: Parser<string> = (text) => /^\s*\d+\s*:\s*(.+?)\s*$/.exec(text)?.[1];

/** Printable excerpt of unexpected content for an error message. */
function excerpt(text: string): string {
  const short = text.length > 40 ? `${text.slice(0, 40)}…` : text;
  return JSON.stringify(short);
}

/** Reads files of one device, collecting errors with their sysfs-relative path. */
class DeviceReader {
  readonly errors: ItemError[] = [];
  readonly base: string;

  /** `keep`: the files are read every pass (states, counters), so they may be kept open. */
  constructor(
    private readonly files: SysfsFiles,
    readonly name: string,
    private readonly keep = false,
  ) {
    this.base = `${INFINIBAND_CLASS}/${name}`;
  }

  private fail(relative: string, message: string): undefined {
    this.errors.push({ item: `${this.base}/${relative}`, message });
    return undefined;
  }

  /** Read and parse one attribute; absent files are silently undefined (optional attributes). */
  attribute<T>(relative: string, parse: Parser<T>, expected: string): T | undefined {
    const result = this.files.read(`${this.base}/${relative}`, this.keep);
    if (!result.ok) return result.failure.kind === 'missing' ? undefined : this.fail(relative, result.failure.message);
    const value = parse(result.text);
    return value === undefined ? this.fail(relative, `unexpected content ${excerpt(result.text)}, expected ${expected}`) : value;
  }

  text(relative: string): string | undefined {
    return this.attribute(relative, parseLine, 'text');
  }

  /**
   * The counter files `names` of `directory`, by index: `N/A (no PMA)` (legacy kernels) means no
   * value, not an error.
   */
  counters(directory: string, names: readonly string[]): (bigint | undefined)[] {
    const values = new Array<bigint | undefined>(names.length);
    const others: { index: number; result: ReadResult }[] = [];
    this.files.readDecimals(`${this.base}/${directory}`, names, this.keep, values, others);
    for (const { index, result } of others) values[index] = this.judgeCounter(`${directory}/${names[index]!}`, result);
    return values;
  }

  /** A counter file that did not read as a plain decimal: absent, no PMA, a decimal after all, or an error. */
  private judgeCounter(relative: string, result: ReadResult): bigint | undefined {
    if (!result.ok) return result.failure.kind === 'missing' ? undefined : this.fail(relative, result.failure.message);
    if (isNoPmaText(result.text)) return undefined;
    const value = parseCounterValue(result.text);
    return value === undefined ? this.fail(relative, `unexpected content ${excerpt(result.text)}, expected an unsigned decimal`) : value;
  }

  list(relative: string, directoriesOnly = false): string[] | undefined {
    const result = this.files.list(`${this.base}/${relative}`, { directoriesOnly });
    if (result.ok) return result.names;
    return result.failure.kind === 'missing' ? undefined : this.fail(relative, result.failure.message);
  }

  /**
   * Still there after every read means every read saw it present: a device hot-unplugged while it
   * was read gave a partial reading (absent files are not errors), so it is simply gone. Not a
   * directory at all (ENOTDIR): no device either, but a broken tree, so its errors stay.
   */
  present(): { present: boolean; errors: ItemError[] } {
    const still = this.files.directoryPresent(this.base);
    if (still.ok) return { present: true, errors: this.errors };
    return { present: false, errors: still.failure.kind === 'missing' ? [] : this.errors };
  }
}

/** The devices of the class directory that pass the filter; a missing directory is no devices. */
export function listInfinibandDevices(files: SysfsFiles, filter: DeviceFilter): { names: string[]; failure: string | undefined } {
  const listing = files.list(INFINIBAND_CLASS, { keep: true });
  if (!listing.ok) {
    // No InfiniBand stack loaded is a normal host, not a failure.
    if (listing.failure.kind === 'missing') return { names: [], failure: undefined };
    return { names: [], failure: `cannot list ${files.resolve(INFINIBAND_CLASS)}: ${listing.failure.message}` };
  }
  return { names: listing.names.filter((name) => deviceSelected(name, filter)), failure: undefined };
}

/** Read everything of every selected device at once, without the collection's caching (the readers' tests). */
export function readInfinibandClass(files: SysfsFiles, filter: DeviceFilter): InfinibandReading {
  const { names, failure } = listInfinibandDevices(files, filter);
  const devices: Device[] = [];
  const errors: ItemError[] = [];
  for (const name of names) {
    const first = readDeviceIdentity(files, name);
    if (!first.identity) {
      errors.push(...first.errors);
      continue;
    }
    const reading = readDevice(files, first.identity);
    if (reading.device) {
      devices.push(reading.device);
      errors.push(...first.errors);
    }
    errors.push(...reading.errors);
  }
  return { devices, errors, failure };
}

/** The rarely-changing part of a device. */
export function readDeviceIdentity(files: SysfsFiles, name: string): IdentityReading {
  const reader = new DeviceReader(files, name);
  const nodeType = reader.attribute('node_type', parseNodeType, 'like "1: CA"');
  const nodeGuid = reader.attribute('node_guid', normaliseGuid, 'a GUID like "0002:c903:0031:fdc0"');
  const sysImageGuid = reader.attribute('sys_image_guid', normaliseGuid, 'a GUID like "0002:c903:0031:fdc3"');
  const firmwareVersion = reader.text('fw_ver');
  const hcaType = reader.text('hca_type');
  const boardId = reader.text('board_id');
  const hwRev = reader.text('hw_rev');
  const nodeDesc = reader.text('node_desc');
  const ports: PortLayout[] = [];
  for (const portName of reader.list('ports', true) ?? []) {
    if (!/^\d{1,3}$/.test(portName)) continue;
    ports.push(readPortLayout(reader, Number(portName)));
  }
  const { present, errors } = reader.present();
  const identity: DeviceIdentity = { name, nodeType, nodeGuid, sysImageGuid, firmwareVersion, hcaType, boardId, hwRev, nodeDesc, ports };
  return { identity: present ? identity : undefined, errors };
}

function readPortLayout(reader: DeviceReader, port: number): PortLayout {
  const dir = `ports/${port}`;
  const smSl = reader.attribute(`${dir}/sm_sl`, parseSmallDecimal, 'a decimal');
  const lmc = reader.attribute(`${dir}/lid_mask_count`, parseSmallDecimal, 'a decimal');
  const capabilityMask = reader.attribute(`${dir}/cap_mask`, parseHex, 'hex like "0x2651e848"');
  const linkLayer = reader.text(`${dir}/link_layer`);
  // Some drivers refuse to show unused GID entries; the port GUID is then simply unknown.
  const gid0 = reader.list(`${dir}/gids`)?.includes('0') ? reader.text(`${dir}/gids/0`) : undefined;
  const counterFiles = (reader.list(`${dir}/counters`) ?? []).filter((file) => PMA_COUNTER_BY_FILE.has(file));
  const legacyCounterFiles = (reader.list(`${dir}/counters_ext`) ?? []).filter((file) => LEGACY_EXTENDED_FILES.has(file));
  const hwCounterFiles = (reader.list(`${dir}/hw_counters`) ?? [])
    .filter((file) => file !== 'lifespan')
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return {
    port,
    linkLayer,
    portGuid: gid0 === undefined ? undefined : portGuidFromGid(gid0),
    smSl,
    lmc,
    capabilityMask,
    counterFiles,
    legacyCounterFiles,
    hwCounterFiles,
  };
}

/** The logical and physical state of every port of a device (unreadable ones left out). */
export function readPortStates(files: SysfsFiles, identity: DeviceIdentity): PortStateSample[] {
  const reader = new DeviceReader(files, identity.name, true);
  return identity.ports.map(({ port }) => ({
    device: identity.name,
    port,
    state: reader.attribute(`ports/${port}/state`, parsePortState, 'like "4: ACTIVE"'),
    physicalState: reader.attribute(`ports/${port}/phys_state`, parsePhysicalState, 'like "5: LinkUp"'),
  }));
}

/** Everything that changes of a device whose identity was read, joined with that identity. */
export function readDevice(files: SysfsFiles, identity: DeviceIdentity): DeviceReading {
  const reader = new DeviceReader(files, identity.name, true);
  const ports = identity.ports.map((layout) => readPort(reader, identity.name, layout));
  const { present, errors } = reader.present();
  if (!present) return { device: undefined, errors };
  const { ports: _layouts, ...facts } = identity;
  return { device: { ...facts, ports }, errors };
}

function readPort(reader: DeviceReader, device: string, layout: PortLayout): Port {
  const dir = `ports/${layout.port}`;
  const state = reader.attribute(`${dir}/state`, parsePortState, 'like "4: ACTIVE"');
  const physicalState = reader.attribute(`${dir}/phys_state`, parsePhysicalState, 'like "5: LinkUp"');
  const rate = reader.attribute(`${dir}/rate`, parseLinkRate, 'like "100 Gb/sec (4X EDR)"');
  const lid = reader.attribute(`${dir}/lid`, parseHex, 'hex like "0x1a"');
  const smLid = reader.attribute(`${dir}/sm_lid`, parseHex, 'hex like "0x1"');
  const counters = readPmaCounters(reader, dir, layout);
  const hwCounters = new Map<string, number>();
  if (layout.hwCounterFiles.length > 0) {
    const values = reader.counters(`${dir}/hw_counters`, layout.hwCounterFiles);
    for (let i = 0; i < values.length; i++) if (values[i] !== undefined) hwCounters.set(layout.hwCounterFiles[i]!, Number(values[i]));
  }
  return {
    device,
    port: layout.port,
    linkLayer: layout.linkLayer,
    portGuid: layout.portGuid,
    state,
    physicalState,
    rateGbps: rate?.gbps,
    width: rate?.width,
    speed: rate?.speed,
    lid,
    smLid,
    smSl: layout.smSl,
    lmc: layout.lmc,
    capabilityMask: layout.capabilityMask,
    counters,
    hwCounters,
  };
}

/** Index of each known counter file in PMA_COUNTERS. */
const PMA_INDEX: ReadonlyMap<string, number> = new Map(PMA_COUNTERS.map((counter, index) => [counter.file, index]));
const UNICAST_INDICES = ['unicast_xmit_packets', 'unicast_rcv_packets'].map((file) => PMA_INDEX.get(file)!);
const MAX_32 = counterMaximum(32);

function readPmaCounters(reader: DeviceReader, dir: string, layout: PortLayout): PortCounter[] {
  // Raw values by index in PMA_COUNTERS (an array, not a Map: this runs for every port at every
  // reading).
  const raw = new Array<bigint | undefined>(PMA_COUNTERS.length);
  let fromLegacy: Set<string> | undefined;
  if (layout.legacyCounterFiles.length > 0) {
    const values = reader.counters(`${dir}/counters_ext`, layout.legacyCounterFiles);
    for (let i = 0; i < values.length; i++) {
      const target = LEGACY_EXTENDED_FILES.get(layout.legacyCounterFiles[i]!)!;
      const index = PMA_INDEX.get(target);
      if (values[i] === undefined || index === undefined) continue;
      raw[index] = values[i];
      (fromLegacy ??= new Set()).add(target);
    }
  }
  const legacy = fromLegacy;
  const files = legacy === undefined ? layout.counterFiles : layout.counterFiles.filter((file) => !legacy.has(file));
  if (files.length > 0) {
    const values = reader.counters(`${dir}/counters`, files);
    for (let i = 0; i < values.length; i++) if (values[i] !== undefined) raw[PMA_INDEX.get(files[i]!)!] = values[i];
  }
  return exportPmaCounters(raw, legacy);
}

/**
 * Turn raw counter values (by index in PMA_COUNTERS) into exported counters. The width of the
 * data and packet counters depends on the table the kernel chose for the port: 64-bit when the
 * extended table is in use (unicast/multicast files present, legacy `counters_ext/`, or any value
 * beyond 32 bits), else 32.
 */
function exportPmaCounters(raw: readonly (bigint | undefined)[], fromLegacy: ReadonlySet<string> | undefined): PortCounter[] {
  let extendedTable = UNICAST_INDICES.some((index) => raw[index] !== undefined);
  for (let i = 0; i < PMA_COUNTERS.length && !extendedTable; i++) {
    const counter = PMA_COUNTERS[i]!;
    extendedTable = counter.tableDependent && (fromLegacy?.has(counter.file) === true || (raw[i] ?? 0n) > MAX_32);
  }
  const exported: PortCounter[] = [];
  for (let i = 0; i < PMA_COUNTERS.length; i++) {
    const value = raw[i];
    if (value === undefined) continue;
    const counter = PMA_COUNTERS[i]!;
    exported.push(exportCounter(counter, value, counter.tableDependent && extendedTable ? 64 : counter.bits));
  }
  return exported;
}

export function exportCounter(counter: PmaCounter, value: bigint, bits: number): PortCounter {
  return {
    name: counter.name,
    value: Number(value) * (counter.wordsToBytes ? 4 : 1),
    saturated: value === counterMaximum(bits),
  };
}
