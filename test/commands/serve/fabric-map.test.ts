// The fabric map's page, read as text: tiers derived from the cabling, each link's worst state,
// hosts collapsed to counts, the problem list linked to its lines, names escaped. Rendering it in
// a real browser is fabric-map.browser.test.ts; its speed and size at 1 918 nodes are in the bench.
import { describe, expect, it } from 'vitest';
import { linkElementId, type FabricMapInput } from '../../../src/commands/serve/fabric-map-layout.js';
import { renderFabricMap } from '../../../src/commands/serve/fabric-map.js';
import { fabricPortKey } from '../../../src/model/fabric.js';
import { fabricFromPlan, railTreeMapInput } from '../../support/cabling.js';
import { fatTreeFabric, hostGuid, leafGuid, spineGuid } from '../../../synthetic/fat-tree.js';

const LEAF = (n: number): string => `0x0002c90200700${n.toString(16).padStart(3, '0')}`;
const SPINE1 = '0x0002c90200600001';
const GPU = (host: number, adapter: number): string => `0x0002c90300c${host.toString(16).padStart(2, '0')}${adapter}00`;

/** `<path class="…" id="…"` of a link element, or undefined. */
function linkClasses(html: string, a: string, b: string): string | undefined {
  return new RegExp(`<path class="([^"]+)" id="${linkElementId(a, b)}"`).exec(html)?.[1];
}

