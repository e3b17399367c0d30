// The landing page of the demo host in a real headless browser (Debian's chromium, JavaScript
// off): it renders, the stuck-INIT finding is the first thing a person sees, the port table has
// every port. The screenshot is kept in test-results/landing-page.png for a person to look at.
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { chromium, type Browser, type BrowserServer } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Exporter } from '../../../src/commands/serve/exporter.js';
import { exporterFromFlags } from '../../support/exporter.js';
import { requireSystemTools } from '../../support/system.js';
import { PROJECT_ROOT } from '../../support/trees.js';

const { paths, skipReason } = requireSystemTools('landing page in chromium', { chromium: 'chromium' });

// Flags that work in containers and CI: no sandbox (no user namespaces), no GPU, nothing that
// phones home; Playwright gives the browser a fresh profile directory of its own.
const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const VIEWPORT = { width: 1280, height: 900 };
const SCREENSHOT = path.join(PROJECT_ROOT, 'test-results/landing-page.png');

describe.skipIf(skipReason !== undefined)('landing page in a headless browser', () => {
  let exporter: Exporter;
  let address: string;
  let server: BrowserServer;
  let browser: Browser;

  beforeAll(async () => {
    exporter = exporterFromFlags(['--demo']);
    await exporter.collectOnce();
    address = await exporter.app.listen({ host: '127.0.0.1', port: 0 });
    server = await chromium.launchServer({ executablePath: paths.chromium, headless: true, args: CHROMIUM_ARGS, host: '127.0.0.1', port: 0 });
    browser = await chromium.connect(server.wsEndpoint());
  });

  afterAll(async () => {
    const pid = server?.process().pid;
    await browser?.close().catch(() => undefined);
    await server?.close().catch(() => undefined);
    if (pid !== undefined) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await exporter?.stop();
  });

  it('renders without JavaScript and shows the INIT finding first, above the fold', async () => {
    const context = await browser.newContext({ javaScriptEnabled: false, viewport: VIEWPORT });
    try {
      const page = await context.newPage();
      const response = await page.goto(`${address}/`);
      expect(response?.status()).toBe(200);
      expect(await page.title()).toBe('InfiniBand Exporter');

      const first = page.locator('#findings ol.findings > li').first();
      await expect.poll(() => first.getAttribute('class')).toBe('critical');
      expect(await first.innerText()).toMatch(/^CRITICAL\s+port mlx5_2\/1 is INIT with its link up \(LinkUp, SM LID 0\): no subnet manager has configured it\s+→ start a subnet manager on one host of this fabric: systemctl enable --now opensm/);
      expect(await first.isVisible()).toBe(true);
      const box = await first.boundingBox();
      expect(box).not.toBeNull();
      expect(box!.y + box!.height).toBeLessThan(VIEWPORT.height);
      // The critical styling is applied: the stylesheet loaded and the page is laid out.
      // Runs in the page, where getComputedStyle exists (this project's types have no DOM).
      const backgroundOf = (element: unknown): string => (globalThis as unknown as { getComputedStyle(e: unknown): { backgroundColor: string } }).getComputedStyle(element).backgroundColor;
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
});
