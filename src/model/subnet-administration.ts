// Encodings the subnet administrator (SA) uses in its records: MTU and rate codes (IBA 15.2.5,
// MCMemberRecord and PathRecord), each a 6-bit value under a 2-bit selector that saquery prints
// together as one byte (`Mtu 0x84`: selector 2 "exactly", code 4 = 2048 bytes).

const MTU_BYTES: ReadonlyMap<number, number> = new Map([
  [1, 256],
  [2, 512],
  [3, 1024],
  [4, 2048],
  [5, 4096],
]);

// IBA rate codes, in Gb/s (the same numbering as libibverbs' enum ibv_rate).
const RATE_GBPS: ReadonlyMap<number, number> = new Map([
  [2, 2.5],
  [3, 10],
  [4, 30],
  [5, 5],
  [6, 20],
  [7, 40],
  [8, 60],
  [9, 80],
  [10, 120],
  [11, 14],
  [12, 56],
  [13, 112],
  [14, 168],
  [15, 25],
  [16, 100],
  [17, 200],
  [18, 300],
  [19, 28],
  [20, 50],
  [21, 400],
  [22, 600],
  [23, 800],
  [24, 1200],
]);

/** The 6-bit code under the selector bits of an SA MTU or rate byte. */
function code(selectorAndValue: number): number {
  return selectorAndValue & 0x3f;
}

/** MTU in bytes of an SA `Mtu` byte (selector and code), undefined for a reserved code. */
export function saMtuBytes(selectorAndValue: number): number | undefined {
  return MTU_BYTES.get(code(selectorAndValue));
}

/** Rate in Gb/s of an SA `Rate` byte (selector and code), undefined for a reserved code. */
export function saRateGbps(selectorAndValue: number): number | undefined {
  return RATE_GBPS.get(code(selectorAndValue));
}

/** The IBA code of a rate in Gb/s (e.g. 40 → 7), as opensm's partitions.conf takes it; undefined when no code is that rate. */
export function saRateCode(gbps: number): number | undefined {
  for (const [rateCode, rate] of RATE_GBPS) if (rate === gbps) return rateCode;
  return undefined;
}

/** The IBA code of an MTU in bytes (e.g. 4096 → 5), as partitions.conf's mtu= takes it. */
export function saMtuCode(bytes: number): number | undefined {
  for (const [mtuCode, mtu] of MTU_BYTES) if (mtu === bytes) return mtuCode;
  return undefined;
}
