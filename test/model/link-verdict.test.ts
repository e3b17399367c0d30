// The bad-links verdict, rule by rule and window by window, with time driven by the test.
import { describe, expect, it } from 'vitest';
import { LinkVerdict, verdictCap, type LinkEndReading, type LinkReading } from '../../src/model/link-verdict.js';
import { parseVerdictState, verdictStateText } from '../../src/model/verdict-state.js';

const MIN = 60_000;
const NDR_4X = 400e9;
const A = { nodeGuid: '0x0002c90200200001', port: 1 };
const B = { nodeGuid: '0x0002c90200100001', port: 7 };

const end = (symbolErrors: number, linkDowned = 0, up = true, extra: Partial<LinkEndReading> = {}): LinkEndReading => ({
  symbolErrors,
  linkDowned,
  up,
  ...extra,
});
const link = (a: LinkEndReading | undefined, b: LinkEndReading | undefined, rate = NDR_4X, ends = { end: A, peer: B }): LinkReading => ({
  ...ends,
  ends: [a, b],
  dataBitsPerSecond: rate,
});
const settings = { ber: 1e-14, cleanPeriodMs: 126 * MIN };

/** Drive one link through readings of `a`'s symbol errors at the given minutes; the reasons after the last. */
function symbolRun(readings: [minute: number, symbolErrors: number][], ber = 1e-14): string[] {
  const verdict = new LinkVerdict({ ...settings, ber });
  let listed: string[] = [];
  for (const [minute, errors] of readings)
    listed = verdict.judge(minute * MIN, [link(end(errors), end(0))], 100).listed.flatMap((bad) => bad.reasons);
  return listed;
}

describe('the verdict of symbol errors', () => {
  it('holds a link to its budget at its own data rate: 2.88 errors per 12 min at 400 Gb/s and 10^-14', () => {
    expect(
      symbolRun([
        [0, 0],
        [1, 2],
      ]),
    ).toEqual([]);
    expect(
      symbolRun([
        [0, 0],
        [1, 3],
      ]),
    ).toEqual(['symbol_errors_12m']);
    // The same three errors on a link four times as fast are within its budget.
    const verdict = new LinkVerdict(settings);
    verdict.judge(0, [link(end(0), end(0), 4 * NDR_4X)], 100);
    expect(verdict.judge(MIN, [link(end(3), end(0), 4 * NDR_4X)], 100).listed).toEqual([]);
  });

  it('counts within a sliding 12-minute window, not since start', () => {
    expect(
      symbolRun([
        [0, 0],
        [1, 1],
        [7, 2],
        [14, 3],
      ]),
    ).toEqual([]);
    expect(
      symbolRun([
        [0, 0],
        [1, 1],
        [7, 2],
        [12, 3],
      ]),
    ).toEqual(['symbol_errors_12m']);
  });

  it('lists a link over the 125-minute budget whose every 12 minutes stay within theirs', () => {
    // 10^-12 at 400 Gb/s: 288 per 12 min, 3 000 per 125 min; 288 every 12 minutes is 3 168 in 125.
    const readings: [number, number][] = [[0, 0]];
    for (let burst = 1; burst <= 11; burst++) readings.push([burst * 12, burst * 288]);
    expect(symbolRun(readings.slice(0, 10), 1e-12)).toEqual([]);
    expect(symbolRun(readings, 1e-12)).toEqual(['symbol_errors_125m']);
  });

  it('takes a counter that went back as cleared: it counts from zero, never a negative or a huge rise', () => {
    expect(
      symbolRun([
        [0, 60_000],
        [1, 60_002],
        [2, 1],
      ]),
    ).toEqual(['symbol_errors_12m']);
    expect(
      symbolRun([
        [0, 60_000],
        [1, 1],
      ]),
    ).toEqual([]);
  });

  it("judges each end's errors against the budget of its direction, and needs a known rate", () => {
    const verdict = new LinkVerdict(settings);
    const rateUnknown = (reading: LinkReading): LinkReading => ({ ...reading, dataBitsPerSecond: undefined });
    verdict.judge(0, [rateUnknown(link(end(0), end(0)))], 100);
    expect(verdict.judge(MIN, [rateUnknown(link(end(0), end(50)))], 100).listed).toEqual([]);
    // Once the rate is known (the link up again), the errors still in the window count.
    expect(verdict.judge(2 * MIN, [link(end(0), end(50))], 100).listed.map((bad) => bad.reasons)).toEqual([
      ['symbol_errors_12m', 'symbol_errors_125m'],
    ]);
  });
});

