// The raw SMP PortInfo attribute (IBA 14.2.5.6, 64 bytes, big-endian bit fields), as libibnetdisc
// stores it per port in its cache file. Only the fields the exporter reads are decoded here; the
// bit offsets are those of libibmad's field table (fields.c).
import type { LinkSpeed, LinkWidth } from './link-rate.js';

export const PORT_INFO_BYTES = 64;

/** `width` bits of the field at big-endian bit offset `offset` (within one byte). */
function bits(info: Uint8Array, offset: number, width: number): number {
  const byte = info[offset >> 3] ?? 0;
  return (byte >> (8 - (offset & 7) - width)) & ((1 << width) - 1);
}

// LinkWidthEnabled/Supported: 1 1X, 2 4X, 4 8X, 8 12X, 16 2X.
const WIDTH_BITS: readonly [number, LinkWidth][] = [
  [1, 1],
  [2, 4],
  [4, 8],
  [8, 12],
  [16, 2],
];
// LinkSpeedEnabled: 1 SDR, 2 DDR, 4 QDR; LinkSpeedExtEnabled: 1 FDR, 2 EDR, 4 HDR, 8 NDR;
// LinkSpeedExtEnabled2: 1 XDR.
const SPEED_BITS: readonly [number, LinkSpeed][] = [
  [1, 'SDR'],
  [2, 'DDR'],
  [4, 'QDR'],
];
const EXT_SPEED_BITS: readonly [number, LinkSpeed][] = [
  [1, 'FDR'],
  [2, 'EDR'],
  [4, 'HDR'],
  [8, 'NDR'],
];
const EXT2_SPEED_BITS: readonly [number, LinkSpeed][] = [[1, 'XDR']];
/** LinkSpeedExtEnabled 30: extended speeds disabled (31 is "set to supported", only meaningful in a Set). */
const EXT_SPEEDS_DISABLED = 30;

function decode<T>(mask: number, table: readonly [number, T][]): T[] {
  return table.filter(([bit]) => (mask & bit) !== 0).map(([, value]) => value);
}

export interface PortInfoRates {
  widthEnabled: LinkWidth[];
  /** Legacy and extended speeds together, slowest first. */
  speedEnabled: LinkSpeed[];
}

/** LinkWidthEnabled and every LinkSpeed*Enabled field of a raw PortInfo; undefined when it is too short. */
export function decodeEnabledRates(info: Uint8Array): PortInfoRates | undefined {
  if (info.length < PORT_INFO_BYTES) return undefined;
  const extEnabled = bits(info, 507, 5);
  return {
    widthEnabled: decode(bits(info, 232, 8), WIDTH_BITS),
    speedEnabled: [
      ...decode(bits(info, 284, 4), SPEED_BITS),
      ...(extEnabled === EXT_SPEEDS_DISABLED ? [] : decode(extEnabled, EXT_SPEED_BITS)),
      ...decode(bits(info, 453, 3), EXT2_SPEED_BITS),
    ],
  };
}
