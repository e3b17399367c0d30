// The bad-links verdict: which links to drain and replace, judged each ports cycle from both ends
// of every link (DESIGN "Bad links"). Pure: the caller hands it each cycle's readings and the time,
// so tests drive hours in milliseconds.
//
// Memory at 120 000 ports: per port only its last two counter values, and a short list of the
// cycles in which a counter rose (time and rises), kept for the long window. A clean port (nearly
// all of them) holds no list at all, so the cost follows the ports that err, not the cycles: a
// ring of per-cycle deltas would hold 125 numbers per port at a 60 s interval whether it erred or
// not. A port that errs every cycle has its oldest two entries merged past MAX_RISES (the merged
// entry takes the later time: an error is counted a little longer, never forgotten early).
import { atOnce, pacer, type Work } from '../event-loop/time-slices.js';
import type { PortAddress } from './fabric.js';
import { compareNatural } from './natural-order.js';
import { SlotMap, sized } from './slot-map.js';

export const SHORT_WINDOW_MS = 12 * 60_000;
export const LONG_WINDOW_MS = 125 * 60_000;
/** A module this much warmer than its coolest reading in the long window is failing. */
export const TEMPERATURE_RISE_CELSIUS = 10;
const MAX_RISES = 32;

/** Why a link is listed: the `reason` label of infiniband_fabric_link_bad. */
export const VERDICT_REASONS = ['symbol_errors_12m', 'symbol_errors_125m', 'link_downed', 'module_temperature', 'effective_ber'] as const;
export type VerdictReason = (typeof VERDICT_REASONS)[number];

/** One end of a link as this cycle read it. */
export interface LinkEndReading {
  /** SymbolErrorCounter and LinkDownedCounter; undefined where the query failed or the counter is stuck at its maximum. */
  symbolErrors: number | undefined;
  linkDowned: number | undefined;
  /** The port's link is up (LinkUp/Active): a change to not-up is the link's own down transition. */
  up: boolean;
  /** The module's temperature and its own high alarm, where a module reading has them. */
  module?: { celsius: number; alarmCelsius: number | undefined };
  /** The PHY's effective BER and its threshold, where known. */
  effectiveBer?: { value: number; threshold: number };
}

/** A link of the fabric: the end it is labelled by, its peer, and what this instance read of each. */
export interface LinkReading {
  end: PortAddress;
  peer: PortAddress;
  /** Undefined for an end this instance does not read (another shard's, or a CA without --fabric.hca-ports). */
  ends: readonly [LinkEndReading | undefined, LinkEndReading | undefined];
  /** Data rate of the link, bits/s (width × lane data rate), where it is up; else the last known is used. */
  dataBitsPerSecond: number | undefined;
  /** Its `linkKey`, where the caller made it: the one string then keys the caller's map and the verdict's. */
  key?: string;
}

export interface VerdictSettings {
  /** --fabric.verdict.ber. */
  ber: number;
  /** --fabric.verdict.clean-period, ms. */
  cleanPeriodMs: number;
}

/** A link judged bad, listed or over the cap: what the state file keeps. */
export interface BadLink {
  end: PortAddress;
  peer: PortAddress;
  reasons: VerdictReason[];
  /** When it was first judged bad (ms). */
  since: number;
  /** Since when none of its reasons' counters rose (ms): it leaves the list a clean period later. */
  cleanSince: number;
  /** Its worst symbol errors over the budget of a window (0 without): orders links of as many reasons. */
  worst: number;
}

export interface Verdict {
  /** The links listed, worst first. */
  listed: readonly BadLink[];
  /** Links judged bad beyond the cap. */
  overCap: number;
  cap: number;
  /** Links judged this cycle (with at least one end read). */
  judged: number;
  /** When (ms). */
  at: number;
  /** --fabric.verdict.clean-period: a listed link leaves the list at its clean-since plus this. */
  cleanPeriodMs: number;
}

/**
 * What the verdict keeps of each link between cycles, as columns by slot (model/slot-map.ts): when
 * it was last judged and its last known data rate; by end (slot · 2 + side) its last two counters,
 * whether it was up and, only where a counter rose or a module was read, its rises and
 * temperatures.
 */
