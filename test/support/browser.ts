// Headless Debian chromium for the browser tests, driven by playwright-core: a browser server on
// 127.0.0.1 with flags that work in containers and CI (no sandbox, no GPU, nothing that phones
// home; Playwright gives it a fresh profile of its own), stopped by its PID.
import { chromium, type Browser, type BrowserServer } from 'playwright-core';

export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export interface HeadlessBrowser {
  browser: Browser;
  stop(): Promise<void>;
}

export async function startBrowser(executablePath: string): Promise<HeadlessBrowser> {
  const server: BrowserServer = await chromium.launchServer({
    executablePath,
    headless: true,
    args: CHROMIUM_ARGS,
    host: '127.0.0.1',
    port: 0,
  });
  const browser = await chromium.connect(server.wsEndpoint());
  return {
    browser,
    async stop() {
      const pid = server.process().pid;
      await browser.close().catch(() => undefined);
      await server.close().catch(() => undefined);
      if (pid !== undefined) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    },
  };
}
