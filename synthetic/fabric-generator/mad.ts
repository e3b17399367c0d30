// What the infiniband-diags tools print and store, as libibmad and the tools format it (rdma-core
// v44.0: libibmad/dump.c and fields.c, infiniband-diags/ibdiag_common.c, ibnetdiscover.c): the
// texts of widths, speeds and states, the human-readable counter values, GIDs as inet_ntop writes
// them, and the raw SMP attributes (NodeInfo, PortInfo) the discovery cache holds.
import type { LinkSpeed } from '../../src/model/link-rate.js';

/** LinkWidthActive/Enabled/Supported bits (IBA PortInfo): 1 1X, 2 4X, 4 8X, 8 12X, 16 2X. */
export const WIDTH_BITS = { 1: 1, 4: 2, 8: 4, 12: 8, 2: 16 } as const;
export type WidthBit = (typeof WIDTH_BITS)[keyof typeof WIDTH_BITS];

const WIDTH_TEXT: Readonly<Record<number, string>> = { 1: '1X', 2: '4X', 4: '8X', 8: '12X', 16: '2X' };
const WIDTH_COMPAT: Readonly<Record<number, string>> = { 1: '1x', 2: '4x', 4: '8x', 8: '12x', 16: '2x' };

/** mad_dump_linkwidth: `4X`. */
export function widthText(bit: number): string {
  return WIDTH_TEXT[bit] ?? `undefined (${bit})`;
}

/** ibnetdiscover's dump_linkwidth_compat: `4x`. */
export function widthCompat(bit: number): string {
  return WIDTH_COMPAT[bit] ?? '??';
}

/** The widest width of a mask, as iblinkinfo's get_max_width picks it. */
export function widestWidth(mask: number): number {
  if (mask & 8) return 8;
  if (mask & 4) return 4;
  if (mask & 2) return 2;
  if (mask & 0x10) return 16;
  return 1;
}

/** The highest bit of a mask (get_max). */
export function highestBit(mask: number): number {
  let bit = 1;
  while (mask > 1) {
    mask >>= 1;
    bit <<= 1;
  }
  return mask === 0 ? 1 : bit;
}

/** A speed as PortInfo encodes it: LinkSpeed (SDR–QDR) or LinkSpeedExt (FDR–NDR). */
export interface SpeedCode {
  /** LinkSpeedActive bit: 1 SDR, 2 DDR, 4 QDR (what the port reports beside an extended speed too). */
  legacy: number;
  /** LinkSpeedExtActive bit: 1 FDR, 2 EDR, 4 HDR, 8 NDR; 0 none. */
  ext: number;
}

export const SPEED_CODES: Readonly<Partial<Record<LinkSpeed, SpeedCode>>> = {
  SDR: { legacy: 1, ext: 0 },
  DDR: { legacy: 2, ext: 0 },
  QDR: { legacy: 4, ext: 0 },
  FDR: { legacy: 4, ext: 1 },
  EDR: { legacy: 4, ext: 2 },
  HDR: { legacy: 4, ext: 4 },
  NDR: { legacy: 4, ext: 8 },
};

export function speedCode(speed: LinkSpeed): SpeedCode {
  const code = SPEED_CODES[speed];
  if (!code) throw new Error(`the generator does not encode ${speed}`);
  return code;
}

const LEGACY_SPEED_TEXT: Readonly<Record<number, string>> = { 0: 'Extended speed', 1: '2.5 Gbps', 2: '5.0 Gbps', 4: '10.0 Gbps' };
const EXT_SPEED_TEXT: Readonly<Record<number, string>> = {
  0: 'No Extended Speed',
  1: '14.0625 Gbps',
  2: '25.78125 Gbps',
  4: '53.125 Gbps',
  8: '106.25 Gbps',
};
const LEGACY_COMPAT: Readonly<Record<number, string>> = { 1: 'SDR', 2: 'DDR', 4: 'QDR' };
const EXT_COMPAT: Readonly<Record<number, string>> = { 1: 'FDR', 2: 'EDR', 4: 'HDR', 8: 'NDR' };

/** mad_dump_linkspeed: `10.0 Gbps`. */
export function legacySpeedText(bit: number): string {
  return LEGACY_SPEED_TEXT[bit] ?? `undefined (${bit})`;
}

/** mad_dump_linkspeedext: `25.78125 Gbps`. */
export function extSpeedText(bit: number): string {
  return EXT_SPEED_TEXT[bit] ?? `undefined (${bit})`;
}