class LinkTracks {
  private readonly slots = new SlotMap();
  seenAt = new Float64Array(0);
  /** Bits/s; NaN until the link was read up. */
  dataBitsPerSecond = new Float64Array(0);
  /** By end; NaN where it was not read (or the counter was not usable). */
  symbolErrors = new Float64Array(0);
  linkDowned = new Float64Array(0);
  /** By end: 1 up, 0 not up, -1 not read yet. */
  up = new Int8Array(0);
  /** By end, flat: time, symbol errors, link downed, down transition (0/1); oldest first. */
  readonly rises = new Map<number, number[]>();
  /** By end, flat: time, °C; only where a module was read. */
  readonly temperatures = new Map<number, number[]>();

  /** The slot of a link judged at `now` (its `seenAt`), a new one (nothing else known of it) when it has none. */
  slotOf(key: string, now: number): number {
    const known = this.slots.get(key);
    if (known !== undefined) {
      this.seenAt[known] = now;
      return known;
    }
    const slot = this.slots.add(key);
    const capacity = this.slots.capacity;
    this.seenAt = sized(this.seenAt, capacity);
    this.dataBitsPerSecond = sized(this.dataBitsPerSecond, capacity, Number.NaN);
    this.symbolErrors = sized(this.symbolErrors, 2 * capacity, Number.NaN);
    this.linkDowned = sized(this.linkDowned, 2 * capacity, Number.NaN);
    this.up = sized(this.up, 2 * capacity, -1);
    // A slot handed out again: what it held was another link's.
    this.seenAt[slot] = now;
    this.dataBitsPerSecond[slot] = Number.NaN;
    for (let end = 2 * slot; end < 2 * slot + 2; end++) {
      this.symbolErrors[end] = Number.NaN;
      this.linkDowned[end] = Number.NaN;
      this.up[end] = -1;
    }
    return slot;
  }

  /** Forget the links last judged more than `window` ms before `now` (their rises and temperatures with them). */
  forgetOlder(now: number, window: number): void {
    for (const [key, slot] of this.slots.entries()) {
      if (now - this.seenAt[slot]! <= window) continue;
      this.slots.delete(key);
      for (let end = 2 * slot; end < 2 * slot + 2; end++) {
        this.rises.delete(end);
        this.temperatures.delete(end);
      }
    }
  }
}

/** A number column's value, NaN read as not known. */
const known = (value: number): number | undefined => (Number.isNaN(value) ? undefined : value);

// Joined, one flat string: kept as a key of the tracks for every link, where a template literal's tree of six concatenations was 10 MiB at 27 000 links.
export const linkKey = (end: PortAddress, peer: PortAddress): string =>
  [end.nodeGuid, '/', end.port, '-', peer.nodeGuid, '/', peer.port].join('');

/** How many links a shard may list: max(10, 0.5 %) of the fabric's links, its share by the links it judges. */
export function verdictCap(fabricLinks: number, judged: number, shards: number): number {
  const fabricCap = Math.max(10, Math.floor(fabricLinks * 0.005));
  if (shards <= 1 || fabricLinks <= 0) return fabricCap;
  return Math.max(1, Math.ceil((fabricCap * judged) / fabricLinks));
}

/** Counter rise since the last reading; a counter that went back was cleared: it counts from zero. */
function rise(previous: number | undefined, current: number | undefined): number {
  if (previous === undefined || current === undefined) return 0;
  return current >= previous ? current - previous : current;
}

/** Worst first: more reasons, then further over the budget, then listed earlier, then by name. */
export function worseFirst(a: BadLink, b: BadLink): number {
  return (
    b.reasons.length - a.reasons.length ||
    b.worst - a.worst ||
    a.since - b.since ||
    compareNatural(linkKey(a.end, a.peer), linkKey(b.end, b.peer))
  );
}

const REASON_FAMILY: Readonly<Record<VerdictReason, 'symbol' | 'downed' | 'temperature' | 'ber'>> = {
  symbol_errors_12m: 'symbol',
  symbol_errors_125m: 'symbol',
  link_downed: 'downed',
  module_temperature: 'temperature',
  effective_ber: 'ber',
};

