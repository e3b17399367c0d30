// The bad-links verdict on a generated fabric: hidden links gain symbol errors at chosen rates,
// go down at both ends or at one, then go quiet; the list holds exactly the links the rules name,
// with their reasons, through the clean period and not after, within the cap, across a restart
// and a corrupt state file. The first test runs the fake tools through the real command runner;
// the others replay the same outputs in the test process (a cycle each costs no process).
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import bcryptjs from 'bcryptjs';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { FABRIC_PORTS_CYCLE } from '../../../src/collectors/fabric/fabric-mode.js';
import { FABRIC_MODULE } from '../../../src/collectors/fabric/fabric-module.js';
import type { Exporter } from '../../../src/commands/serve/exporter.js';
import { inShard } from '../../../src/model/fabric.js';
import type { FabricCommand } from '../../../src/sources/fabric/commands.js';
import { exporterFromFlags } from '../../support/exporter.js';
import { samplesOf, sampleValue, scrape } from '../../support/exposition.js';
import { MODULE_FIXTURES, fakeModuleTool } from '../../support/fake-module-tool.js';
import { ReplayRunner } from '../../support/replay.js';
import {
  fakeFabricTools,
  fakeToolFlags,
  generateFabric,
  writeScenario,
  type GeneratedFabric,
  type GeneratedPort,
} from '../../../synthetic/fabric-generator/index.js';

