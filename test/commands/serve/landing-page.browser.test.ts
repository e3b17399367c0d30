// The landing page in a real headless browser (Debian's chromium, JavaScript off): on the demo host
// it renders, the stuck-INIT finding is the first thing a person sees, the port table has every
// port; on the host whose adapters trained their PCIe links down (test/fixtures/sys/pcie) the PCIe
// findings come first and mark the ports of those adapters. The screenshots are kept in
// test-results/ for a person to look at.
import { mkdir, readFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Exporter } from '../../../src/commands/serve/exporter.js';
import { startBrowser, type HeadlessBrowser } from '../../support/browser.js';
import { exporterFromFlags } from '../../support/exporter.js';
import { requireSystemTools } from '../../support/system.js';
import { FIXTURES, PROJECT_ROOT } from '../../support/trees.js';

const { paths, skipReason } = requireSystemTools('landing page in chromium', { chromium: 'chromium' });

const VIEWPORT = { width: 1280, height: 900 };
const SCREENSHOT = path.join(PROJECT_ROOT, 'test-results/landing-page.png');
const PCIE_SCREENSHOT = path.join(PROJECT_ROOT, 'test-results/landing-page-pcie.png');

describe.skipIf(skipReason !== undefined)('landing page in a headless browser', () => {
  let exporter: Exporter;
  let address: string;
  let pcie: Exporter;
  let pcieAddress: string;
  let headless: HeadlessBrowser;
  let browser: Browser;

  beforeAll(async () => {
    exporter = exporterFromFlags(['--demo']);
    await exporter.collectOnce();
    address = await exporter.app.listen({ host: '127.0.0.1', port: 0 });
    pcie = exporterFromFlags(['--path.sysfs', path.join(FIXTURES, 'sys/pcie'), '--no-collector.diag']);
    await pcie.collectOnce();
    pcieAddress = await pcie.app.listen({ host: '127.0.0.1', port: 0 });
    headless = await startBrowser(paths.chromium!);
    browser = headless.browser;
  });

  afterAll(async () => {
    await headless?.stop();
    await exporter?.stop();
    await pcie?.stop();
  });

  it('renders without JavaScript and shows the INIT finding first, above the fold', async () => {
    const context = await browser.newContext({ javaScriptEnabled: false, viewport: VIEWPORT });
    try {
      const page = await context.newPage();
      const response = await page.goto(`${address}/`);
      expect(response?.status()).toBe(200);
      expect(await page.title()).toBe(`${hostname()} — InfiniBand Exporter`);
      expect(await page.locator('h1').innerText()).toBe(`${hostname()} — InfiniBand Exporter`);
      // The snapshot's age, the absolute time in its title; a refresh at the collection interval.
      expect(await page.locator('#findings .summary time').innerText()).toMatch(/^collected \d+ s ago$/);
      expect(await page.locator('#findings .summary time').getAttribute('title')).toMatch(/^\d{4}-\d\d-\d\dT/);
      expect(await page.locator('meta[http-equiv="refresh"]').getAttribute('content')).toBe('10');
      // The "Not checked" list check prints (the demo host has no module tools).
      const notChecked = page.locator('#not-checked li');
      expect(await notChecked.count()).toBeGreaterThan(0);
      expect(await notChecked.first().isVisible()).toBe(true);
      // Problem cells carry a class and a visible marker, not colour alone.
      const init = page.locator('#ports td.problem', { hasText: 'INIT' }).first();
      expect(await init.innerText()).toBe('⚠ INIT');

      const first = page.locator('#findings ol.findings > li').first();
      await expect.poll(() => first.getAttribute('class')).toBe('critical');
      expect(await first.innerText()).toMatch(
        /^CRITICAL\s+port mlx5_2\/1 is INIT with its link up \(LinkUp, SM LID 0\): no subnet manager has configured it\s+→ start a subnet manager on one host of this fabric: systemctl enable --now opensm/,
      );
      expect(await first.isVisible()).toBe(true);
      const box = await first.boundingBox();
      expect(box).not.toBeNull();
      expect(box!.y + box!.height).toBeLessThan(VIEWPORT.height);
      // The critical styling is applied: the stylesheet loaded and the page is laid out.
      // Runs in the page, where getComputedStyle exists (this project's types have no DOM).
      const backgroundOf = (element: unknown): string =>
        (globalThis as unknown as { getComputedStyle(e: unknown): { backgroundColor: string } }).getComputedStyle(element).backgroundColor;
      expect(await first.evaluate(backgroundOf)).toBe('rgb(253, 236, 234)');
      expect(await page.locator('#findings ol.findings > li').count()).toBe(14);
      expect(await page.locator('#ports tbody tr').count()).toBe(14);
      expect(await page.locator('#ports tbody tr.critical').count()).toBe(2);
      expect(await page.getByRole('link', { name: '/metrics' }).isVisible()).toBe(true);

      await mkdir(path.dirname(SCREENSHOT), { recursive: true });
      await page.screenshot({ path: SCREENSHOT, fullPage: true });
      const png = await readFile(SCREENSHOT);
      expect(png.subarray(1, 4).toString('ascii')).toBe('PNG');
      // IHDR: width and height, big-endian, at bytes 16 and 20.
      expect(png.readUInt32BE(16)).toBe(VIEWPORT.width);
      expect(png.readUInt32BE(20)).toBeGreaterThan(VIEWPORT.height);
    } finally {
      await context.close();
    }
  });

  it('shows the PCIe findings of a host whose adapters trained their links down first, and marks their ports', async () => {
    const context = await browser.newContext({ javaScriptEnabled: false, viewport: VIEWPORT });
    try {
      const page = await context.newPage();
      const response = await page.goto(`${pcieAddress}/`);
      expect(response?.status()).toBe(200);
      const findings = page.locator('#findings ol.findings > li');
      await expect.poll(() => findings.first().getAttribute('class')).toBe('warning');
      expect(await findings.first().innerText()).toMatch(
        /^WARNING\s+mlx5_1 runs PCIe Gen5 x8 of x16: its NDR port can move at most ~31 GB\/s of its 50\s+→ reseat the card/,
      );
      expect(await findings.nth(1).innerText()).toMatch(/^WARNING\s+mlx5_2 runs PCIe Gen3 x16 of Gen4 x16/);
      expect(await findings.first().isVisible()).toBe(true);
      const box = await findings.first().boundingBox();
      expect(box!.y + box!.height).toBeLessThan(VIEWPORT.height);
      expect(await page.locator('#findings p.summary').innerText()).toMatch(/^0 critical, 2 warning, 1 info, collected \d+ s ago$/);
      // The runbook link of the finding leads to the PCIe section.
      expect(await findings.first().getByRole('link', { name: 'runbook' }).getAttribute('href')).toMatch(
        /\/runbooks#infinibandpcielinkdegraded$/,
      );
      // The ports of the two adapters are marked with the finding; the healthy adapters' are not.
      const rows = page.locator('#ports tbody tr');
      expect(await rows.count()).toBe(4);
      const warned = await page.locator('#ports tbody tr.warning td:first-child strong').allInnerTexts();
      expect(warned).toEqual(['mlx5_1', 'mlx5_2']);

      await mkdir(path.dirname(PCIE_SCREENSHOT), { recursive: true });
      await page.screenshot({ path: PCIE_SCREENSHOT, fullPage: true });
      expect((await readFile(PCIE_SCREENSHOT)).subarray(1, 4).toString('ascii')).toBe('PNG');
    } finally {
      await context.close();
    }
  });
});
