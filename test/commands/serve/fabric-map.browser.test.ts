// The fabric map in a real headless browser (Debian's chromium, JavaScript off): the miswired rail
// tree of test/support/cabling.ts draws every switch and every problem link, the picture's pixels
// carry each problem's colour, the list beside it points at lines that exist; the 1 918-node fat
// tree draws every switch. Screenshots go to test-results/; `npm run generate` writes the README's
// docs/fabric-map.png (scripts/generate/screenshots.ts).
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { linkElementId } from '../../../src/commands/serve/fabric-map-layout.js';
import { renderFabricMap } from '../../../src/commands/serve/fabric-map.js';
import { fabricPortKey } from '../../../src/model/fabric.js';
import { startBrowser, type HeadlessBrowser } from '../../support/browser.js';
import { railTreeMapInput } from '../../support/cabling.js';
import { fatTreeFabric, leafGuid, spineGuid } from '../../../synthetic/fat-tree.js';
import { decodePng } from '../../support/png.js';
import { requireSystemTools } from '../../support/system.js';
import { PROJECT_ROOT } from '../../support/trees.js';

const { paths, skipReason } = requireSystemTools('fabric map in chromium', { chromium: 'chromium' });

const VIEWPORT = { width: 1400, height: 900 };
const RESULTS = path.join(PROJECT_ROOT, 'test-results');
const README_SCREENSHOT = path.join(PROJECT_ROOT, 'docs/fabric-map.png');

/** The colours of each link state in the map's stylesheet. */
// Okabe and Ito's palette: told apart by a colour-blind reader too (each state has its dashes besides).
const COLOURS = { down: '#d55e00', init: '#cc79a7', miswired: '#0072b2', degraded: '#e69f00', ber: '#000000', errors: '#56b4e9' } as const;

const LEAF = (n: number): string => `0x0002c90200700${n.toString(16).padStart(3, '0')}`;
const SPINE1 = '0x0002c90200600001';