describe('the verdict of a flapping link', () => {
  it('lists a link whose link_downed rose at both ends within 12 minutes, not at one only', () => {
    const both = new LinkVerdict(settings);
    both.judge(0, [link(end(0, 4), end(0, 9))], 100);
    both.judge(MIN, [link(end(0, 5), end(0, 9))], 100);
    expect(both.judge(5 * MIN, [link(end(0, 5), end(0, 10))], 100).listed.map((bad) => bad.reasons)).toEqual([['link_downed']]);
    const one = new LinkVerdict(settings);
    one.judge(0, [link(end(0, 4), end(0, 9))], 100);
    expect(one.judge(MIN, [link(end(0, 5), end(0, 9))], 100).listed).toEqual([]);
    const apart = new LinkVerdict(settings);
    apart.judge(0, [link(end(0, 4), end(0, 9))], 100);
    apart.judge(MIN, [link(end(0, 5), end(0, 9))], 100);
    expect(apart.judge(14 * MIN, [link(end(0, 5), end(0, 10))], 100).listed).toEqual([]);
  });

  it('with one end read, needs its link_downed and the down transition this instance saw', () => {
    const seen = new LinkVerdict(settings);
    seen.judge(0, [link(end(0, 0), undefined)], 100);
    seen.judge(MIN, [link(end(0, 0, false), undefined)], 100);
    expect(seen.judge(2 * MIN, [link(end(0, 1), undefined)], 100).listed.map((bad) => bad.reasons)).toEqual([['link_downed']]);
    const unseen = new LinkVerdict(settings);
    unseen.judge(0, [link(end(0, 0), undefined)], 100);
    expect(unseen.judge(MIN, [link(end(0, 1), undefined)], 100).listed).toEqual([]);
  });
});

describe('the verdict of a module and of the PHY', () => {
  it('lists a link whose module is at its own high alarm, or rose 10 °C in the long window', () => {
    const module = (celsius: number) => end(0, 0, true, { module: { celsius, alarmCelsius: 75 } });
    const alarm = new LinkVerdict(settings);
    expect(alarm.judge(0, [link(module(74), end(0))], 100).listed).toEqual([]);
    expect(alarm.judge(MIN, [link(module(75), end(0))], 100).listed.map((bad) => bad.reasons)).toEqual([['module_temperature']]);
    const rising = new LinkVerdict(settings);
    rising.judge(0, [link(module(40), end(0))], 100);
    expect(rising.judge(60 * MIN, [link(module(49), end(0))], 100).listed).toEqual([]);
    expect(rising.judge(100 * MIN, [link(module(50), end(0))], 100).listed.map((bad) => bad.reasons)).toEqual([['module_temperature']]);
    // 10 °C over more than the long window is no failing module.
    const slow = new LinkVerdict(settings);
    slow.judge(0, [link(module(40), end(0))], 100);
    expect(slow.judge(130 * MIN, [link(module(50), end(0))], 100).listed).toEqual([]);
  });

  it('lists a link whose effective BER is over its threshold', () => {
    const verdict = new LinkVerdict(settings);
    expect(verdict.judge(0, [link(end(0, 0, true, { effectiveBer: { value: 1e-15, threshold: 1e-12 } }), end(0))], 100).listed).toEqual([]);
    expect(
      verdict
        .judge(MIN, [link(end(0, 0, true, { effectiveBer: { value: 3e-12, threshold: 1e-12 } }), end(0))], 100)
        .listed.map((bad) => bad.reasons),
    ).toEqual([['effective_ber']]);
  });
});

describe('the clean period', () => {
  it('keeps a link through the clean period after its counters last rose, and drops it after', () => {
    const verdict = new LinkVerdict(settings);
    verdict.judge(0, [link(end(0), end(0))], 100);
    expect(verdict.judge(MIN, [link(end(5), end(0))], 100).listed).toHaveLength(1);
    // One error, within the budget, while listed: its clean-since starts again.
    expect(verdict.judge(60 * MIN, [link(end(6), end(0))], 100).listed[0]!.cleanSince).toBe(60 * MIN);
    expect(verdict.judge(185 * MIN, [link(end(6), end(0))], 100).listed).toHaveLength(1);
    expect(verdict.judge(186 * MIN, [link(end(6), end(0))], 100).listed).toEqual([]);
    expect(verdict.state()).toEqual([]);
  });

  it('counts the clean period from the last rise, not from the last cycle a window was still over its budget', () => {
    const verdict = new LinkVerdict(settings);
    verdict.judge(0, [link(end(0), end(0))], 100);
    verdict.judge(MIN, [link(end(500), end(0))], 100);
    // Still over the 125-minute budget an hour later, with no new error: clean since minute 1.
    const later = verdict.judge(61 * MIN, [link(end(500), end(0))], 100).listed;
    expect(later.map((bad) => [bad.reasons, bad.cleanSince])).toEqual([[['symbol_errors_12m', 'symbol_errors_125m'], MIN]]);
    expect(verdict.judge(127 * MIN, [link(end(500), end(0))], 100).listed).toEqual([]);
  });

  it('keeps a link restored from the state file until a clean period after its clean-since', () => {
    const restored = { end: A, peer: B, reasons: ['link_downed' as const], since: 0, cleanSince: 10 * MIN, worst: 0 };
    const verdict = new LinkVerdict(settings, [restored]);
    expect(verdict.judge(100 * MIN, [link(end(0), end(0))], 100).listed).toEqual([restored]);
    expect(verdict.judge(136 * MIN, [link(end(0), end(0))], 100).listed).toEqual([]);
  });
});