export class LinkVerdict {
  private readonly tracks = new LinkTracks();
  private readonly bad = new Map<string, BadLink>();
  /** Links this cycle judged bad: none of them leaves the list, whatever its clean-since. */
  private readonly judgedBad = new Set<string>();

  constructor(
    private readonly settings: VerdictSettings,
    restored: readonly BadLink[] = [],
  ) {
    for (const link of restored) this.bad.set(linkKey(link.end, link.peer), { ...link, reasons: [...link.reasons] });
  }

  /** Every link judged bad (listed or over the cap), for the state file. */
  state(): BadLink[] {
    return [...this.bad.values()].sort(worseFirst);
  }

  /** One cycle: the links read at `now` (ms), the fabric's number of links and of shards. */
  judge(now: number, links: Iterable<LinkReading>, fabricLinks: number, shards = 1): Verdict {
    return atOnce(this.judgeSteps(now, links, () => fabricLinks, shards));
  }

  /**
   * The same, as work that may pause (120 000 ports are some 60 000 links); the fabric's number of
   * links is asked for once `links` is walked (a caller may count them as it hands them over).
   */
  *judgeSteps(now: number, links: Iterable<LinkReading>, fabricLinks: () => number, shards = 1): Work<Verdict> {
    const pace = pacer();
    let judged = 0;
    this.judgedBad.clear();
    for (const link of links) {
      if (pace()) yield;
      if (!link.ends[0] && !link.ends[1]) continue;
      judged += 1;
      this.judgeLink(now, link);
    }
    // A link gone from the discovery (a cable pulled: its host is gone too) keeps its windows while
    // they matter, so that it is judged on them when it is back; one gone longer is forgotten.
    this.tracks.forgetOlder(now, LONG_WINDOW_MS);
    for (const [key, link] of this.bad)
      if (now - link.cleanSince >= this.settings.cleanPeriodMs && !this.judgedBad.has(key)) this.bad.delete(key);
    const cap = verdictCap(fabricLinks(), judged, shards);
    const all = this.state();
    return {
      listed: all.slice(0, cap),
      overCap: Math.max(0, all.length - cap),
      cap,
      judged,
      at: now,
      cleanPeriodMs: this.settings.cleanPeriodMs,
    };
  }