describe.skipIf(skipReason !== undefined)('fabric map in a headless browser', () => {
  let headless: HeadlessBrowser;
  let context: BrowserContext;

  beforeAll(async () => {
    headless = await startBrowser(paths.chromium!);
    context = await headless.browser.newContext({ javaScriptEnabled: false, viewport: VIEWPORT });
    await mkdir(RESULTS, { recursive: true });
  });

  afterAll(async () => {
    await context?.close().catch(() => undefined);
    await headless?.stop();
  });

  it('draws the miswired rail tree: every switch, the problem links in their colours, the list pointing at them', async () => {
    const input = railTreeMapInput();
    const page = await context.newPage();
    await page.setContent(renderFabricMap(input));
    expect(await page.title()).toBe('InfiniBand fabric map');

    for (const node of input.topology.nodes.values()) {
      if (node.type !== 'switch') continue;
      const box = page.locator(`#n-${node.guid.slice(2)}`);
      expect(await box.getAttribute('class'), node.name).toMatch(/^node switch/);
      expect(await box.isVisible()).toBe(true);
    }
    const problems: [string, string, string][] = [
      [fabricPortKey(LEAF(3), 2), fabricPortKey('0x0002c90300c03100', 1), 'miswired'],
      [fabricPortKey(LEAF(3), 3), fabricPortKey('0x0002c90300c02100', 1), 'miswired'],
      [fabricPortKey(LEAF(1), 6), fabricPortKey('0x0002c90300c01000', 1), 'miswired'],
      [fabricPortKey(LEAF(4), 7), fabricPortKey('0x0002c90300c04000', 1), 'miswired'],
      [fabricPortKey(LEAF(5), 4), fabricPortKey(SPINE1, 5), 'down'],
      [fabricPortKey(LEAF(6), 4), fabricPortKey(SPINE1, 6), 'degraded'],
    ];
    for (const [a, b, state] of problems) {
      const link = page.locator(`#${linkElementId(a, b)}`);
      expect(await link.getAttribute('class'), `${a} ${b}`).toContain(`link problem ${state}`);
      const box = await link.boundingBox();
      expect(box, `${a} ${b} laid out`).not.toBeNull();
    }
    // The stylesheet applies: a down link is red and dashed.
    const strokeOf = (element: unknown): string[] => {
      const style = (
        globalThis as unknown as { getComputedStyle(e: unknown): { stroke: string; strokeDasharray: string } }
      ).getComputedStyle(element);
      return [style.stroke, style.strokeDasharray];
    };
    expect(await page.locator(`#${linkElementId(fabricPortKey(LEAF(5), 4), fabricPortKey(SPINE1, 5))}`).evaluate(strokeOf)).toEqual([
      'rgb(213, 94, 0)',
      '7px, 5px',
    ]);
    // A degraded link is dashed, a miswired one dash-dotted: not told by colour alone.
    expect(await page.locator(`#${linkElementId(fabricPortKey(LEAF(6), 4), fabricPortKey(SPINE1, 6))}`).evaluate(strokeOf)).toEqual([
      'rgb(230, 159, 0)',
      '6px, 3px',
    ]);

    // At 1 400 px the picture fits: no sideways scrolling, the last leaf in view.
    const overflow = (element: unknown): number[] => {
      const box = element as { scrollWidth: number; clientWidth: number };
      return [box.scrollWidth, box.clientWidth];
    };
    const [scrollWidth, clientWidth] = await page.locator('.picture').evaluate(overflow);
    expect(scrollWidth).toBeLessThanOrEqual(clientWidth!);
    const [pageWidth] = await page.locator('html').evaluate(overflow);
    expect(pageWidth).toBeLessThanOrEqual(VIEWPORT.width);

    // Every entry of the list beside the picture links to a line that exists.
    const targets = await page
      .locator('ol.problems a[href^="#l-"]')
      .evaluateAll((links) => links.map((link) => (link as unknown as { getAttribute(name: string): string }).getAttribute('href')));
    expect(targets.length).toBe(input.findings.length);
    for (const target of targets) expect(await page.locator(target).count(), target).toBe(1);
    expect(await page.locator('ol.problems li').first().innerText()).toMatch(
      /^port 3 of rail1-leaf2 \(cabled to port 1 of gpu06 mlx5_1\) is INIT with its link up/,
    );

    // The picture is not blank: each problem's colour is painted, over many pixels.
    const picture = decodePng(await page.locator('.picture svg').screenshot({ path: path.join(RESULTS, 'fabric-map-picture.png') }));
    expect(picture.width).toBeGreaterThan(700);
    const colours = picture.colours();
    for (const [state, colour] of Object.entries(COLOURS)) expect(colours.get(colour) ?? 0, `${state} ${colour}`).toBeGreaterThan(20);
    expect(colours.size).toBeGreaterThan(50);

    const screenshot = path.join(RESULTS, 'fabric-map.png');
    await page.screenshot({ path: screenshot });
    const readme = decodePng(await readFile(README_SCREENSHOT));
    expect([readme.width, readme.height]).toEqual([VIEWPORT.width, VIEWPORT.height]);
    await page.close();
  });

  it('draws the 1 918-node fat tree: 118 switches, 100 leaves of counted hosts, its problem links', async () => {
    const fabric = fatTreeFabric({ spines: 18, leaves: 100, hostsPerLeaf: 18 });
    const pulled = fabricPortKey(leafGuid(57), 18 + 9);
    const reading = fabric.readings.get(pulled)!;
    fabric.readings.set(pulled, {
      ...reading,
      state: { id: 1, name: 'DOWN' },
      physicalState: { id: 2, name: 'Polling' },
      width: undefined,
      speed: undefined,
      peer: undefined,
    });
    fabric.readings.set(fabricPortKey(spineGuid(9), 57), {
      ...fabric.readings.get(fabricPortKey(spineGuid(9), 57))!,
      state: { id: 1, name: 'DOWN' },
      physicalState: { id: 2, name: 'Polling' },
      width: undefined,
      speed: undefined,
      peer: undefined,
    });
    const page = await context.newPage();
    await page.setContent(
      renderFabricMap({ ...fabric, expectations: new Map(), findings: [], berOverThreshold: new Set([fabricPortKey(leafGuid(99), 3)]) }),
    );
    expect(await page.locator('g.node.switch').count()).toBe(118);
    expect(await page.locator('g.count').count()).toBe(100);
    expect(await page.locator('g.node.ca').count()).toBe(1);
    expect(await page.locator(`#${linkElementId(pulled, fabricPortKey(spineGuid(9), 57))}`).getAttribute('class')).toBe(
      'link problem down absent',
    );
    expect(await page.locator('.picture path.link.problem').count()).toBe(2);
    expect(await page.locator('.picture path.link.ok').count()).toBe(1799);
    // Readable: a leaf's name fits its box.
    expect(await page.locator(`#n-${leafGuid(100).slice(2)} text`).textContent()).toBe('leaf-100');
    await page.screenshot({ path: path.join(RESULTS, 'fabric-map-fat-tree.png') });
    await page.close();
  });
});
