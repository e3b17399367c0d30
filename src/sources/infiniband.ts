// The sysfs source: /sys/class/infiniband/<device>/… into Device and Port records. It never throws
// for one bad file, port or device: the failure is recorded against that item and the rest is read.
import { normaliseGuid, portGuidFromGid } from '../infiniband/guid.js';
import { parseLinkRate } from '../infiniband/link-rate.js';
import {
  LEGACY_EXTENDED_FILES,
  PMA_COUNTER_BY_FILE,
  PMA_COUNTERS,
  counterMaximum,
  isNoPmaText,
  parseCounterValue,
  type PmaCounter,
} from '../infiniband/pma-counters.js';
import { parsePhysicalState, parsePortState } from '../infiniband/port-state.js';
import type { Device, Port, PortCounter, ReadError } from '../snapshot/types.js';
import { deviceSelected, type DeviceFilter } from './device-filter.js';
import { mapLimited } from './concurrency.js';
import type { SysfsFiles } from './sysfs-files.js';

export const INFINIBAND_CLASS = 'class/infiniband';

export interface InfinibandReading {
  devices: Device[];
  errors: ReadError[];
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
  readonly errors: ReadError[] = [];

  constructor(
    private readonly files: SysfsFiles,
    readonly base: string,
  ) {}

  private fail(relative: string, message: string): undefined {
    this.errors.push({ collector: 'sysfs', item: `${this.base}/${relative}`, message });
    return undefined;
  }

  /** Read and parse one attribute; absent files are silently undefined (optional attributes). */
  async attribute<T>(relative: string, parse: Parser<T>, expected: string): Promise<T | undefined> {
    const result = await this.files.read(`${this.base}/${relative}`);
    if (!result.ok) return result.failure.kind === 'missing' ? undefined : this.fail(relative, result.failure.message);
    const value = parse(result.text);
    return value === undefined ? this.fail(relative, `unexpected content ${excerpt(result.text)}, expected ${expected}`) : value;
  }

  async text(relative: string): Promise<string | undefined> {
    return this.attribute(relative, parseLine, 'text');
  }

  /** Counter files: `N/A (no PMA)` (legacy kernels) means no value, not an error. */
  async counter(relative: string): Promise<bigint | undefined> {
    const result = await this.files.read(`${this.base}/${relative}`);
    if (!result.ok) return result.failure.kind === 'missing' ? undefined : this.fail(relative, result.failure.message);
    if (isNoPmaText(result.text)) return undefined;
    const value = parseCounterValue(result.text);
    return value === undefined ? this.fail(relative, `unexpected content ${excerpt(result.text)}, expected an unsigned decimal`) : value;
  }

  async list(relative: string, directoriesOnly = false): Promise<string[] | undefined> {
    const result = await this.files.list(`${this.base}/${relative}`, { directoriesOnly });
    if (result.ok) return result.names;
    return result.failure.kind === 'missing' ? undefined : this.fail(relative, result.failure.message);
  }
}

export async function readInfinibandClass(files: SysfsFiles, filter: DeviceFilter): Promise<InfinibandReading> {
  const listing = await files.list(INFINIBAND_CLASS);
  if (!listing.ok) {
    // No InfiniBand stack loaded is a normal host, not a failure.
    if (listing.failure.kind === 'missing') return { devices: [], errors: [], failure: undefined };
    return { devices: [], errors: [], failure: `cannot list ${files.resolve(INFINIBAND_CLASS)}: ${listing.failure.message}` };
  }
  const selected = listing.names.filter((name) => deviceSelected(name, filter));
  const readings = await mapLimited(selected, 8, (name) => readDevice(files, name));
  const devices: Device[] = [];
  const errors: ReadError[] = [];
  for (const reading of readings) {
    errors.push(...reading.errors);
    if (reading.device) devices.push(reading.device);
  }
  return { devices, errors, failure: undefined };
}

async function readDevice(files: SysfsFiles, name: string): Promise<{ device: Device | undefined; errors: ReadError[] }> {
  const reader = new DeviceReader(files, `${INFINIBAND_CLASS}/${name}`);
  const [nodeType, nodeGuid, sysImageGuid, firmwareVersion, hcaType, boardId, hwRev, nodeDesc, portNames] = await Promise.all([
    reader.attribute('node_type', parseNodeType, 'like "1: CA"'),
    reader.attribute('node_guid', normaliseGuid, 'a GUID like "0002:c903:0031:fdc0"'),
    reader.attribute('sys_image_guid', normaliseGuid, 'a GUID like "0002:c903:0031:fdc3"'),
    reader.text('fw_ver'),
    reader.text('hca_type'),
    reader.text('board_id'),
    reader.text('hw_rev'),
    reader.text('node_desc'),
    reader.list('ports', true),
  ]);
  const ports: Port[] = [];
  for (const portName of portNames ?? []) {
    if (!/^\d{1,3}$/.test(portName)) continue;
    ports.push(await readPort(reader, name, Number(portName)));
  }
  // Hot-unplugged while it was read: what was read is partial (absent files are not errors), so
  // the device is simply gone. Still there after every read means every read saw it present.
  // Not a directory at all (ENOTDIR): no device either, but a broken tree, so its errors stay.
  const still = await files.list(reader.base);
  if (!still.ok) return { device: undefined, errors: still.failure.kind === 'missing' ? [] : reader.errors };
  const device: Device = { name, nodeType, nodeGuid, sysImageGuid, firmwareVersion, hcaType, boardId, hwRev, nodeDesc, ports };
  return { device, errors: reader.errors };
}

