// Link width and speed, from the kernel's `rate` file: "%d%s Gb/sec (%dX%s)", e.g. "100 Gb/sec (4X EDR)".

export const LINK_WIDTHS = [1, 2, 4, 8, 12] as const;
export type LinkWidth = (typeof LINK_WIDTHS)[number];

export const LINK_SPEEDS = ['SDR', 'DDR', 'QDR', 'FDR10', 'FDR', 'EDR', 'HDR', 'NDR', 'XDR'] as const;
export type LinkSpeed = (typeof LINK_SPEEDS)[number];

interface LaneRate {
  /** Nominal signalling rate per lane as the kernel and the IBTA name it, Gb/s. */
  nominalGbps: number;
  /** Data rate per lane after line encoding (8b/10b up to QDR, 64b/66b from FDR10), Gb/s. */
  dataGbps: number;
}

export const LANE_RATES: Readonly<Record<LinkSpeed, LaneRate>> = {
  SDR: { nominalGbps: 2.5, dataGbps: 2 },
  DDR: { nominalGbps: 5, dataGbps: 4 },
  QDR: { nominalGbps: 10, dataGbps: 8 },
  FDR10: { nominalGbps: 10, dataGbps: 10 },
  FDR: { nominalGbps: 14, dataGbps: 13.64 },
  EDR: { nominalGbps: 25, dataGbps: 25 },
  HDR: { nominalGbps: 50, dataGbps: 50 },
  NDR: { nominalGbps: 100, dataGbps: 100 },
  XDR: { nominalGbps: 200, dataGbps: 200 },
};

export const BYTES_PER_GIGABIT = 1e9 / 8;

/** Speeds ordered slowest first; FDR10 ranks above QDR although both are 10 Gb/s nominal. */
export function speedRank(speed: LinkSpeed): number {
  return LINK_SPEEDS.indexOf(speed);
}

export interface LinkRate {
  /** The leading number of the `rate` file, Gb/s (nominal, as the kernel computes it). */
  gbps: number;
  width: LinkWidth | undefined;
  speed: LinkSpeed | undefined;
}

// Old kernels printed no speed label for SDR ("10 Gb/sec (4X)"); the label is then derived from the
// per-lane rate. Only the unambiguous values are mapped: 10 Gb/s per lane without a label is QDR
// (FDR10 always carried its label).
const SPEED_BY_NOMINAL_LANE_RATE = new Map<number, LinkSpeed>([
  [2.5, 'SDR'],
  [5, 'DDR'],
  [10, 'QDR'],
  [14, 'FDR'],
  [25, 'EDR'],
  [50, 'HDR'],
  [100, 'NDR'],
  [200, 'XDR'],
]);

const RATE_LINE = /^\s*(\d+(?:\.\d+)?)\s*Gb\/sec(?:\s*\(\s*(\d+)X(?:\s+([A-Za-z0-9]+))?\s*\))?\s*$/;

export function parseLinkWidth(value: number): LinkWidth | undefined {
  return (LINK_WIDTHS as readonly number[]).includes(value) ? (value as LinkWidth) : undefined;
}

export function parseLinkSpeed(label: string): LinkSpeed | undefined {
  const upper = label.toUpperCase();
  return (LINK_SPEEDS as readonly string[]).includes(upper) ? (upper as LinkSpeed) : undefined;
}

/**
 * Parse `ports/<n>/rate`. Returns undefined when the text is not a rate line; width and speed are
 * undefined when the kernel printed a value this exporter does not know (e.g. a future speed).
 */
export function parseLinkRate(text: string): LinkRate | undefined {
  const match = RATE_LINE.exec(text);
  if (!match) return undefined;
  const gbps = Number(match[1]);
  if (!Number.isFinite(gbps)) return undefined;
  const width = match[2] === undefined ? undefined : parseLinkWidth(Number(match[2]));
  let speed: LinkSpeed | undefined;
  if (match[3] !== undefined) {
    speed = parseLinkSpeed(match[3]);
  } else if (width !== undefined) {
    speed = SPEED_BY_NOMINAL_LANE_RATE.get(gbps / width);
  }
  return { gbps, width, speed };
}

export function formatWidth(width: LinkWidth | undefined): string {
  return width === undefined ? '' : `${width}X`;
}

/** Lane rates as libibmad prints them: LinkSpeed (SDR–QDR), LinkSpeedExt (FDR–NDR), LinkSpeedExt2 (XDR). */
const SPEED_BY_MAD_TEXT: ReadonlyMap<string, LinkSpeed> = new Map([
  ['2.5 Gbps', 'SDR'],
  ['5.0 Gbps', 'DDR'],
  ['10.0 Gbps', 'QDR'],
  ['10.0 Gbps (FDR10)', 'FDR10'],
  ['14.0625 Gbps', 'FDR'],
  ['25.78125 Gbps', 'EDR'],
  ['53.125 Gbps', 'HDR'],
  ['106.25 Gbps', 'NDR'],
  ['212.5 Gbps', 'XDR'],
]);

/** A lane rate as the infiniband-diags tools print it (`10.0 Gbps`, `25.78125 Gbps`, `10.0 Gbps (FDR10)`). */
export function speedFromMadText(text: string): LinkSpeed | undefined {
  return SPEED_BY_MAD_TEXT.get(text.trim());
}

/** The enabled widths and speeds of one link end (PortInfo LinkWidthEnabled, LinkSpeed(Ext)Enabled). */
export interface EnabledRates {
  widthEnabled: readonly LinkWidth[];
  speedEnabled: readonly LinkSpeed[];
}

export interface LinkCapability {
  width: LinkWidth | undefined;
  speed: LinkSpeed | undefined;
}

/**
 * What a link should train to: the widest width and fastest speed that both ends have enabled
 * (as ibportstate judges a link). Undefined parts when the ends share none.
 */
export function bestCommonEnabled(local: EnabledRates, peer: EnabledRates): LinkCapability {
  const widths = local.widthEnabled.filter((width) => peer.widthEnabled.includes(width));
  const speeds = local.speedEnabled.filter((speed) => peer.speedEnabled.includes(speed));
  return {
    width: widths.length === 0 ? undefined : (Math.max(...widths) as LinkWidth),
    speed: speeds.length === 0 ? undefined : speeds.reduce((best, speed) => (speedRank(speed) > speedRank(best) ? speed : best)),
  };
}

/** What a link should run at, and where that expectation came from. */
export interface LinkExpectation {
  width: LinkWidth | undefined;
  speed: LinkSpeed | undefined;
  source: 'config' | 'peer';
}