const MIN = 60_000;
const root = mkdtempSync(path.join(tmpdir(), 'ibx-verdict-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const guid = (port: GeneratedPort): string => `0x${port.node.guid.toString(16).padStart(16, '0')}`;

/** A two-tier fabric (4 leaves of 4 hosts, 2 spines), written under `dir`. */
function fabricAt(dir: string): {
  fabric: GeneratedFabric;
  uplinks: [GeneratedPort, GeneratedPort][];
  hostLinks: [GeneratedPort, GeneratedPort][];
} {
  const fabric = generateFabric({ shape: { tiers: 2, spines: 2, leaves: 4, hostsPerLeaf: 4 } });
  writeScenario(fabric, dir);
  const switchEndFirst = ([a, b]: [GeneratedPort, GeneratedPort]): [GeneratedPort, GeneratedPort] =>
    a.node.kind === 'switch' ? [a, b] : [b, a];
  return {
    fabric,
    uplinks: fabric.cables.filter(([a, b]) => a.node.kind === 'switch' && b.node.kind === 'switch'),
    hostLinks: fabric.cables.filter(([a, b]) => a.node.kind !== b.node.kind).map(switchEndFirst),
  };
}

/** Raise a port's counters by these amounts (the generator prints them in every later output). */
function raise(port: GeneratedPort, field: 'SymbolErrorCounter' | 'LinkDownedCounter', by: number): void {
  port.errors ??= new Map();
  port.errors.set(field, (port.errors.get(field) ?? 0) + by);
}

/** The listed links as `guid/port reason` lines, in any order of the exposition. */
function listed(text: string): string[] {
  return samplesOf(text, 'infiniband_fabric_link_bad')
    .map((line) => {
      const labels = Object.fromEntries([...line.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
      return `${labels.node_guid}/${labels.port}-${labels.peer_guid}/${labels.peer_port} ${labels.reason}`;
    })
    .sort();
}
const linkOf = ([a, b]: [GeneratedPort, GeneratedPort]): string => `${guid(a)}/${a.number}-${guid(b)}/${b.number}`;
/** The label an uplink is listed by: its lower end first. */
const uplinkOf = ([a, b]: [GeneratedPort, GeneratedPort]): string =>
  `${guid(a)}/${a.number}` < `${guid(b)}/${b.number}` ? linkOf([a, b]) : linkOf([b, a]);

/** Fabric mode without a host's own devices, its state in `dir`/state. */
const fabricFlags = (dir: string): string[] => [
  '--path.sysfs',
  '/nonexistent',
  '--no-collector.diag',
  '--collector.fabric',
  '--fabric.state-dir',
  path.join(dir, 'state'),
];

/** An exporter on the replayed scenario of `dir`, at `clock()`, with its state in `dir`/state. */
function replayed(dir: string, clock: () => number, flags: string[] = [], logger?: pino.Logger): Exporter {
  return exporterFromFlags([...fabricFlags(dir), ...flags], clock, {
    runners: { fabric: new ReplayRunner<FabricCommand>('fabric', path.join(dir, 'scenario')) },
    ...(logger && { logger }),
  });
}

describe('the bad-links verdict on a generated fabric', () => {
  it('lists exactly the links the rules name, keeps them through the clean period and drops them after (fake tools)', async () => {
    const dir = path.join(root, 'rules');
    const scenario = path.join(dir, 'scenario');
    const { fabric, uplinks, hostLinks } = fabricAt(scenario);
    const tools = await fakeFabricTools(scenario, path.join(dir, 'bin'));
    let clock = Date.UTC(2026, 0, 1);
    const exporter = exporterFromFlags([...fabricFlags(dir), '--fabric.verdict.ber', '1e-12', ...fakeToolFlags(tools)], () => clock);
    const cycleAt = async (minute: number): Promise<string> => {
      writeScenario(fabric, scenario);
      clock = Date.UTC(2026, 0, 1) + minute * MIN;
      await exporter.collectors.runCycle(FABRIC_PORTS_CYCLE);
      return scrape(exporter);
    };
    try {
      await exporter.collectFabricOnce();
      expect(listed(await scrape(exporter))).toEqual([]);
      // At 10^-12 a 4X QDR link (32 Gb/s of data) has 23 errors per 12 minutes, 240 per 125. Over
      // both budgets; within them; down at both ends; down at one end; a host link over the short budget only.
      raise(uplinks[0]![0], 'SymbolErrorCounter', 500);
      raise(uplinks[1]![1], 'SymbolErrorCounter', 10);
      raise(uplinks[2]![0], 'LinkDownedCounter', 1);
      raise(uplinks[2]![1], 'LinkDownedCounter', 1);
      raise(uplinks[3]![0], 'LinkDownedCounter', 1);
      raise(hostLinks[0]![0], 'SymbolErrorCounter', 40);
      const expected = [
        `${uplinkOf(uplinks[0]!)} symbol_errors_12m`,
        `${uplinkOf(uplinks[0]!)} symbol_errors_125m`,
        `${uplinkOf(uplinks[2]!)} link_downed`,
        `${linkOf(hostLinks[0]!)} symbol_errors_12m`,
      ].sort();
      const first = await cycleAt(1);
      expect(listed(first)).toEqual(expected);
      expect(sampleValue(first, 'infiniband_fabric_links_bad_over_cap')).toBe(0);
      // Quiet since minute 1: listed through 126 minutes, gone after.
      expect(listed(await cycleAt(60))).toEqual(expected);
      expect(listed(await cycleAt(126))).toEqual(expected);
      expect(listed(await cycleAt(127))).toEqual([]);
      expect(JSON.parse(readFileSync(path.join(dir, 'state', 'fabric-verdict.json'), 'utf8'))).toEqual({ version: 1, links: [] });
    } finally {
      await exporter.stop();
    }
  }, 120_000);

  it("lists a link whose switch port's module is at its high temperature alarm, or whose PHY's effective BER is over 10^-12 (in-band mstlink), until a clean period after they read clean (fake tools)", async () => {
    const dir = path.join(root, 'module');
    const scenario = path.join(dir, 'scenario');
    const { fabric, uplinks, hostLinks } = fabricAt(scenario);
    const tools = await fakeFabricTools(scenario, path.join(dir, 'bin'));
    // What the fake mstlink answers for two switch ports, rewritten between module rounds; every other port fails as a port without a module reader does.
    const answers = path.join(dir, 'answers');
    mkdirSync(answers, { recursive: true });
    const answer = (name: string, fixture: string): string => {
      copyFileSync(path.join(MODULE_FIXTURES, fixture), path.join(answers, name));
      return path.join(answers, name);
    };
    const [hotEnd] = hostLinks[0]!;
    const [berEnd] = uplinks[1]!;
    const hot = answer('hot', 'derived-osfp-optical-hot.txt');
    const ber = answer('ber', 'derived-mlxlink-4.34.1-effective-ber-high.json');
    const mstlink = await fakeModuleTool({
      [`lid-${hotEnd.node.lid}/${hotEnd.number}`]: { stdout: hot },
      [`lid-${berEnd.node.lid}/${berEnd.number}`]: { stdout: ber },
    });
    let clock = Date.UTC(2026, 0, 1);
    const exporter = exporterFromFlags([...fabricFlags(dir), '--mstlink.path', mstlink.path, ...fakeToolFlags(tools)], () => clock, {
      runners: { module: undefined },
    });
    const at = (minute: number): void => {
      clock = Date.UTC(2026, 0, 1) + minute * MIN;
    };
    const portsCycle = async (minute: number): Promise<string[]> => {
      writeScenario(fabric, scenario);
      at(minute);
      await exporter.collectors.runCycle(FABRIC_PORTS_CYCLE);
      return listed(await scrape(exporter));
    };
    const expected = [`${linkOf(hostLinks[0]!)} module_temperature`, `${uplinkOf(uplinks[1]!)} effective_ber`].sort();
    try {
      await exporter.collectFabricOnce();
      // A round reads every switch port: 77 °C against its own 75 °C alarm at one, 3e-11 at the other.
      at(1);
      await exporter.collectors.runCycle(FABRIC_MODULE.schedule.cycle);
      expect((await mstlink.calls()).filter((call) => call.startsWith('-d ')).length).toBeGreaterThan(2);
      expect(await portsCycle(1)).toEqual(expected);
      // Read again: within its thresholds (the recorded capture: 62 °C of 80, 1.5e-254).
      copyFileSync(path.join(MODULE_FIXTURES, 'mlxlink-4.34.1-cx7-400g-dr4-fec-histogram.json'), hot);
      copyFileSync(path.join(MODULE_FIXTURES, 'mlxlink-4.34.1-cx7-400g-dr4-fec-histogram.json'), ber);
      at(2);
      await exporter.collectors.runCycle(FABRIC_MODULE.schedule.cycle);
      expect(await portsCycle(2)).toEqual(expected);
      expect(await portsCycle(126)).toEqual(expected);
      expect(await portsCycle(128)).toEqual([]);
    } finally {
      await exporter.stop();
      await mstlink.remove();
    }
  }, 120_000);

  it('lists a host link that went down and came back, seen from its switch end only', async () => {
    const dir = path.join(root, 'one-end');
    const { fabric, hostLinks } = fabricAt(path.join(dir, 'scenario'));
    let clock = 0;
    const exporter = replayed(dir, () => clock);
    const [switchEnd, host] = hostLinks[1]!;
    const [otherSwitchEnd] = hostLinks[2]!;
    const at = async (minute: number): Promise<string[]> => {
      writeScenario(fabric, path.join(dir, 'scenario'));
      clock = minute * MIN;
      await exporter.collectFabricOnce();
      return listed(await scrape(exporter));
    };
    try {
      await at(0);
      // Pulled (gone from the discovery with its host): the switch end counts the link going down,
      // and this ports cycle saw it down.
      host.pulled = switchEnd.pulled = true;
      raise(switchEnd, 'LinkDownedCounter', 1);
      expect(await at(1)).toEqual([`${linkOf(hostLinks[1]!)} link_downed`]);
      // Plugged back: still listed.
      host.pulled = switchEnd.pulled = false;
      // Another host link's switch end counts a link down no ports cycle saw: not enough from one end.
      raise(otherSwitchEnd, 'LinkDownedCounter', 1);
      expect(await at(2)).toEqual([`${linkOf(hostLinks[1]!)} link_downed`]);
    } finally {
      await exporter.stop();
    }
  });

  it('lists at most max(10, 0.5 %) of the links, the worst first, and counts the rest', async () => {
    const dir = path.join(root, 'cap');
    const { fabric, hostLinks } = fabricAt(path.join(dir, 'scenario'));
    let clock = 0;
    const exporter = replayed(dir, () => clock);
    try {
      await exporter.collectFabricOnce();
      hostLinks.forEach(([switchEnd], i) => raise(switchEnd, 'SymbolErrorCounter', 100 + i));
      writeScenario(fabric, path.join(dir, 'scenario'));
      clock = MIN;
      await exporter.collectors.runCycle(FABRIC_PORTS_CYCLE);
      const text = await scrape(exporter);
      const links = new Set(listed(text).map((line) => line.split(' ')[0]));
      expect(links).toEqual(new Set(hostLinks.slice(-10).map(linkOf)));
      expect(sampleValue(text, 'infiniband_fabric_links_bad_over_cap')).toBe(hostLinks.length - 10);
    } finally {
      await exporter.stop();
    }
  });

  it('sharded, judges the links with an end among its switches and lists its share of the cap', async () => {
    const dir = path.join(root, 'shard');
    const { fabric, uplinks, hostLinks } = fabricAt(path.join(dir, 'scenario'));
    let clock = 0;
    const exporter = replayed(dir, () => clock, ['--fabric.shard', '1/2']);
    const shard = { index: 1, count: 2 };
    try {
      await exporter.collectFabricOnce();
      for (const [switchEnd] of hostLinks) raise(switchEnd, 'SymbolErrorCounter', 100);
      writeScenario(fabric, path.join(dir, 'scenario'));
      clock = MIN;
      await exporter.collectors.runCycle(FABRIC_PORTS_CYCLE);
      const text = await scrape(exporter);
      const mine = hostLinks.filter(([switchEnd]) => inShard(guid(switchEnd), shard));
      const judged = mine.length + uplinks.filter(([a, b]) => inShard(guid(a), shard) || inShard(guid(b), shard)).length;
      const cap = Math.ceil((10 * judged) / (hostLinks.length + uplinks.length));
      expect(mine.length).toBeGreaterThan(cap);
      const listedLinks = new Set(listed(text).map((line) => line.split(' ')[0]));
      expect(listedLinks.size).toBe(cap);
      for (const link of listedLinks) expect(mine.map(linkOf)).toContain(link);
      expect(sampleValue(text, 'infiniband_fabric_links_bad_over_cap')).toBe(mine.length - cap);
    } finally {
      await exporter.stop();
    }
  });

  it("keeps the list and each link's clean-since across a restart, and starts afresh from a corrupt state file", async () => {
    const dir = path.join(root, 'restart');
    const { fabric, uplinks } = fabricAt(path.join(dir, 'scenario'));
    let clock = 0;
    const before = replayed(dir, () => clock);
    await before.collectFabricOnce();
    raise(uplinks[0]![0], 'LinkDownedCounter', 1);
    raise(uplinks[0]![1], 'LinkDownedCounter', 1);
    writeScenario(fabric, path.join(dir, 'scenario'));
    clock = MIN;
    await before.collectors.runCycle(FABRIC_PORTS_CYCLE);
    expect(listed(await scrape(before))).toEqual([`${uplinkOf(uplinks[0]!)} link_downed`]);
    await before.stop();

    // A new process an hour later: the counters it reads are the same, nothing rose; the link stays listed until minute 127.
    clock = 60 * MIN;
    const after = replayed(dir, () => clock);
    try {
      await after.collectFabricOnce();
      expect(listed(await scrape(after))).toEqual([`${uplinkOf(uplinks[0]!)} link_downed`]);
      const json = JSON.parse((await after.app.inject({ method: 'GET', url: '/fabric/bad-links' })).body);
      expect(json.links[0]).toMatchObject({
        reasons: ['link_downed'],
        clean_since: new Date(MIN).toISOString(),
        leaves_at: new Date(127 * MIN).toISOString(),
      });
      clock = 127 * MIN;
      await after.collectors.runCycle(FABRIC_PORTS_CYCLE);
      expect(listed(await scrape(after))).toEqual([]);
    } finally {
      await after.stop();
    }

    writeFileSync(path.join(dir, 'state', 'fabric-verdict.json'), '{"version":1,"links":[{"node_guid":');
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
    const corrupt = replayed(dir, () => clock, [], logger);
    try {
      await corrupt.collectFabricOnce();
      expect(listed(await scrape(corrupt))).toEqual([]);
      expect(sampleValue(await scrape(corrupt), 'infiniband_exporter_collector_success{collector="fabric_verdict"}')).toBe(1);
      expect(lines.filter((line) => line.includes('bad-links state file'))).toHaveLength(1);
    } finally {
      await corrupt.stop();
    }
  });

  it('goes on in memory, with one log line, when the state directory cannot be written', async () => {
    const dir = path.join(root, 'unwritable');
    const { fabric, uplinks } = fabricAt(path.join(dir, 'scenario'));
    writeFileSync(path.join(dir, 'state'), 'a file where the directory should be');
    let clock = 0;
    const lines: string[] = [];
    const exporter = replayed(dir, () => clock, [], pino({ level: 'info' }, { write: (line: string) => void lines.push(line) }));
    try {
      await exporter.collectFabricOnce();
      for (const minute of [1, 2]) {
        raise(uplinks[0]![0], 'SymbolErrorCounter', 100);
        writeScenario(fabric, path.join(dir, 'scenario'));
        clock = minute * MIN;
        await exporter.collectors.runCycle(FABRIC_PORTS_CYCLE);
      }
      expect(listed(await scrape(exporter))).toHaveLength(2);
      expect(lines.filter((line) => line.includes('cannot be written'))).toHaveLength(1);
    } finally {
      await exporter.stop();
    }
  });

  it('serves GET /fabric/bad-links as JSON and CSV, behind the same authentication as /metrics', async () => {
    const dir = path.join(root, 'http');
    const { fabric, hostLinks } = fabricAt(path.join(dir, 'scenario'));
    const web = path.join(dir, 'web.yml');
    writeFileSync(web, `basic_auth_users:\n  alice: ${bcryptjs.hashSync('secret', 4)}\n`);
    let clock = 0;
    const exporter = replayed(dir, () => clock, ['--web.config.file', web]);
    const authorization = `Basic ${Buffer.from('alice:secret').toString('base64')}`;
    try {
      await exporter.collectFabricOnce();
      expect((await exporter.app.inject({ method: 'GET', url: '/fabric/bad-links' })).statusCode).toBe(401);
      raise(hostLinks[0]![0], 'SymbolErrorCounter', 100);
      writeScenario(fabric, path.join(dir, 'scenario'));
      clock = MIN;
      await exporter.collectors.runCycle(FABRIC_PORTS_CYCLE);
      const json = await exporter.app.inject({ method: 'GET', url: '/fabric/bad-links', headers: { authorization } });
      expect(json.headers['content-type']).toBe('application/json; charset=utf-8');
      const [switchEnd, host] = hostLinks[0]!;
      expect(JSON.parse(json.body)).toMatchObject({
        cap: 10,
        over_cap: 0,
        links: [
          {
            node_guid: guid(switchEnd),
            port: switchEnd.number,
            peer_guid: guid(host),
            peer_port: host.number,
            peer_name: host.node.description,
            reasons: ['symbol_errors_12m', 'symbol_errors_125m'],
          },
        ],
      });
      const csv = await exporter.app.inject({ method: 'GET', url: '/fabric/bad-links?format=csv', headers: { authorization } });
      expect(csv.headers['content-type']).toBe('text/csv; charset=utf-8');
      const rows = csv.body.trimEnd().split('\r\n');
      expect(rows[0]).toBe('node_guid,node_name,port,peer_guid,peer_name,peer_port,reasons,since,clean_since,leaves_at');
      expect(rows[1]).toContain(`"${guid(switchEnd)}",`);
      expect(rows[1]).toContain('"symbol_errors_12m symbol_errors_125m"');
      expect(rows).toHaveLength(2);
      expect(
        (await exporter.app.inject({ method: 'GET', url: '/fabric/bad-links?format=xml', headers: { authorization } })).statusCode,
      ).toBe(400);
      // The landing page links the list with its count; the fabric map draws the link as bad (and says so in its legend).
      const landing = (await exporter.app.inject({ method: 'GET', url: '/', headers: { authorization } })).body;
      expect(landing).toContain('<a href="/fabric/bad-links">/fabric/bad-links</a> — <strong>1</strong> link to drain and replace');
      const map = (await exporter.app.inject({ method: 'GET', url: '/fabric', headers: { authorization } })).body;
      expect(map).toContain(
        `<path class="link problem bad" id="l-${guid(switchEnd).slice(2)}-${switchEnd.number}-${guid(host).slice(2)}-${host.number}"`,
      );
      expect(map).toContain('on the list to drain and replace');
    } finally {
      await exporter.stop();
    }
  });
});
