// The landing page `/`: the findings of the current snapshot worst first, the port table, then
// the links; every untrusted string escaped; behind the same basic auth as /metrics.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import bcrypt from 'bcryptjs';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { collectOnce } from '../../../src/commands/check/one-cycle.js';
import { parseServeCommandLine, parseServeCommandLine as parseCommandLine } from '../../../src/commands/serve/command-line.js';
import { FABRIC_DISCOVERY } from '../../../src/collectors/fabric/discovery.js';
import { FABRIC_PORTS } from '../../../src/collectors/fabric/ports/index.js';
import { IPOIB } from '../../../src/collectors/host/ipoib.js';
import { defineCollector } from '../../../src/collection/collector.js';
import { HOST_READING } from '../../../src/collectors/host/host-reading.js';
import { COLLECTORS } from '../../../src/collectors/registry.js';
import { SMPQUERY } from '../../../src/collectors/diag/smpquery.js';
import { Exporter } from '../../../src/commands/serve/exporter.js';
import { LANDING_PAGE_LIST_LIMIT, landingPage } from '../../../src/commands/serve/landing-page.js';
import type { FabricPortReading } from '../../../src/model/fabric.js';
import type { Snapshot } from '../../../src/model/snapshot.js';
import { exporterFromFlags } from '../../support/exporter.js';
import { copyTree, DGX, FIXTURES, ZOO, ZOO_CONFIG, type TempTree } from '../../support/trees.js';
import { ReplayRunner } from '../../support/replay.js';
import type { FabricCommand } from '../../../src/sources/fabric/commands.js';
import { CounterRow } from '../../../src/model/counter-row.js';

const exporters: Exporter[] = [];
const trees: TempTree[] = [];
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
    expect(page).toContain(
      '<div class="what">port mlx5_2/1 is INIT with its link up (LinkUp, SM LID 0): no subnet manager has configured it</div>',
    );
    expect(page).toContain('systemctl enable --now opensm');
    expect(page).toContain('<a href="/runbooks#infinibandportstuckinitializing">runbook</a>');
    expect(page).toContain('<p class="summary">2 critical, 4 warning, 8 info, <time');
    const rows = [...page.matchAll(/<tr class="(\w+)">/g)].map((match) => match[1]);
    expect(rows).toHaveLength(14);
    expect(page).toMatch(
      /<tr class="critical"><td><strong>mlx5_2<\/strong><br><span class="note">zoo01 mlx5_2<\/span><\/td><td>1<\/td><td>InfiniBand<\/td><td class="problem"><span class="marker" title="problem">⚠ <\/span>INIT<\/td><td>LinkUp<\/td><td>4X NDR<\/td><td>4X NDR \(config\)<\/td><td>ib2<\/td><td>—<\/td><\/tr>/,
    );
    expect(page).toMatch(/<tr class="ok"><td><strong>mlx5_1<\/strong>.*<td>Ethernet<\/td><td>ACTIVE<\/td>/);
    // Problem cells are marked by a class and a visible sign, not by colour alone: INIT, Polling, 1X, SDR below the expected speed.
    const marked = [...page.matchAll(/<td class="problem"><span class="marker" title="problem">⚠ <\/span>([^<]+)<\/td>/g)].map(
      (match) => match[1],
    );
    expect(marked).toEqual(expect.arrayContaining(['INIT', 'Polling', expect.stringMatching(/^1X /), expect.stringMatching(/ SDR$/)]));
    expect(page).not.toMatch(/<td class="problem">[^<]*ACTIVE/);
    const order = ['id="findings"', 'id="ports"', 'href="/metrics"', 'href="/healthz"', 'href="/ready"'].map((marker) =>
      page.indexOf(marker),
    );
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
    expect(page).toContain(
      '&#60;script&#62;alert(&#34;pwned&#34;)&#60;/script&#62;&#60;img src=x onerror=alert(1)&#62; &#38; &#39;quotes&#39;',
    );
    expect(page).not.toContain('<script>');
    expect(page).not.toContain('<img');
  });

  it("escapes the fabric's peer descriptions and every other string it shows", async () => {
    const command = parseServeCommandLine(['--path.sysfs', DGX, '--no-collector.diag']);
    if (command.action !== 'run') throw new Error('not a command line that runs');
    const { snapshot } = await collectOnce(command.settings, pino({ level: 'silent' }), COLLECTORS, {
      ethtool: 'not-installed',
      module: 'not-installed',
    });
    const peer = { guid: '0x0002c90300a1b3d0', port: 7, lid: 12, nodeType: 'Switch' as const, description: HOSTILE };
    const hostile: Snapshot = {
      ...snapshot,
      parts: new Map([
        ...snapshot.parts,
        [SMPQUERY.name, new Map([['mlx5_0/1', { enabledCapability: undefined, peer }]])],
        [IPOIB.name, IPOIB.of(snapshot)!.map((iface, index) => (index === 0 ? { ...iface, name: '<b>ib0</b>' } : iface))],
      ]),
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
      const allowed = await secured.app.inject({
        url,
        headers: { authorization: `Basic ${Buffer.from('alice:secret').toString('base64')}` },
      });
      expect(allowed.statusCode, url).toBe(200);
    }
  });
});

