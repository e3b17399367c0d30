// The landing page `/`: the findings of the current snapshot worst first, the port table, then
// the links; every untrusted string escaped; behind the same basic auth as /metrics.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import bcrypt from 'bcryptjs';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { collectOnce } from '../../src/check/one-cycle.js';
import { parseCheckCommandLine } from '../../src/config/settings.js';
import { landingPage } from '../../src/server/landing-page.js';
import type { Snapshot } from '../../src/snapshot/types.js';
import type { Exporter } from '../../src/exporter.js';
import { exporterFromFlags } from '../support/exporter.js';
import { copyTree, DGX, ZOO, ZOO_CONFIG, type TempTree } from '../support/trees.js';

let exporters: Exporter[] = [];
let trees: TempTree[] = [];
afterEach(async () => {
  for (const exporter of exporters.splice(0)) await exporter.stop();
  for (const tree of trees.splice(0)) await tree.remove();
});

function exporter(flags: string[]): Exporter {
  const made = exporterFromFlags(flags);
  exporters.push(made);
  return made;
}

const HOSTILE = `<script>alert("pwned")</script><img src=x onerror=alert(1)> & 'quotes'`;

describe('landing page', () => {
  it('shows the findings worst first, then every port, then the links', async () => {
    const demo = exporter(['--demo']);
    await demo.collectOnce();
    const page = (await demo.app.inject({ url: '/' })).body;
    const findings = [...page.matchAll(/<li class="(critical|warning|info)">/g)].map((match) => match[1]);
    expect(findings).toEqual(['critical', 'critical', 'warning', 'warning', 'warning', 'warning', ...Array(8).fill('info')]);
    expect(page).toContain('<div class="what">port mlx5_2/1 is INIT with its link up (LinkUp, SM LID 0): no subnet manager has configured it</div>');
    expect(page).toContain('systemctl enable --now opensm');
    expect(page).toContain('<a href="https://github.com/infiniband-exporter/infiniband-exporter/blob/main/docs/runbooks.md#infinibandportstuckinitializing">runbook</a>');
    expect(page).toContain('<p class="summary">2 critical, 4 warning, 8 info as of <time');
    const rows = [...page.matchAll(/<tr class="(\w+)">/g)].map((match) => match[1]);
    expect(rows).toHaveLength(14);
    expect(page).toMatch(/<tr class="critical"><td><strong>mlx5_2<\/strong><br><span class="note">zoo01 mlx5_2<\/span><\/td><td>1<\/td><td>InfiniBand<\/td><td>INIT<\/td><td>LinkUp<\/td><td>4X NDR<\/td><td>4X NDR \(config\)<\/td><td>ib2<\/td><td>—<\/td><\/tr>/);
    expect(page).toMatch(/<tr class="ok"><td><strong>mlx5_1<\/strong>.*<td>Ethernet<\/td><td>ACTIVE<\/td>/);
    const order = ['id="findings"', 'id="ports"', 'href="/metrics"', 'href="/healthz"', 'href="/ready"'].map((marker) => page.indexOf(marker));
    expect(order.every((at) => at >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    expect(page).not.toMatch(/<script/i);
  });

  it('says so before the first collection, and that nothing is wrong on a healthy host', async () => {
    const dgx = exporter(['--path.sysfs', DGX, '--no-collector.diag']);
    expect((await dgx.app.inject({ url: '/' })).body).toContain('The first collection has not finished yet');
    await dgx.collectOnce();
    const page = (await dgx.app.inject({ url: '/' })).body;
    expect(page).toContain('0 critical, 0 warning, 8 info');
    expect([...page.matchAll(/<tr class="ok">/g)]).toHaveLength(0);
    expect([...page.matchAll(/<tr class="info">/g)]).toHaveLength(8);
  });

  it('escapes a hostile node description read from sysfs', async () => {
    const tree = await copyTree(ZOO);
    trees.push(tree);
    writeFileSync(path.join(tree.root, 'class/infiniband/mlx5_2/node_desc'), `${HOSTILE}\n`);
    const zoo = exporter(['--path.sysfs', tree.root, '--config.file', ZOO_CONFIG]);
    await zoo.collectOnce();
    const page = (await zoo.app.inject({ url: '/' })).body;
    expect(page).toContain('&#60;script&#62;alert(&#34;pwned&#34;)&#60;/script&#62;&#60;img src=x onerror=alert(1)&#62; &#38; &#39;quotes&#39;');
    expect(page).not.toContain('<script>');
    expect(page).not.toContain('<img');
  });

  it('escapes the fabric\'s peer descriptions and every other string it shows', async () => {
    const command = parseCheckCommandLine(['--path.sysfs', DGX, '--no-collector.diag']);
    if (command.action !== 'check') throw new Error('not a check command line');
    const { snapshot } = await collectOnce(command.settings, pino({ level: 'silent' }), { ethtool: 'not-installed' });
    const peer = { guid: '0x0002c90300a1b3d0', port: 7, lid: 12, nodeType: 'Switch' as const, description: HOSTILE, counters: [] };
    const hostile: Snapshot = {
      ...snapshot,
      diag: new Map([['mlx5_0/1', { device: 'mlx5_0', port: 1, subnetManager: undefined, enabledCapability: undefined, peer, counters: [] }]]),
      ipoib: snapshot.ipoib.map((iface, index) => (index === 0 ? { ...iface, name: '<b>ib0</b>' } : iface)),
    };
    const page = landingPage({ telemetryPath: '/metrics?<x>', version: '<v>', snapshot: hostile, takenAt: 0 });
    expect(page).toContain('&#60;script&#62;alert(&#34;pwned&#34;)&#60;/script&#62;');
    expect(page).toContain('&#60;b&#62;ib0&#60;/b&#62;');
    expect(page).toContain('href="/metrics?&#60;x&#62;"');
    expect(page).not.toMatch(/<(script|img|b|x|v)\b/);
  });

  it('asks for the same basic auth as /metrics', async () => {
    const tree = await copyTree(ZOO);
    trees.push(tree);
    const webConfig = path.join(tree.root, '..', 'web.yml');
    writeFileSync(webConfig, `basic_auth_users:\n  alice: ${bcrypt.hashSync('secret', 4)}\n`);
    const secured = exporter(['--path.sysfs', tree.root, '--no-collector.diag', `--web.config.file=${webConfig}`]);
    await secured.collectOnce();
    for (const url of ['/', '/metrics']) {
      const refused = await secured.app.inject({ url });
      expect(refused.statusCode, url).toBe(401);
      expect(refused.body, url).not.toContain('mlx5');
      const allowed = await secured.app.inject({ url, headers: { authorization: `Basic ${Buffer.from('alice:secret').toString('base64')}` } });
      expect(allowed.statusCode, url).toBe(200);
    }
  });
});
