// Partial output is never success: every fabric tool's recorded output (test/fixtures/fabric-recordings, see
// test/support/fabric-recordings.ts) cut short at every line, cut in the middle of every line, and
// garbled on every third line, must be told incomplete by the parsers and readers — none of these
// tools prints an end marker but ibqueryerrors (its `## Summary:`), so each check is what the
// output must hold.
import { describe, expect, it } from 'vitest';
import { parseSminfo } from '../../src/sources/diag/sminfo.js';
import { parseDiscoveryCache } from '../../src/sources/fabric/discovery-cache.js';
import { buildTopology, discoveryGaps, nodesByPortGuid } from '../../src/sources/fabric/discovery.js';
import { parseIblinkinfo } from '../../src/sources/fabric/iblinkinfo.js';
import { parseIbnetdiscover } from '../../src/sources/fabric/ibnetdiscover.js';
import { parseIbqueryerrors } from '../../src/sources/fabric/ibqueryerrors.js';
import { scanGaps } from '../../src/sources/fabric/ports.js';
import { parsePerfqueryLoop } from '../../src/sources/fabric/perfquery-counters.js';
import { parseMemberCounts, parseMulticastGroups, parseSmInfoRecords } from '../../src/sources/fabric/saquery.js';
import { firstLines, garbled, lineCuts, midLine, nonBlankLines } from '../support/damaged-output.js';
import { LEAF1, SPINE2, recordedCache, stdout } from '../support/fabric-recordings.js';

describe('ibnetdiscover', () => {
  const healthy = stdout('healthy', 'ibnetdiscover');
  const cache = parseDiscoveryCache(recordedCache());

  it.each([
    ['healthy', undefined],
    ['pulled', undefined],
    ['duplicate-guid', undefined],
  ])('the whole recorded output (%s) has no gap, against its own cache file', (scenario) => {
    const text = parseIbnetdiscover(stdout(scenario, 'ibnetdiscover'));
    expect(text.unparsed.count).toBe(0);
    expect(discoveryGaps(text, parseDiscoveryCache(recordedCache(scenario)))).toEqual([]);
  });

  it('cut short at any line: nodes of the cache file left out, and a cable listed from one end', () => {
    const cuts = lineCuts(healthy);
    expect(cuts.length).toBeGreaterThan(100);
    for (const n of cuts) {
      const text = parseIbnetdiscover(firstLines(healthy, n));
      if (text.nodes.length === 0) continue; // "no node in the output": a failure of its own
      const gaps = discoveryGaps(text, cache);
      expect(gaps, `cut after line ${n}`).not.toEqual([]);
      if (text.nodes.length < 14) expect(gaps.join(), `cut after line ${n}`).toMatch(/of the 14 nodes of the cache file/);
      // Without the cache file (it may be unusable) the cables tell it, once the output has one:
      // only a cut right after the first node's line, before any cable, goes unseen then.
      if (text.ports.length > 0) expect(discoveryGaps(text, undefined), `cut after line ${n}`).not.toEqual([]);
    }
  });

  it("the issue's case: cut after the switches, every CA gone, is named", () => {
    const afterSwitches = healthy.slice(0, healthy.indexOf('devid=0x1003') - 'vendid=0x2c9\n'.length);
    const text = parseIbnetdiscover(afterSwitches);
    expect(text.nodes).toHaveLength(5);
    expect(discoveryGaps(text, cache)).toEqual([
      '9 cables are listed from one end only (first: port 1 of 0x0002c90200530000 to port 1 of 0x0002c90300a30010, a node the output never describes)',
      'it describes 5 of the 14 nodes of the cache file ibnetdiscover wrote (first missing: 0x0002c90300a30030)',
    ]);
  });

  it('cut in the middle of any line: that line is not understood, or a gap shows', () => {
    for (const n of nonBlankLines(healthy)) {
      const text = parseIbnetdiscover(midLine(healthy, n));
      if (text.nodes.length === 0) continue;
      expect(text.unparsed.count + discoveryGaps(text, cache).length, `cut in line ${n}`).toBeGreaterThan(0);
    }
  });

  it('garbled on every third line: lines not understood, and nodes and cables lost', () => {
    const text = parseIbnetdiscover(garbled(healthy));
    expect(text.unparsed.count).toBeGreaterThan(30);
    expect(text.nodes.length).toBeLessThan(14);
    expect(discoveryGaps(text, cache)).toHaveLength(2);
  });
});