describe('the links followed', () => {
  const C = { nodeGuid: '0x0002c90200200002', port: 3 };
  const D = { nodeGuid: '0x0002c90200100002', port: 9 };

  it('forgets a link not judged for the long window; a link that comes after starts from nothing', () => {
    const verdict = new LinkVerdict(settings);
    // A and B's link: up, 50 symbol errors and 3 link downs counted, a module at 40 °C.
    const hot = { module: { celsius: 40, alarmCelsius: undefined } };
    verdict.judge(0, [link(end(50, 3, true, hot), end(50, 3, true, hot))], 100);
    // Gone for longer than the long window: judged no more, then forgotten.
    verdict.judge(126 * MIN, [], 100);
    // A new link, first read with higher counters, down, its module 10 °C warmer: had it taken
    // what the first link left, each would be a rise (errors, link downs, a down transition, a
    // module 10 °C warmer than its coolest).
    const first = verdict.judge(
      127 * MIN,
      [link(end(80, 5, false, { module: { celsius: 50, alarmCelsius: undefined } }), end(80, 5), NDR_4X, { end: C, peer: D })],
      100,
    );
    expect(first.listed).toEqual([]);
    // Its own rises count from there.
    const next = verdict.judge(128 * MIN, [link(end(83, 5), end(80, 5), NDR_4X, { end: C, peer: D })], 100);
    expect(next.listed.map((bad) => [bad.end, bad.reasons])).toEqual([[C, ['symbol_errors_12m']]]);
  });

  it('keeps each link apart when many come and go', () => {
    const verdict = new LinkVerdict(settings);
    const nth = (i: number, errors: number) =>
      link(end(errors), end(0), NDR_4X, { end: { nodeGuid: A.nodeGuid, port: i }, peer: { nodeGuid: B.nodeGuid, port: i } });
    // 40 links, then only the even ones for the long window, then 40 new ones beside them.
    verdict.judge(
      0,
      Array.from({ length: 40 }, (_, i) => nth(i + 1, 0)),
      100,
    );
    verdict.judge(
      126 * MIN,
      Array.from({ length: 20 }, (_, i) => nth(2 * (i + 1), 0)),
      100,
    );
    const later = Array.from({ length: 40 }, (_, i) => nth(100 + i, 7));
    expect(verdict.judge(127 * MIN, [...Array.from({ length: 20 }, (_, i) => nth(2 * (i + 1), 0)), ...later], 100).listed).toEqual([]);
    // Only the links whose own counters rose are listed: 3 errors on port 101, none elsewhere.
    const rose = verdict.judge(
      128 * MIN,
      [...Array.from({ length: 20 }, (_, i) => nth(2 * (i + 1), 0)), ...later.map((one, i) => (i === 1 ? nth(101, 10) : one))],
      100,
    );
    expect(rose.listed.map((bad) => bad.end.port)).toEqual([101]);
  });
});

describe('the cap', () => {
  it("is max(10, 0.5 %) of the fabric's links, a shard's share by the links it judges", () => {
    expect(verdictCap(100, 100, 1)).toBe(10);
    expect(verdictCap(60_000, 60_000, 1)).toBe(300);
    expect(verdictCap(60_000, 30_000, 2)).toBe(150);
    expect(verdictCap(100, 50, 2)).toBe(5);
  });

  it('lists the worst first and counts the rest', () => {
    const verdict = new LinkVerdict(settings);
    const links = (errors: (i: number) => number) =>
      Array.from({ length: 25 }, (_, i) =>
        link(end(errors(i)), end(0), NDR_4X, { end: { nodeGuid: A.nodeGuid, port: i + 1 }, peer: { nodeGuid: B.nodeGuid, port: i + 1 } }),
      );
    verdict.judge(
      0,
      links(() => 0),
      100,
    );
    const result = verdict.judge(
      MIN,
      links((i) => 10 + i),
      100,
    );
    expect(result.cap).toBe(10);
    expect(result.overCap).toBe(15);
    expect(result.listed.map((bad) => bad.end.port)).toEqual([25, 24, 23, 22, 21, 20, 19, 18, 17, 16]);
  });
});

describe('the state file', () => {
  const bad = { end: A, peer: B, reasons: ['symbol_errors_12m' as const, 'link_downed' as const], since: 5, cleanSince: 7, worst: 3.5 };

  it('reads back what it wrote', () => {
    expect(parseVerdictState(verdictStateText([bad]))).toEqual({ links: [bad] });
  });

  it.each([
    ['{"version":1,"links":[', 'is not JSON'],
    ['{"version":2,"links":[]}', 'is of version 2, not 1'],
    ['[]', 'has no version'],
    ['{"version":1}', 'has no list of links'],
    ['{"version":1,"links":[{"node_guid":"x","port":1}]}', 'has a malformed link (entry 1)'],
  ])('refuses %s: %s', (text, error) => {
    expect(parseVerdictState(text)).toEqual({ error: expect.stringContaining(error) });
  });
});