describe('fabric map', () => {
  const input = railTreeMapInput();
  const html = renderFabricMap(input);

  it('draws every switch by tier and every host adapter under its leaf', () => {
    expect(html.match(/<g class="node switch[^"]*" id="n-/g)).toHaveLength(8);
    expect(html.match(/<g class="node ca[^"]*" id="n-/g)).toHaveLength(18);
    expect([...html.matchAll(/<text class="tier"[^>]*>([^<]+)</g)].map((m) => m[1])).toEqual(['spines', 'leaves']);
    expect(html).toContain('8 switches in 2 tiers, 18 host adapters');
  });

  it('colours each problem link by its worst state, dashed where no cable is now', () => {
    expect(
      Object.fromEntries(
        [
          ['moved, where it is', fabricPortKey(LEAF(1), 6), fabricPortKey(GPU(1, 0), 1)],
          ['moved, where it belongs', fabricPortKey(LEAF(1), 1), fabricPortKey(GPU(1, 0), 1)],
          ['swapped', fabricPortKey(LEAF(3), 2), fabricPortKey(GPU(3, 1), 1)],
          ['other rail', fabricPortKey(LEAF(4), 7), fabricPortKey(GPU(4, 0), 1)],
          ['pulled', fabricPortKey(LEAF(5), 4), fabricPortKey(SPINE1, 5)],
          ['1X', fabricPortKey(LEAF(6), 4), fabricPortKey(SPINE1, 6)],
          ['INIT', fabricPortKey(LEAF(4), 3), fabricPortKey(GPU(6, 1), 1)],
          ['rising errors', fabricPortKey(LEAF(2), 5), fabricPortKey('0x0002c90200600002', 2)],
          ['BER', fabricPortKey(LEAF(3), 4), fabricPortKey(SPINE1, 3)],
        ].map(([what, a, b]) => [what, linkClasses(html, a!, b!)]),
      ),
    ).toEqual({
      'moved, where it is': 'link problem miswired',
      'moved, where it belongs': 'link problem miswired absent',
      swapped: 'link problem miswired',
      'other rail': 'link problem miswired',
      pulled: 'link problem down absent',
      '1X': 'link problem degraded',
      INIT: 'link problem init',
      'rising errors': 'link problem errors',
      BER: 'link problem ber',
    });
    // Healthy links carry no id.
    expect(html.match(/<path class="link ok" d=/g)!.length).toBeGreaterThan(10);
    expect(html).not.toMatch(/class="link ok" id=/);
  });

  it('takes the worst state of a link: down before degraded before rising errors', () => {
    const key = fabricPortKey(LEAF(1), 4);
    const both: FabricMapInput = {
      ...input,
      risingErrors: new Set([key]),
      readings: new Map([...input.readings].map(([k, r]) => [k, k === key ? { ...r, width: 1 as const } : r])),
    };
    expect(linkClasses(renderFabricMap(both), key, fabricPortKey(SPINE1, 1))).toBe('link problem degraded');
  });

  it("lists the findings beside the picture in check's words, each linked to its line", () => {
    const items = [...html.matchAll(/<li class="(\w+)" id="f-\d+"><div class="what">(?:<a href="#([^"]+)">)?([^<]+)/g)];
    expect(items).toHaveLength(input.findings.length);
    expect(items.map((item) => item[3])).toEqual(
      input.findings.map((finding) => finding.summary.replace(/'/g, '&#39;').replace(/"/g, '&#34;')),
    );
    for (const [, , target] of items) if (target) expect(html).toContain(`id="${target}"`);
    expect(items.filter((item) => item[2] !== undefined).length).toBe(items.length);
    expect(html).toContain('→ swap the cables of rail1-leaf1 ports 2 and 3');
  });

  it('derives three tiers: leaves have hosts, spines one hop up, cores two', () => {
    const fabric = fabricFromPlan(
      [
        'leaf1 1 h1 1',
        'leaf2 1 h2 1',
        'leaf1 10 spine1 1',
        'leaf2 10 spine1 2',
        'leaf1 11 spine2 1',
        'leaf2 11 spine2 2',
        'spine1 10 core1 1',
        'spine2 10 core1 2',
      ].join('\n'),
    );
    const page = renderFabricMap({ topology: fabric.topology, readings: fabric.readings, expectations: new Map(), findings: [] });
    expect([...page.matchAll(/<text class="tier"[^>]*>([^<]+)</g)].map((m) => m[1])).toEqual(['cores', 'spines', 'leaves']);
    expect(page).toContain('Nothing to report: every link is as expected.');
    expect(page).toContain('0 problem links');
  });

  it('counts the hosts of a leaf above the limit and draws only those with a problem', () => {
    const fabric = fatTreeFabric({ spines: 2, leaves: 3, hostsPerLeaf: 10 });
    const key = fabricPortKey(leafGuid(2), 4);
    const page = renderFabricMap({ ...fabric, expectations: new Map(), findings: [], risingErrors: new Set([key]) });
    expect(page.match(/<g class="count">/g)).toHaveLength(3);
    expect(page.match(/<g class="node ca[^"]*"/g)).toHaveLength(1);
    expect(page).toContain(`id="n-${hostGuid(2, 4, 10).slice(2)}"`);
    expect(linkClasses(page, key, fabricPortKey(hostGuid(2, 4, 10), 1))).toBe('link problem errors');
    expect(page).toContain('<title>10 more hosts under leaf-1, every link as expected</title>');
    expect(page).toContain('<title>9 more hosts under leaf-2, every link as expected</title>');
    expect(page.match(/<g class="node switch[^"]*"/g)).toHaveLength(5);
    expect(page).toContain(`id="n-${spineGuid(1).slice(2)}"`);
  });

  it('escapes every name', () => {
    const fabric = fabricFromPlan('leaf 1 "<img src=x onerror=alert(1)> & \\"q\\"" 1');
    const page = renderFabricMap({ ...fabric, expectations: new Map(), findings: [] });
    expect(page).not.toContain('<img');
    expect(page).toContain('&#60;img src=x onerror=alert(1)&#62; &#38; &#34;q&#34;');
  });

  it('names a link element by its ends, in either order', () => {
    expect(linkElementId('0x0002c90200700001/6', '0x0002c90300c01000/1')).toBe('l-0002c90200700001-6-0002c90300c01000-1');
    expect(linkElementId('0x0002c90300c01000/1', '0x0002c90200700001/6')).toBe('l-0002c90200700001-6-0002c90300c01000-1');
  });
});