  private judgeLink(now: number, link: LinkReading): void {
    const key = link.key ?? linkKey(link.end, link.peer);
    const tracks = this.tracks;
    const slot = tracks.slotOf(key, now);
    if (link.dataBitsPerSecond !== undefined) tracks.dataBitsPerSecond[slot] = link.dataBitsPerSecond;
    const dataBitsPerSecond = known(tracks.dataBitsPerSecond[slot]!);
    const reasons = new Set<VerdictReason>();
    const rose = new Set<string>();
    let worst = 0;
    const read = link.ends.filter((end) => end !== undefined).length;
    let downedEnds = 0;
    for (const side of [0, 1] as const) {
      const reading = link.ends[side];
      if (!reading) continue;
      const end = 2 * slot + side;
      const symbols = rise(known(tracks.symbolErrors[end]!), reading.symbolErrors);
      const downed = rise(known(tracks.linkDowned[end]!), reading.linkDowned);
      const wentDown = tracks.up[end] === 1 && !reading.up ? 1 : 0;
      tracks.symbolErrors[end] = reading.symbolErrors ?? Number.NaN;
      tracks.linkDowned[end] = reading.linkDowned ?? Number.NaN;
      tracks.up[end] = reading.up ? 1 : 0;
      if (symbols > 0) rose.add('symbol');
      if (downed > 0) rose.add('downed');
      let rises = tracks.rises.get(end);
      if (symbols > 0 || downed > 0 || wentDown > 0) rises = record(rises, [now, symbols, downed, wentDown]);
      rises = prune(rises, 4, now - LONG_WINDOW_MS);
      if (rises) tracks.rises.set(end, rises);
      else tracks.rises.delete(end);
      const sums = windowSums(rises, now);
      if (dataBitsPerSecond !== undefined) {
        const short = sums.shortSymbols / (this.settings.ber * dataBitsPerSecond * (SHORT_WINDOW_MS / 1000));
        const long = sums.longSymbols / (this.settings.ber * dataBitsPerSecond * (LONG_WINDOW_MS / 1000));
        if (short > 1) reasons.add('symbol_errors_12m');
        if (long > 1) reasons.add('symbol_errors_125m');
        if (short > 1 || long > 1) worst = Math.max(worst, short, long);
      }
      // Both ends read: each must have counted the link going down. One end read: its count and
      // the down transition this instance saw.
      if (sums.shortDowned > 0 && (read === 2 || sums.shortDownTransitions > 0)) downedEnds += 1;
      if (reading.module) {
        const temperatures = prune(record(tracks.temperatures.get(end), [now, reading.module.celsius], 2), 2, now - LONG_WINDOW_MS) ?? [];
        tracks.temperatures.set(end, temperatures);
        let coolest = reading.module.celsius;
        for (let i = 1; i < temperatures.length; i += 2) coolest = Math.min(coolest, temperatures[i]!);
        const alarm = reading.module.alarmCelsius !== undefined && reading.module.celsius >= reading.module.alarmCelsius;
        if (alarm) rose.add('temperature');
        if (alarm || reading.module.celsius - coolest >= TEMPERATURE_RISE_CELSIUS) reasons.add('module_temperature');
      }
      if (reading.effectiveBer && reading.effectiveBer.value > reading.effectiveBer.threshold) {
        reasons.add('effective_ber');
        rose.add('ber');
      }
    }
    if (read > 0 && downedEnds === read) reasons.add('link_downed');
    const listed = this.bad.get(key);
    if (reasons.size > 0) {
      const merged = new Set([...(listed?.reasons ?? []), ...reasons]);
      const reasonsList = VERDICT_REASONS.filter((reason) => merged.has(reason));
      this.bad.set(key, {
        end: link.end,
        peer: link.peer,
        reasons: reasonsList,
        since: listed?.since ?? now,
        // Clean since the last rise of a counter of its reasons: a window still over its budget
        // keeps the link listed, but is no new rise.
        cleanSince: !listed || reasonsList.some((reason) => rose.has(REASON_FAMILY[reason])) ? now : listed.cleanSince,
        worst: Math.max(listed?.worst ?? 0, worst),
      });
      this.judgedBad.add(key);
    } else if (listed?.reasons.some((reason) => rose.has(REASON_FAMILY[reason]))) {
      listed.cleanSince = now;
    }
  }
}

/** Append an entry; past the bound, the oldest two become one (the later time, the sums). */
function record(list: number[] | undefined, entry: readonly number[], width = 4): number[] {
  const out = list ?? [];
  out.push(...entry);
  if (out.length > MAX_RISES * width) {
    for (let i = 1; i < width; i++) out[width + i] = width === 2 ? Math.min(out[i]!, out[width + i]!) : out[i]! + out[width + i]!;
    out.splice(0, width);
  }
  return out;
}

/** Drop entries of `from` and older (a window is the last `LONG_WINDOW_MS`, its start excluded); undefined once empty, so a port that stopped erring holds nothing. */
function prune(list: number[] | undefined, width: number, from: number): number[] | undefined {
  if (!list) return undefined;
  let drop = 0;
  while (drop < list.length && list[drop]! <= from) drop += width;
  if (drop > 0) list.splice(0, drop);
  return list.length > 0 ? list : undefined;
}

function windowSums(
  rises: readonly number[] | undefined,
  now: number,
): { shortSymbols: number; longSymbols: number; shortDowned: number; shortDownTransitions: number } {
  const sums = { shortSymbols: 0, longSymbols: 0, shortDowned: 0, shortDownTransitions: 0 };
  if (!rises) return sums;
  for (let i = 0; i < rises.length; i += 4) {
    const at = rises[i]!;
    sums.longSymbols += rises[i + 1]!;
    if (now - at < SHORT_WINDOW_MS) {
      sums.shortSymbols += rises[i + 1]!;
      sums.shortDowned += rises[i + 2]!;
      sums.shortDownTransitions += rises[i + 3]!;
    }
  }
  return sums;
}