async function readPort(reader: DeviceReader, device: string, port: number): Promise<Port> {
  const dir = `ports/${port}`;
  const [state, physicalState, rate, lid, smLid, smSl, lmc, capabilityMask, linkLayer, gid0, counters, hwCounters] = await Promise.all([
    reader.attribute(`${dir}/state`, parsePortState, 'like "4: ACTIVE"'),
    reader.attribute(`${dir}/phys_state`, parsePhysicalState, 'like "5: LinkUp"'),
    reader.attribute(`${dir}/rate`, parseLinkRate, 'like "100 Gb/sec (4X EDR)"'),
    reader.attribute(`${dir}/lid`, parseHex, 'hex like "0x1a"'),
    reader.attribute(`${dir}/sm_lid`, parseHex, 'hex like "0x1"'),
    reader.attribute(`${dir}/sm_sl`, parseSmallDecimal, 'a decimal'),
    reader.attribute(`${dir}/lid_mask_count`, parseSmallDecimal, 'a decimal'),
    reader.attribute(`${dir}/cap_mask`, parseHex, 'hex like "0x2651e848"'),
    reader.text(`${dir}/link_layer`),
    readGid0(reader, dir),
    readPmaCounters(reader, dir),
    readHwCounters(reader, `${dir}/hw_counters`),
  ]);
  return {
    device,
    port,
    linkLayer,
    portGuid: gid0 === undefined ? undefined : portGuidFromGid(gid0),
    state,
    physicalState,
    rateGbps: rate?.gbps,
    width: rate?.width,
    speed: rate?.speed,
    lid,
    smLid,
    smSl,
    lmc,
    capabilityMask,
    counters,
    hwCounters,
  };
}

async function readGid0(reader: DeviceReader, dir: string): Promise<string | undefined> {
  // Some drivers refuse to show unused GID entries; the port GUID is then simply unknown.
  const result = await reader.list(`${dir}/gids`);
  return result?.includes('0') ? reader.text(`${dir}/gids/0`) : undefined;
}

async function readPmaCounters(reader: DeviceReader, dir: string): Promise<PortCounter[]> {
  const [names, legacyNames] = await Promise.all([reader.list(`${dir}/counters`), reader.list(`${dir}/counters_ext`)]);
  const raw = new Map<string, bigint>();
  const fromLegacy = new Set<string>();
  await Promise.all([
    ...(names ?? [])
      .filter((file) => PMA_COUNTER_BY_FILE.has(file))
      .map(async (file) => {
        const value = await reader.counter(`${dir}/counters/${file}`);
        if (value !== undefined && !fromLegacy.has(file)) raw.set(file, value);
      }),
    ...(legacyNames ?? [])
      .filter((file) => LEGACY_EXTENDED_FILES.has(file))
      .map(async (file) => {
        const value = await reader.counter(`${dir}/counters_ext/${file}`);
        if (value === undefined) return;
        const target = LEGACY_EXTENDED_FILES.get(file)!;
        raw.set(target, value);
        fromLegacy.add(target);
      }),
  ]);
  return pmaCountersFromRaw(raw, fromLegacy);
}

/**
 * Turn raw counter values into exported counters. The width of the data and packet counters
 * depends on the table the kernel chose for the port: 64-bit when the extended table is in use
 * (unicast/multicast files present, legacy `counters_ext/`, or any value beyond 32 bits), else 32.
 */
export function pmaCountersFromRaw(raw: ReadonlyMap<string, bigint>, fromLegacy: ReadonlySet<string> = new Set()): PortCounter[] {
  const max32 = counterMaximum(32);
  const extendedTable =
    raw.has('unicast_xmit_packets') ||
    raw.has('unicast_rcv_packets') ||
    PMA_COUNTERS.some((counter) => counter.tableDependent && (fromLegacy.has(counter.file) || (raw.get(counter.file) ?? 0n) > max32));
  const exported: PortCounter[] = [];
  for (const counter of PMA_COUNTERS) {
    const value = raw.get(counter.file);
    if (value === undefined) continue;
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

async function readHwCounters(reader: DeviceReader, dir: string): Promise<Map<string, number>> {
  const names = (await reader.list(dir)) ?? [];
  const values = new Map<string, number>();
  await Promise.all(
    names
      .filter((name) => name !== 'lifespan')
      .map(async (name) => {
        const value = await reader.counter(`${dir}/${name}`);
        if (value !== undefined) values.set(name, Number(value));
      }),
  );
  return new Map([...values].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