describe('iblinkinfo --line', () => {
  const topology = buildTopology(
    parseIbnetdiscover(stdout('healthy', 'ibnetdiscover')),
    parseDiscoveryCache(recordedCache()),
    new Map(),
    0,
  );
  const nodeOfPort = nodesByPortGuid(topology);
  const gaps = (text: string, hcaPorts = false) =>
    scanGaps(parseIblinkinfo(text).ports, { topology, covers: () => true, hcaPorts }, nodeOfPort);

  it("the whole scan has no gap; the pulled cables' scan neither (ports down are still printed)", () => {
    expect(gaps(stdout('healthy', 'iblinkinfo-switches'))).toEqual({ cutShort: [], missingSwitches: [] });
    expect(gaps(stdout('healthy', 'iblinkinfo-all'), true)).toEqual({ cutShort: [], missingSwitches: [] });
    expect(gaps(stdout('pulled', 'iblinkinfo-switches'))).toEqual({ cutShort: [], missingSwitches: [] });
  });

  it.each([
    ['switches only', 'iblinkinfo-switches', false],
    ['with CA ports', 'iblinkinfo-all', true],
  ])('cut short at any line (%s): a switch without all its ports, cables to nodes it does not print', (_name, stem, hcaPorts) => {
    const whole = stdout('healthy', stem);
    for (const n of lineCuts(whole)) {
      const found = gaps(firstLines(whole, n), hcaPorts);
      expect(found.cutShort, `cut after line ${n}`).not.toEqual([]);
    }
  });

  it('cut in the middle of any line: that line is not understood', () => {
    const whole = stdout('healthy', 'iblinkinfo-switches');
    for (const n of nonBlankLines(whole)) expect(parseIblinkinfo(midLine(whole, n)).unparsed.count, `cut in line ${n}`).toBe(1);
  });

  it('garbled on every third line: those lines are not understood, and switches lack ports', () => {
    const text = garbled(stdout('healthy', 'iblinkinfo-switches'));
    expect(parseIblinkinfo(text).unparsed.count).toBe(10);
    expect(gaps(text).cutShort.join()).toMatch(/switches are printed without all their ports/);
  });

  it('a switch that left the fabric, its cables down at the other ends, is missing but no sign of a cut', () => {
    const lines = stdout('healthy', 'iblinkinfo-switches')
      .split('\n')
      .filter((line) => line !== '' && !line.startsWith(SPINE2));
    const withoutSpine2 = lines
      .map((line) =>
        line.includes(`==>  ${SPINE2} `) ? line.replace(/==\(.*$/, '==(                Down/ Polling)==>             [  ] "" ( )') : line,
      )
      .join('\n');
    const found = gaps(withoutSpine2);
    expect(found.cutShort).toEqual([]);
    expect(found.missingSwitches.map((node) => node.guid)).toEqual([SPINE2]);
    // The same switch left out of an output that still shows cables to it: the output was cut.
    const cut = gaps(lines.join('\n'));
    expect(cut.cutShort).toEqual([`cables lead to a node it does not print (first: ${SPINE2})`]);
    expect(cut.missingSwitches.map((node) => node.guid)).toEqual([SPINE2]);
  });

  it('a shard reports only its own switches missing', () => {
    const without = stdout('healthy', 'iblinkinfo-switches')
      .split('\n')
      .filter((line) => !line.startsWith(LEAF1))
      .join('\n');
    const others = scanGaps(
      parseIblinkinfo(without).ports,
      { topology, covers: (node) => node.guid !== LEAF1, hcaPorts: false },
      nodeOfPort,
    );
    expect(others.missingSwitches).toEqual([]);
    expect(others.cutShort).not.toEqual([]);
  });
});

describe('ibqueryerrors', () => {
  it.each(['errors-switches', 'counters-switches', 'errors-all', 'counters-all'])(
    '%s: whole, it is complete; cut short at any line before its summary, or in the middle of one, it is not',
    (stem) => {
      const whole = stdout('healthy', stem);
      expect(parseIbqueryerrors(whole, '')).toMatchObject({ complete: true, unparsed: { count: 0 } });
      const summary = whole.split('\n').findIndex((line) => line.startsWith('## Summary:'));
      for (const n of lineCuts(whole).filter((cut) => cut <= summary))
        expect(parseIbqueryerrors(firstLines(whole, n), '').complete, `cut after line ${n}`).toBe(false);
      for (const n of nonBlankLines(whole).filter((i) => i < summary))
        expect(parseIbqueryerrors(midLine(whole, n), '').complete, `cut in line ${n}`).toBe(false);
    },
  );

  it('a port line cut or garbled half-way, the summary there: the line is not understood', () => {
    const whole = stdout('healthy', 'counters-switches');
    const lines = whole.split('\n');
    for (const n of nonBlankLines(whole).filter((i) => lines[i]!.includes(' port '))) {
      const damaged = [...lines.slice(0, n), lines[n]!.slice(0, Math.floor(lines[n]!.length / 2)), ...lines.slice(n + 1)].join('\n');
      expect(parseIbqueryerrors(damaged, ''), `line ${n}`).toMatchObject({
        complete: true,
        unparsed: { count: 1, examples: [expect.any(String)] },
      });
    }
    expect(parseIbqueryerrors(garbled(whole), '').unparsed.count).toBeGreaterThan(5);
  });
});

describe('saquery', () => {
  // Where a record starts: a cut there leaves whole records only, which no reader can tell from an
  // SA with fewer records (the alerts on the SM list then see the SM as gone).
  const recordStarts = (text: string) => text.split('\n').flatMap((line, i) => (/ dump:$/.test(line) && !line.startsWith('\t') ? [i] : []));

  it('SMIR: cut short inside a record (its last line is SMState, which is read), the record is not understood', () => {
    const whole = stdout('healthy', 'smir');
    const starts = recordStarts(whole);
    expect(starts).toEqual([0, 9]);
    for (const n of lineCuts(whole).filter((cut) => !starts.includes(cut))) {
      expect(parseSmInfoRecords(firstLines(whole, n)).unparsed.count, `cut after line ${n}`).toBe(1);
    }
    // Cut between two records: the SA seems to know one SM. The output alone does not tell it
    // from a standby that stopped; the collector asks the SM left out (test/collectors/fabric/fabric-sa.test.ts).
    expect(parseSmInfoRecords(firstLines(whole, 9))).toMatchObject({ unparsed: { count: 0 }, subnetManagers: [expect.anything()] });
  });

  it.each([
    ['-g, before its rate', 'groups', 5, (text: string) => parseMulticastGroups(text).unparsed.examples],
    ['-m, before its PortGid', 'members', 3, (text: string) => parseMemberCounts(text).unparsed.examples],
  ])('%s: cut short inside a record, before a field that is read, the record is not understood', (_name, stem, lastCut, unparsed) => {
    const whole = stdout('healthy', stem);
    expect(unparsed(whole)).toEqual([]);
    for (let n = 1; n <= lastCut; n++) expect(unparsed(firstLines(whole, n)), `cut after line ${n}`).toHaveLength(1);
  });

  it.each([
    ['SMIR', 'smir', (text: string) => parseSmInfoRecords(text)],
    ['-g', 'groups', (text: string) => parseMulticastGroups(text)],
    ['-m', 'members', (text: string) => parseMemberCounts(text)],
  ])('%s: garbled on every third line, or garbage alone, is not understood', (_name, stem, parse) => {
    expect(parse(garbled(stdout('healthy', stem))).unparsed.count).toBeGreaterThan(0);
    expect(parse('Segmentation fault\n\u0001\u0002 this is not saquery output\n').unparsed.count).toBe(2);
  });
});

describe('perfquery -l (counters switch by switch, where ibqueryerrors cannot run)', () => {
  it.each(['spine-1-basic', 'leaf-1-extended'])('%s: cut short at any line, a port is missing or not understood', (stem) => {
    const whole = stdout('per-switch', stem);
    const all = parsePerfqueryLoop(whole);
    expect(all.unparsed.count).toBe(0);
    for (const n of lineCuts(whole)) {
      const cut = parsePerfqueryLoop(firstLines(whole, n));
      expect(cut.readings.size < all.readings.size || cut.unparsed.count > 0, `cut after line ${n}`).toBe(true);
      // What is kept is whole once there are two blocks to compare (a cut in the first leaves the
      // other ports missing, which fails the cycle).
      if (cut.readings.size < 2) continue;
      for (const [port, reading] of cut.readings)
        expect(reading.values, `cut after line ${n}, port ${port}`).toEqual(all.readings.get(port)!.values);
    }
  });
});

describe('sminfo', () => {
  it('cut short before the state, or garbled, says nothing', () => {
    const whole = stdout('healthy', 'sminfo-1');
    expect(parseSminfo(whole)).toMatchObject({ lid: 1, state: 'MASTER' });
    const line = whole.trim();
    for (let end = 1; end < line.indexOf(' state ') + ' state '.length; end++)
      expect(parseSminfo(line.slice(0, end)), line.slice(0, end)).toBeUndefined();
    expect(parseSminfo('Segmentation fault\n\u0001\u0002 this is not sminfo output\n')).toBeUndefined();
  });
});