/** ibnetdiscover's speed: dump_linkspeed_compat, or dump_linkspeedext_compat beside an extended speed. */
export function speedCompat(legacy: number, ext: number): string {
  return ext === 0 ? (LEGACY_COMPAT[legacy] ?? '???') : (EXT_COMPAT[ext] ?? '???');
}

const PORT_STATES: Readonly<Record<number, string>> = { 0: 'NoChange', 1: 'Down', 2: 'Initialize', 3: 'Armed', 4: 'Active' };
const PHYSICAL_STATES: Readonly<Record<number, string>> = {
  0: 'NoChange',
  1: 'Sleep',
  2: 'Polling',
  3: 'Disabled',
  4: 'PortConfigurationTraining',
  5: 'LinkUp',
  6: 'LinkErrorRecovery',
  7: 'PhyTest',
};

export function portStateText(state: number): string {
  return PORT_STATES[state] ?? `?(${state})`;
}

export function physicalStateText(state: number): string {
  return PHYSICAL_STATES[state] ?? `?(${state})`;
}

/** `0x` and 16 hex digits (`0x%016" PRIx64`). */
export function hex16(value: bigint): string {
  return `0x${value.toString(16).padStart(16, '0')}`;
}

/** `%" PRIx64`: hex digits, not padded. */
export function hex(value: bigint | number): string {
  return value.toString(16);
}

/** `printf("%<width>s")` / `%<width>d`: right-aligned, never cut. */
export function right(text: string | number, width: number): string {
  return String(text).padStart(width, ' ');
}

/**
 * `printf("%.3f")` of a C float: the exact binary value rounded to 3 decimals, ties to even (glibc
 * rounds exactly; Number.prototype.toFixed rounds ties up). A float has at most 24 significant
 * bits, so `value * 1000` is exact in a double and the rounding can be done on it.
 */
export function fixed3(value: number): string {
  if (!(value >= 0) || Math.fround(value) !== value || value >= 2 ** 40)
    throw new Error(`fixed3 is for non-negative C floats below 2^40, not ${value}`);
  const exact = value * 1000;
  let thousandths = Math.floor(exact);
  const rest = exact - thousandths;
  if (rest > 0.5 || (rest === 0.5 && thousandths % 2 === 1)) thousandths += 1;
  const digits = String(thousandths).padStart(4, '0');
  return `${digits.slice(0, -3)}.${digits.slice(-3)}`;
}

const DATA_UNITS = ['B', 'KB', 'MB', 'GB', 'TB', 'PB', 'EB'];
const COUNT_UNITS = ['', 'K', 'M', 'G', 'T', 'P', 'E'];

/**
 * conv_cnt_human_readable then `(%5.3f%s)`: the value in units of 1024 (data counters count 4-byte
 * words: ×4, and one unit up past 1024 of one). Every step but the conversion to float is an exact
 * power-of-two scaling, so the float arithmetic is reproduced exactly.
 */
export function humanReadable(value: number, data: boolean): string {
  if (!Number.isSafeInteger(value) || value < 0) throw new Error(`a counter is a non-negative integer below 2^53, not ${value}`);
  let units = 0;
  let divisor = 1;
  for (let rest = Math.floor(value / 1024); rest > 0; rest = Math.floor(rest / 1024)) {
    units += 1;
    divisor *= 1024;
  }
  // The uint64_t to float conversion: a safe integer is exact in a double, so one rounding.
  let scaled = Math.fround(value);
  if (data) {
    scaled *= 4;
    if (scaled / divisor > 1024) {
      units += 1;
      divisor *= 1024;
    }
  }
  scaled /= divisor;
  const unit = (data ? DATA_UNITS : COUNT_UNITS)[units] ?? '';
  return `${fixed3(scaled).padStart(5, ' ')}${unit}`;
}

/** inet_ntop(AF_INET6) of 8 16-bit groups: lower-case hex, the longest run (≥ 2) of zero groups as `::`. */
export function gidText(groups: readonly number[]): string {
  let bestStart = -1;
  let bestLength = 0;
  for (let i = 0; i < groups.length; ) {
    if (groups[i] !== 0) {
      i += 1;
      continue;
    }
    let end = i;
    while (end < groups.length && groups[end] === 0) end += 1;
    if (end - i > bestLength) {
      bestStart = i;
      bestLength = end - i;
    }
    i = end;
  }
  const text = groups.map((group) => group.toString(16));
  if (bestLength < 2) return text.join(':');
  return `${text.slice(0, bestStart).join(':')}::${text.slice(bestStart + bestLength).join(':')}`;
}