describe('landing page in fabric mode', () => {
  /** An exporter on the dgx host in fabric mode over the recorded fat tree, one cycle of everything done. */
  async function fabricExporter(scenarios: string[]): Promise<Exporter> {
    const command = parseCommandLine([
      '--path.sysfs',
      DGX,
      '--config.file',
      path.join(FIXTURES, 'config/fabric.yml'),
      '--diag.timeout',
      '2s',
    ]);
    if (command.action !== 'run') throw new Error('unexpected');
    const made = new Exporter({
      settings: command.settings,
      logger: pino({ level: 'silent' }),
      runners: { module: 'not-installed', fabric: new ReplayRunner<FabricCommand>('fabric', scenarios) },
    });
    exporters.push(made);
    await made.collectOnce();
    await made.collectFabricOnce();
    return made;
  }

  it("shows the fabric's findings with the host's, worst first, and a summary of the fabric with its unhealthy links, both ends named", async () => {
    const page = (await (await fabricExporter(['pulled', 'healthy'])).app.inject({ url: '/' })).body;
    const findings = [...page.matchAll(/<li class="(critical|warning|info)">/g)].map((match) => match[1]);
    expect(findings).toEqual([...Array(3).fill('critical'), 'warning', ...Array(10).fill('info')]);
    expect(page).toContain('<div class="what">port 2 of MF0;leaf-1:SX6036/U1 has no link (Polling)');
    expect(page).toContain('<a href="/runbooks#infinibandfabricportdown">runbook</a>');
    expect(page).toContain('<p class="summary">3 critical, 1 warning, 10 info, <time');
    const fabric = page.slice(page.indexOf('<section id="fabric">'), page.indexOf('</section>', page.indexOf('<section id="fabric">')));
    expect(fabric).toContain('<dt>nodes</dt><dd>5 switches, 8 CAs</dd><dt>links</dt><dd>13 (discovered ');
    expect(fabric).toContain('<dt>ports read</dt><dd>32, 18 with a link</dd>');
    expect(fabric).toContain('<tr><td>0x0002c90300a10011</td><td>node11 HCA-1</td><td>1</td><td>MASTER</td><td>5</td></tr>');
    expect(fabric).toContain('<tr><td>0x0002c90300a30031</td><td>node33 HCA-1</td><td>14</td><td>STANDBY</td><td>5</td></tr>');
    const rows = [...fabric.matchAll(/<tr class="(critical|warning|info)">(.*?)<\/tr>/g)].map((match) =>
      match[2]!.replace(/<\/?td>/g, '|'),
    );
    expect(rows).toEqual([
      '|critical||MF0;leaf-1:SX6036/U1 port 2||—||DOWN / Polling||—||—||fabric-port-down|',
      '|critical||MF0;leaf-3:SX6036/U1 port 5||—||DOWN / Polling||—||—||fabric-port-down|',
      '|critical||MF0;spine-2:SX6036/U1 port 3||—||DOWN / Polling||—||—||fabric-port-down|',
      '|warning||MF0;spine-1:SX6036/U1 port 1||MF0;leaf-1:SX6036/U1 port 4||ACTIVE / LinkUp||1X QDR||4X QDR (config)||fabric-link-degraded|',
    ]);
    const order = ['id="findings"', 'id="ports"', 'id="fabric"', 'href="/metrics"'].map((marker) => page.indexOf(marker));
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    expect(page).not.toMatch(/<script/i);
  });

  it('has no fabric section without fabric mode', async () => {
    const dgx = exporter(['--path.sysfs', DGX, '--no-collector.diag']);
    await dgx.collectOnce();
    expect((await dgx.app.inject({ url: '/' })).body).not.toContain('id="fabric"');
  });

  it('escapes a hostile node description and node name coming from the fabric', async () => {
    const snapshot = (await fabricExporter(['pulled', 'healthy'])).collectors.snapshot!;
    const discovery = FABRIC_DISCOVERY.of(snapshot)!;
    const nodes = new Map(
      [...discovery.topology!.nodes].map(([guid, node]) => [
        guid,
        { ...node, description: HOSTILE, name: node.type === 'ca' ? `<b>${node.description}</b>` : undefined },
      ]),
    );
    const hostile: Snapshot = {
      ...snapshot,
      parts: new Map([...snapshot.parts, [FABRIC_DISCOVERY.name, { ...discovery, topology: { ...discovery.topology!, nodes } }]]),
    };
    const page = landingPage({ telemetryPath: '/metrics', version: '1', snapshot: hostile, takenAt: 0 });
    expect(page).toContain(
      'port 5 of &#60;script&#62;alert(&#34;pwned&#34;)&#60;/script&#62;&#60;img src=x onerror=alert(1)&#62; &#38; &#39;quotes&#39; has no link',
    );
    expect(page).toContain('<td>&#60;b&#62;node11 HCA-1&#60;/b&#62;</td>');
    expect(page).not.toMatch(/<(script|img|b)\b/);
  });

  it('lists at most LANDING_PAGE_LIST_LIMIT findings and unhealthy ports, and says how many more', async () => {
    const snapshot = (await fabricExporter(['healthy'])).collectors.snapshot!;
    const read = FABRIC_PORTS.of(snapshot)!;
    const ports = new Map(read.ports);
    // A fabric of 150 more switch ports INIT with LinkUp (no subnet manager ever configured them).
    for (let port = 1; port <= 150; port++) {
      const reading: FabricPortReading = {
        nodeGuid: '0x0002c902009a0000',
        port,
        state: { id: 2, name: 'INIT' },
        physicalState: { id: 5, name: 'LinkUp' },
        width: 4,
        speed: 'QDR',
        peer: undefined,
        counters: CounterRow.EMPTY,
      };
      ports.set(`${reading.nodeGuid}/${port}`, reading);
    }
    const page = landingPage({
      telemetryPath: '/metrics',
      version: '1',
      snapshot: { ...snapshot, parts: new Map([...snapshot.parts, [FABRIC_PORTS.name, { ...read, ports }]]) },
      takenAt: 0,
    });
    const findings = page.slice(page.indexOf('id="findings"'), page.indexOf('id="ports"'));
    expect([...findings.matchAll(/<li class=/g)]).toHaveLength(LANDING_PAGE_LIST_LIMIT);
    // 150 INIT + the degraded ISL, the tie, the group and 8 IPoIB interfaces of the dgx.
    expect(findings).toContain(
      `… and ${150 + 11 - LANDING_PAGE_LIST_LIMIT} more findings: <code>infiniband-exporter check --collector.fabric</code> lists them all.`,
    );
    expect(page).toContain('<p class="summary">150 critical, 1 warning, 10 info');
    const fabric = page.slice(page.indexOf('id="fabric"'));
    expect([...fabric.matchAll(/<tr class="(critical|warning)">/g)]).toHaveLength(LANDING_PAGE_LIST_LIMIT);
    expect(fabric).toContain(`… and ${151 - LANDING_PAGE_LIST_LIMIT} more unhealthy ports`);
  });

  it('is made once per snapshot viewed: the findings are judged again only for a new reading', async () => {
    let judged = 0;
    // A collector that only counts how often the findings are judged.
    const counted = defineCollector<number>({
      name: 'counted',
      checks: 'nothing',
      flags: [],
      scope: 'host',
      schedule: { cycle: HOST_READING },
      onOverrun: 'keep',
      setUp: () => ({ read: async () => ({ part: 1 }) }),
      findings: () => {
        judged += 1;
        return [];
      },
      failure: { consequence: 'nothing is counted', meaning: 'nothing', cause: 'nothing' },
    });
    const made = exporterFromFlags(['--path.sysfs', ZOO, '--no-collector.diag'], undefined, { collectors: [...COLLECTORS, counted] });
    exporters.push(made);
    await made.collectOnce();
    const first = await made.app.inject({ method: 'GET', url: '/' });
    const second = await made.app.inject({ method: 'GET', url: '/' });
    expect(second.body).toBe(first.body);
    expect(judged).toBe(1);
    await made.collectOnce();
    expect((await made.app.inject({ method: 'GET', url: '/' })).statusCode).toBe(200);
    expect(judged).toBe(2);
  });
});
