// The README's picture of the fabric map (docs/fabric-map.png): the miswired rail tree of
// test/support/cabling.ts in Debian's chromium. Pixels differ between chromium and font versions,
// so no test compares it byte for byte; test/commands/serve/fabric-map.browser.test.ts checks its size.
import { execFileSync } from 'node:child_process';
import { renderFabricMap } from '../../src/commands/serve/fabric-map.js';
import { startBrowser } from '../../test/support/browser.js';
import { railTreeMapInput } from '../../test/support/cabling.js';
import type { GeneratedFile } from './generated-file.js';

export const FABRIC_MAP_VIEWPORT = { width: 1400, height: 900 };

export async function screenshotFiles(): Promise<GeneratedFile[]> {
  const chromium = execFileSync('sh', ['-c', 'command -v chromium || command -v chromium-browser'], { encoding: 'utf8' }).trim();
  const headless = await startBrowser(chromium);
  try {
    const context = await headless.browser.newContext({ javaScriptEnabled: false, viewport: FABRIC_MAP_VIEWPORT });
    const page = await context.newPage();
    await page.setContent(renderFabricMap(railTreeMapInput()));
    return [{ path: 'docs/fabric-map.png', content: await page.screenshot() }];
  } finally {
    await headless.stop();
  }
}