/** The 8 groups of a GID from its prefix and interface id (a port GUID). */
export function gidGroups(prefix: bigint, interfaceId: bigint): number[] {
  const groups: number[] = [];
  for (const half of [prefix, interfaceId]) for (let shift = 48n; shift >= 0n; shift -= 16n) groups.push(Number((half >> shift) & 0xffffn));
  return groups;
}

/** Write `width` bits (at most 32) of `value` at big-endian bit offset `offset` (libibmad's field layout). */
export function setBits(buffer: Uint8Array, offset: number, width: number, value: number): void {
  for (let bit = offset + width - 1, rest = value >>> 0; bit >= offset; bit--, rest >>>= 1) {
    const byte = bit >> 3;
    const mask = 0x80 >> (bit & 7);
    if (rest & 1) buffer[byte]! |= mask;
    else buffer[byte]! &= ~mask;
  }
}

/** Write a 64-bit big-endian field at a byte boundary. */
function set64(buffer: Uint8Array, offset: number, value: bigint): void {
  new DataView(buffer.buffer, buffer.byteOffset, buffer.byteLength).setBigUint64(offset / 8, value);
}

/** PortInfo CapabilityMask bits the tools look at. */
export const CAP_MASK = {
  isSm: 0x2,
  hasExtendedSpeeds: 0x4000,
} as const;

export interface PortInfoFields {
  gidPrefix: bigint;
  lid: number;
  smLid: number;
  capMask: number;
  localPort: number;
  widthEnabled: number;
  widthSupported: number;
  widthActive: number;
  speedSupported: number;
  state: number;
  physicalState: number;
  lmc: number;
  speedActive: number;
  speedEnabled: number;
  extActive: number;
  extSupported: number;
  extEnabled: number;
}

/** A raw 64-byte PortInfo (IBA 14.2.5.6) with these fields; the others zero. */
export function portInfo(fields: PortInfoFields): Uint8Array {
  const info = new Uint8Array(64);
  set64(info, 64, fields.gidPrefix);
  setBits(info, 128, 16, fields.lid);
  setBits(info, 144, 16, fields.smLid);
  setBits(info, 160, 32, fields.capMask);
  setBits(info, 224, 8, fields.localPort);
  setBits(info, 232, 8, fields.widthEnabled);
  setBits(info, 240, 8, fields.widthSupported);
  setBits(info, 248, 8, fields.widthActive);
  setBits(info, 256, 4, fields.speedSupported);
  setBits(info, 260, 4, fields.state);
  setBits(info, 264, 4, fields.physicalState);
  setBits(info, 268, 4, 2); // LinkDownDefState: Polling
  setBits(info, 277, 3, fields.lmc);
  setBits(info, 280, 4, fields.speedActive);
  setBits(info, 284, 4, fields.speedEnabled);
  setBits(info, 288, 4, 4); // NeighborMTU 2048
  setBits(info, 296, 4, 4); // VLCap VL0-7
  setBits(info, 332, 4, 4); // MtuCap 2048
  setBits(info, 344, 4, 4); // OperVLs VL0-7
  setBits(info, 496, 4, fields.extActive);
  setBits(info, 500, 4, fields.extSupported);
  setBits(info, 507, 5, fields.extEnabled);
  return info;
}

export interface NodeInfoFields {
  type: 1 | 2;
  ports: number;
  systemGuid: bigint;
  guid: bigint;
  portGuid: bigint;
  deviceId: number;
  revision: number;
  localPort: number;
  vendorId: number;
}

/** A raw 64-byte NodeInfo (IBA 14.2.5.3). */
export function nodeInfo(fields: NodeInfoFields): Uint8Array {
  const info = new Uint8Array(64);
  setBits(info, 0, 8, 1); // BaseVersion
  setBits(info, 8, 8, 1); // ClassVersion
  setBits(info, 16, 8, fields.type);
  setBits(info, 24, 8, fields.ports);
  set64(info, 32, fields.systemGuid);
  set64(info, 96, fields.guid);
  set64(info, 160, fields.portGuid);
  setBits(info, 224, 16, fields.type === 2 ? 8 : 32); // PartitionCap
  setBits(info, 240, 16, fields.deviceId);
  setBits(info, 256, 32, fields.revision);
  setBits(info, 288, 8, fields.localPort);
  setBits(info, 296, 24, fields.vendorId);
  return info;
}
