// The fabric generator (synthetic/fabric-generator/): the fat trees it builds, the formats of
// what it prints (held against outputs of the real tools recorded on ibsim), that the exporter's
// parsers read every generated output whole and get back the fabric that was generated, and that
// the fake tools replay it through the exporter's real command runner, shards included. That the
// outputs are those of the real tools, byte for byte, is test/e2e/generated-fabric-ibsim.test.ts.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { parseServeCommandLine as parseCommandLine } from '../../src/commands/serve/command-line.js';
import { Exporter } from '../../src/commands/serve/exporter.js';
import { inShard } from '../../src/model/fabric.js';
import { PMA_COUNTERS } from '../../src/model/pma-counters.js';
import type { FabricCommand } from '../../src/sources/fabric/commands.js';
import { parseSminfo } from '../../src/sources/diag/sminfo.js';
import { parseDiscoveryCache } from '../../src/sources/fabric/discovery-cache.js';
import { buildTopology } from '../../src/sources/fabric/discovery.js';
import { parseIblinkinfo } from '../../src/sources/fabric/iblinkinfo.js';
import { parseIbnetdiscover } from '../../src/sources/fabric/ibnetdiscover.js';
import { parseIbqueryerrors } from '../../src/sources/fabric/ibqueryerrors.js';
import { parsePerfqueryLoop } from '../../src/sources/fabric/perfquery-counters.js';
import { parseMemberCounts, parseMulticastGroups, parseSmInfoRecords } from '../../src/sources/fabric/saquery.js';
import { exporterFromFlags } from '../support/exporter.js';
import { samplesOf as series, sampleValue as value, scrape } from '../support/exposition.js';
import {
  autogroupNice,
  fakeFabricTools,
  fakeToolFlags,
  fixed3,
  gidText,
  generateFabric,
  humanReadable,
  ibnetdiscover,
  iblinkinfo,
  ibqueryerrorsCounters,
  ibqueryerrorsErrors,
  NDR_PROFILE,
  perfquery,
  portCounters,
  saqueryGroups,
  saqueryMembers,
  saquerySmInfo,
  shapeSize,
  sminfo,
  writeScenario,
  discoveryCache,
  linkUp,
  type GeneratedFabric,
  type Sink,
} from '../../synthetic/fabric-generator/index.js';
import { ReplayRunner, result } from '../support/replay.js';
import { stdout } from '../support/fabric-recordings.js';
import { replay } from '../../synthetic/fabric-replay.js';

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

function text(render: (sink: Sink) => unknown): string {
  const parts: string[] = [];
  render((part) => parts.push(part));
  return parts.join('');
}

const FAULTS = { seed: 5, pulledHostCables: 2, pulledSwitchCables: 2, narrowLinks: 3, slowLinks: 3, erroringPorts: 8, congestedPorts: 5 };
/** The PMA fields of the error counters served together (PortXmitWait is served on its own). */
const ERROR_FIELDS = PMA_COUNTERS.filter((counter) => counter.error && counter.name !== 'transmit_wait').map(
  (counter) => counter.perfqueryField,
);
const hexGuid = (guid: bigint): string => `0x${guid.toString(16).padStart(16, '0')}`;

describe('the formats of the generated outputs', () => {
  it('prints counters human-readable exactly as ibqueryerrors did on ibsim (every value of a recorded sweep)', () => {
    const recorded = stdout('healthy', 'counters-all');
    const items = [...recorded.matchAll(/\[(\w+) == (\d+) \(([^)]*)\)\]/g)];
    expect(items.length).toBeGreaterThan(300);
    for (const [, name, count, shown] of items)
      expect(`${name} ${humanReadable(Number(count), /Data$/.test(name!))}`).toBe(`${name} ${shown}`);
  });

  it('rounds to three decimals as glibc does: ties to even, the binary value exactly', () => {
    expect(fixed3(18.5625)).toBe('18.562');
    expect(fixed3(0.0625)).toBe('0.062');
    expect(fixed3(0.1875)).toBe('0.188');
    expect(fixed3(Math.fround(0.1))).toBe('0.100');
    expect(humanReadable(1024, false)).toBe('1.000K');
    expect(humanReadable(255, true)).toBe('1020.000B');
    expect(humanReadable(256, true)).toBe('1024.000B');
    expect(humanReadable(257, true)).toBe('1.004KB');
    expect(humanReadable(2 ** 40, true)).toBe('4.000TB');
  });

  it('writes GIDs as inet_ntop does', () => {
    expect(gidText([0xff12, 0x401b, 0xffff, 0, 0, 0, 0xffff, 0xffff])).toBe('ff12:401b:ffff::ffff:ffff');
    expect(gidText([0, 0, 0, 0, 0, 0, 0, 0])).toBe('::');
    expect(gidText([0xfe80, 0, 0, 0, 0x2, 0xc903, 0xa1, 0x11])).toBe('fe80::2:c903:a1:11');
    expect(gidText([0xff12, 0x601b, 0xffff, 0, 0, 1, 0xff00, 0x5])).toBe('ff12:601b:ffff::1:ff00:5');
    expect(gidText([1, 0, 2, 0, 0, 3, 0, 4])).toBe('1:0:2::3:0:4');
  });
});

describe('generated fat trees', () => {
  it('builds the AI-cluster fabric: 24 576 hosts on 64-port switches in three tiers are 1 920 switches and 122 880 switch ports, every one cabled', () => {
    const shape = { tiers: 3, hosts: 24_576, radix: 64 } as const;
    expect(shapeSize(shape)).toEqual({ switches: 1920, hosts: 24_576, switchPorts: 122_880 });
    const fabric = generateFabric({ shape, profile: NDR_PROFILE });
    const switches = fabric.nodes.filter((node) => node.kind === 'switch');
    expect(switches.map((node) => node.role).filter((role) => role === 'core')).toHaveLength(384);
    expect(switches.map((node) => node.role).filter((role) => role === 'spine')).toHaveLength(768);
    expect(switches.map((node) => node.role).filter((role) => role === 'leaf')).toHaveLength(768);
    expect(switches.every((node) => node.ports.slice(1).every((port) => port?.cable !== undefined))).toBe(true);
    expect(fabric.listed).toHaveLength(1920 + 24_576);
    // LIDs are unique, and within the unicast range.
    const lids = fabric.listed.map((node) => node.lid);
    expect(new Set(lids).size).toBe(lids.length);
    expect(Math.max(...lids)).toBeLessThan(0xc000);
  });

  it('cables a three-tier tree of 8-port switches as the classic fat tree: every spine to each core of its group once', () => {
    const fabric = generateFabric({ shape: { tiers: 3, hosts: 128, radix: 8 } });
    const spines = fabric.nodes.filter((node) => node.role === 'spine');
    expect(spines).toHaveLength(32);
    for (const spine of spines) {
      const cores = spine.ports.slice(5).map((port) => port!.cable!.node.id);
      expect(new Set(cores).size).toBe(4);
    }
    expect(fabric.nodes.filter((node) => node.role === 'core')).toHaveLength(16);
  });

  it('builds the two-tier trees of the ibsim tests with the same names, GUIDs and cabling as before', () => {
    const fabric = generateFabric({ shape: { tiers: 2, spines: 3, leaves: 4, hostsPerLeaf: 4, spareLeafPorts: 2 } });
    const spine3 = fabric.byId.get('S3')!;
    expect(hexGuid(spine3.guid)).toBe('0x0002c90200100002');
    expect(spine3.ports[4]!.cable!.node.id).toBe('L4');
    expect(spine3.ports[4]!.cable!.number).toBe(7);
    expect(hexGuid(fabric.byId.get('H2_3')!.guid)).toBe('0x0002c90300000018');
    expect(fabric.byId.get('L1')!.ports[8]!.cable).toBeUndefined();
  });

  it('puts the faults it is asked for where they are seen, and keeps the origin and the SM hosts cabled', () => {
    const fabric = generateFabric({ shape: { tiers: 3, hosts: 128, radix: 8 }, faults: FAULTS });
    const ports = fabric.nodes.flatMap((node) => node.ports.filter((port) => port !== undefined));
    expect(fabric.cables.filter(([a]) => a.pulled)).toHaveLength(4);
    expect(fabric.nodes.filter((node) => node.kind === 'ca' && !node.reachable)).toHaveLength(2);
    expect(fabric.cables.filter(([a]) => a.width === 1)).toHaveLength(3);
    expect(fabric.cables.filter(([a]) => a.speed === 'DDR')).toHaveLength(3);
    expect(ports.filter((port) => port.errors?.has('PortXmitWait'))).toHaveLength(5);
    expect(ports.filter((port) => [...(port.errors?.keys() ?? [])].some((field) => field !== 'PortXmitWait'))).toHaveLength(8);
    for (const host of [fabric.origin, ...fabric.subnetManagers.map((sm) => sm.port.node)]) expect(host.reachable).toBe(true);
  });
});

/** Every output of a fabric parsed by the exporter's own parsers. */
function parsedOutputs(fabric: GeneratedFabric) {
  const cache = parseDiscoveryCache(discoveryCache(fabric));
  const discovered = parseIbnetdiscover(text((sink) => ibnetdiscover(fabric, sink)));
  return {
    cache,
    discovered,
    topology: buildTopology(discovered, cache, new Map(), 0),
    linkinfo: parseIblinkinfo(text((sink) => iblinkinfo(fabric, sink, { switchesOnly: false }))),
    errors: parseIbqueryerrors(
      text((sink) => ibqueryerrorsErrors(fabric, sink, { switchesOnly: true })),
      '',
    ),
    counters: parseIbqueryerrors(
      text((sink) => ibqueryerrorsCounters(fabric, sink, { switchesOnly: false })),
      '',
    ),
    sms: parseSmInfoRecords(text((sink) => saquerySmInfo(fabric, sink))),
    groups: parseMulticastGroups(text((sink) => saqueryGroups(fabric, sink))),
    members: parseMemberCounts(text((sink) => saqueryMembers(fabric, sink))),
  };
}

describe("the generated outputs, read by the exporter's parsers", () => {
  for (const [name, spec] of [
    [
      'three tiers of 8-port QDR switches with every kind of fault',
      { shape: { tiers: 3, hosts: 128, radix: 8 }, faults: FAULTS, multicast: 'ipoib' },
    ],
    [
      'two tiers of NDR switches',
      { shape: { tiers: 2, spines: 4, leaves: 6, hostsPerLeaf: 5, spareLeafPorts: 1 }, profile: NDR_PROFILE, faults: FAULTS },
    ],
  ] as const) {
    it(`give back the fabric that was generated: ${name}`, () => {
      const fabric = generateFabric(spec);
      const parsed = parsedOutputs(fabric);
      const reachable = fabric.listed;
      const switchPorts = reachable.filter((node) => node.kind === 'switch').flatMap((node) => node.ports.slice(1).map((port) => port!));
      for (const output of [parsed.discovered, parsed.linkinfo, parsed.errors, parsed.counters, parsed.sms, parsed.groups, parsed.members])
        expect(output.unparsed.count).toBe(0);

      // Topology: every reachable node with its LID, every plugged cable from both ends, what each port enables.
      expect(parsed.topology.nodes.size).toBe(reachable.length);
      for (const node of reachable) expect(parsed.topology.nodes.get(hexGuid(node.guid))?.lid).toBe(node.lid);
      const plugged = fabric.cables.filter(([a]) => linkUp(a) && a.node.reachable);
      expect(parsed.discovered.ports).toHaveLength(plugged.length * 2);
      expect(parsed.topology.duplicateGuids + parsed.topology.duplicateLids).toBe(0);
      for (const port of switchPorts) {
        const discovered = parsed.topology.ports.get(`${hexGuid(port.node.guid)}/${port.number}`);
        expect(discovered?.peer?.nodeGuid).toBe(linkUp(port) ? hexGuid(port.cable!.node.guid) : undefined);
        expect(discovered?.enabled?.widthEnabled).toEqual(
          port.widthEnabled === 1 ? [1] : fabric.profile.name === 'ndr' ? [1, 4, 2] : [1, 4],
        );
      }

      // States, widths and speeds of every port, down ones included.
      expect(parsed.linkinfo.ports).toHaveLength(switchPorts.length + reachable.filter((node) => node.kind === 'ca').length);
      const byPort = new Map(parsed.linkinfo.ports.map((port) => [`${port.portGuid}/${port.port}`, port]));
      for (const port of switchPorts) {
        const seen = byPort.get(`${hexGuid(port.guid)}/${port.number}`)!;
        expect(seen.state.id).toBe(linkUp(port) ? 4 : 1);
        expect(seen.physicalState.id).toBe(linkUp(port) ? 5 : 2);
        if (linkUp(port)) expect([seen.width, seen.speed]).toEqual([port.width === 1 ? 1 : 4, port.speed]);
      }

      // Counters: the error sweep prints exactly the ports with errors; the data sweep every port of every node.
      const withErrors = switchPorts.filter((port) => port.errors !== undefined);
      expect(parsed.errors.complete).toBe(true);
      expect(parsed.errors.ports.map((port) => `${port.guid}/${port.port}`).sort()).toEqual(
        withErrors.map((port) => `${hexGuid(port.guid)}/${port.number}`).sort(),
      );
      for (const port of withErrors) {
        const sweep = parsed.errors.ports.find((p) => p.guid === hexGuid(port.guid) && p.port === port.number)!;
        expect(Object.fromEntries([...sweep.values].map(([field, v]) => [field, Number(v.value)]))).toEqual(
          Object.fromEntries(port.errors!),
        );
      }
      expect(parsed.counters.ports).toHaveLength(switchPorts.length + reachable.filter((node) => node.kind === 'ca').length);
      const sample = switchPorts[7]!;
      const values = parsed.counters.ports.find((port) => port.guid === hexGuid(sample.node.guid) && port.port === sample.number)!.values;
      expect(values.get('PortXmitData')?.value).toBe(BigInt(portCounters(sample).PortXmitData));
      expect(values.get('PortMulticastRcvPkts')?.value).toBe(BigInt(portCounters(sample).PortMulticastRcvPkts));

      // The SA: both SMs; the groups and their members.
      expect(parsed.sms.subnetManagers.map((sm) => [sm.guid, sm.lid, sm.state])).toEqual(
        fabric.subnetManagers.map((sm) => [hexGuid(sm.port.guid), sm.port.node.lid, sm.recordState === 3 ? 'MASTER' : 'STANDBY']),
      );
      for (const [lid, line] of sminfo(fabric)) expect(parseSminfo(line)?.lid ?? lid).toBe(lid);
      expect(parsed.groups.groups).toHaveLength(fabric.multicastGroups.length);
      for (const group of fabric.multicastGroups) expect(parsed.members.members.get(gidText(group.mgid))).toBe(group.members.length);
    });
  }

  it('perfquery of a switch gives every counter of every port, as the per-switch fallback reads them', () => {
    const fabric = generateFabric({ shape: { tiers: 3, hosts: 32, radix: 8 }, faults: FAULTS });
    const leaf = fabric.byId.get('L2')!;
    const basic = parsePerfqueryLoop(perfquery(fabric, leaf, false));
    const extended = parsePerfqueryLoop(perfquery(fabric, leaf, true));
    expect([basic.unparsed.count, extended.unparsed.count]).toEqual([0, 0]);
    expect([...basic.readings.keys()]).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    for (const port of leaf.ports.slice(1)) {
      const values = portCounters(port!);
      const reading = basic.readings.get(port!.number)!;
      expect(reading.values.get('SymbolErrorCounter')).toBe(BigInt(values.SymbolErrorCounter));
      expect(extended.readings.get(port!.number)!.values.get('PortXmitData')).toBe(BigInt(values.PortXmitData));
      expect(reading.values.get('PortXmitData')).toBe(BigInt(Math.min(values.PortXmitData, 0xffffffff)));
    }
  });
});

describe('a generated fabric replayed', () => {
  async function scenario(spec: Parameters<typeof generateFabric>[0]) {
    const dir = await mkdtemp(path.join(tmpdir(), 'ibx-generated-'));
    dirs.push(dir);
    const fabric = generateFabric(spec);
    writeScenario(fabric, path.join(dir, 'scenario'), { perSwitch: true });
    return { fabric, dir, scenario: path.join(dir, 'scenario') };
  }

  it('by ReplayRunner inside the test, counters read switch by switch with perfquery when the sweeps cannot run', async () => {
    const { fabric, scenario: dir } = await scenario({
      shape: { tiers: 2, spines: 3, leaves: 4, hostsPerLeaf: 4, spareLeafPorts: 2 },
      faults: FAULTS,
    });
    const runner = new ReplayRunner<FabricCommand>('fabric', [dir], (command, args) =>
      command === 'ibqueryerrors'
        ? result(command, args, { outcome: 'spawn-error', exitCode: undefined, stderr: 'spawn ibqueryerrors ENOENT' })
        : undefined,
    );
    const command = parseCommandLine(['--path.sysfs', '/nonexistent', '--no-collector.diag', '--collector.fabric']);
    if (command.action !== 'run') throw new Error('unexpected');
    const exporter = new Exporter({
      settings: command.settings,
      logger: pino({ level: 'silent' }),
      runners: { module: 'not-installed', fabric: runner },
    });
    try {
      await exporter.collectFabricOnce();
      const exposition = await scrape(exporter);
      const switches = fabric.listed.filter((node) => node.kind === 'switch');
      // Two counter reads a switch (basic and extended); `perfquery -c` is discovery's read of each switch's XmitWait tick.
      expect(runner.calls.filter((call) => call.startsWith('perfquery') && !call.startsWith('perfquery -c'))).toHaveLength(
        switches.length * 2,
      );
      const ports = switches.flatMap((node) => node.ports.slice(1).map((port) => port!));
      expect(series(exposition, 'infiniband_fabric_port_transmit_data_bytes_total')).toHaveLength(ports.length);
      for (const port of ports) {
        const labels = `node_guid="${hexGuid(port.node.guid)}",port="${port.number}"`;
        const values = portCounters(port);
        // A port's error counters are served once one of them is non-zero.
        const erroring = ERROR_FIELDS.some((field) => (values as Record<string, number>)[field]! > 0);
        expect(value(exposition, `infiniband_fabric_port_symbol_errors_total{${labels}}`)).toBe(
          erroring ? values.SymbolErrorCounter : undefined,
        );
        expect(value(exposition, `infiniband_fabric_port_transmit_data_bytes_total{${labels}}`)).toBe(values.PortXmitData * 4);
      }
    } finally {
      await exporter.stop();
    }
  });

  it('serves at most 20 series per switch port, every fact kept: one shard of four of a three-tier fabric with the faults of the scale bench', async () => {
    // The bench's 24 576-host fabric in miniature: the same share of faults (0.2 % of the switch
    // ports erroring, 2 % congested, pulled, narrow and slow links).
    const { fabric, scenario: dir } = await scenario({
      shape: { tiers: 3, hosts: 1024, radix: 16 },
      faults: {
        seed: 26,
        pulledHostCables: 2,
        pulledSwitchCables: 1,
        narrowLinks: 2,
        slowLinks: 2,
        erroringPorts: 10,
        congestedPorts: 100,
      },
      multicast: 'ipoib',
    });
    const runner = new ReplayRunner<FabricCommand>('fabric', [dir]);
    const command = parseCommandLine([
      '--path.sysfs',
      '/nonexistent',
      '--no-collector.diag',
      '--collector.fabric',
      '--fabric.shard',
      '1/4',
      '--web.disable-exporter-metrics',
    ]);
    if (command.action !== 'run') throw new Error('unexpected');
    const exporter = new Exporter({
      settings: command.settings,
      logger: pino({ level: 'silent' }),
      runners: { module: 'not-installed', fabric: runner },
    });
    try {
      await exporter.collectFabricOnce();
      const exposition = await scrape(exporter);
      const samples = exposition.split('\n').filter((line) => line !== '' && !line.startsWith('#'));
      const byName = new Map(samples.map((line) => [line.slice(0, line.lastIndexOf(' ')), Number(line.slice(line.lastIndexOf(' ') + 1))]));
      const switchPorts = series(exposition, 'infiniband_fabric_port_state_id').length;
      const mine = fabric.listed.filter((node) => node.kind === 'switch' && inShard(hexGuid(node.guid), { index: 1, count: 4 }));
      expect(switchPorts).toBe(mine.reduce((sum, node) => sum + node.ports.length - 1, 0));
      expect(samples.length / switchPorts).toBeLessThanOrEqual(20);
      // Every port with its state and traffic; the erroring ones with all their error counters.
      expect(series(exposition, 'infiniband_fabric_port_transmit_data_bytes_total')).toHaveLength(switchPorts);
      for (const node of mine) {
        for (const port of node.ports.slice(1)) {
          const values = portCounters(port!) as unknown as Record<string, number>;
          const labels = `node_guid="${hexGuid(port!.node.guid)}",port="${port!.number}"`;
          const erroring = ERROR_FIELDS.some((field) => values[field]! > 0);
          for (const counter of PMA_COUNTERS.filter((c) => c.error && c.name !== 'transmit_wait')) {
            expect(byName.get(`infiniband_fabric_port_${counter.name}_total{${labels}}`)).toBe(
              erroring ? values[counter.perfqueryField] : undefined,
            );
          }
        }
      }
    } finally {
      await exporter.stop();
    }
  }, 60_000);

  it("by fake tools through the exporter's real command runner, whole and in shards whose sweeps hold only their own switches", async () => {
    const {
      fabric,
      dir,
      scenario: scenarioDir,
    } = await scenario({ shape: { tiers: 3, hosts: 128, radix: 8 }, faults: FAULTS, multicast: 'ipoib' });
    const log = path.join(dir, 'tools.log');
    const tools = await fakeFabricTools(scenarioDir, path.join(dir, 'bin'), { log });
    const switches = fabric.listed.filter((node) => node.kind === 'switch');
    const shards: string[][] = [];
    for (const shard of ['1/1', '1/4', '2/4']) {
      const exporter = exporterFromFlags([
        '--path.sysfs',
        '/nonexistent',
        '--no-collector.diag',
        '--collector.fabric',
        '--fabric.shard',
        shard,
        ...fakeToolFlags(tools),
      ]);
      try {
        await exporter.collectFabricOnce();
        const exposition = await scrape(exporter);
        const [index, count] = shard.split('/').map(Number) as [number, number];
        const mine = switches.filter((node) => inShard(hexGuid(node.guid), { index, count }));
        const states = series(exposition, 'infiniband_fabric_port_state_id');
        expect(states).toHaveLength(mine.length * 8);
        expect(value(exposition, 'infiniband_exporter_read_errors_total{collector="fabric_ports"}')).toBe(0);
        for (const collector of ['fabric_discovery', 'fabric_ports'])
          expect(value(exposition, `infiniband_exporter_collector_success{collector="${collector}"}`)).toBe(1);
        // The subnet's records: read and served by shard 1 alone.
        expect(value(exposition, 'infiniband_exporter_collector_success{collector="fabric_sa"}')).toBe(index === 1 ? 1 : undefined);
        for (const port of mine.flatMap((node) => node.ports.slice(1))) {
          const labels = `node_guid="${hexGuid(port!.node.guid)}",port="${port!.number}"`;
          expect(value(exposition, `infiniband_fabric_port_state_id{${labels}}`)).toBe(linkUp(port!) ? 4 : 1);
          expect(value(exposition, `infiniband_fabric_port_transmit_wait_total{${labels}}`)).toBe(
            portCounters(port!).PortXmitWait || undefined,
          );
        }
        expect(series(exposition, 'infiniband_fabric_multicast_group_members')).toHaveLength(
          index === 1 ? fabric.multicastGroups.length : 0,
        );
        shards.push(states);
      } finally {
        await exporter.stop();
      }
    }
    // The two shards' ports: disjoint, and all of them in the whole.
    expect(shards[1]!.filter((line) => shards[2]!.includes(line))).toEqual([]);
    for (const line of [...shards[1]!, ...shards[2]!]) expect(shards[0]).toContain(line);
    // Each shard's sweeps printed only its own switches (the fake tool read the pruned cache it was given).
    const sweeps = (await readFile(log, 'utf8'))
      .split('\n')
      .filter((line) => line.includes('\tibqueryerrors '))
      .map((line) => Number(/nodes=(\d+)/.exec(line)?.[1]));
    expect(sweeps).toEqual([
      switches.length,
      switches.length,
      ...[1, 2].flatMap((index) => {
        const mine = switches.filter((node) => inShard(hexGuid(node.guid), { index, count: 4 })).length;
        return [mine, mine];
      }),
    ]);
  }, 60_000);
  it("answers an unrecorded perfquery -c in the fake tool's wrapper exactly as the replay does, without starting Node.js", async () => {
    const { scenario: scenarioDir, dir } = await scenario({
      shape: { tiers: 2, spines: 2, leaves: 2, hostsPerLeaf: 2, spareLeafPorts: 0 },
    });
    const log = path.join(dir, 'tools.log');
    const tools = await fakeFabricTools(scenarioDir, path.join(dir, 'bin'), { log });
    const run = (args: string[]) =>
      new Promise<{ stdout: string; stderr: string; exitCode: number | null }>((resolve) =>
        execFile(tools.perfquery, args, (error, stdout, stderr) =>
          resolve({ stdout, stderr, exitCode: error ? (error.code as number) : 0 }),
        ),
      );
    const answered = await run(['-c', '17', '1']);
    const replayed = replay([scenarioDir], 'perfquery', ['-c', '17', '1'])!;
    expect(answered).toEqual({ stdout: '', stderr: replayed.stderr, exitCode: replayed.exitCode });
    expect(answered.stderr).toContain('(Lid 17)');
    // Answered by the shell: the replaying program never ran, so it logged nothing.
    expect(await readFile(log, 'utf8').catch(() => '')).toBe('');
    // Any other perfquery still goes to the replaying program.
    expect((await run(['-l', '1', '1'])).stderr).toContain('no recording of "perfquery -l 1 1"');
  });
  it("niced, gives the autogroup of a tool's own session that niceness, as the exporter starts tools, and never its caller's", async () => {
    const { scenario: scenarioDir, dir } = await scenario({
      shape: { tiers: 2, spines: 2, leaves: 2, hostsPerLeaf: 2, spareLeafPorts: 0 },
    });
    const niced = await fakeFabricTools(scenarioDir, path.join(dir, 'niced'), { nice: 19 });
    const plain = await fakeFabricTools(scenarioDir, path.join(dir, 'plain'));
    expect(await readFile(niced.ibqueryerrors, 'utf8')).toContain(autogroupNice(19));
    expect(await readFile(niced.ibqueryerrors, 'utf8')).toContain('nice -n 19 ');
    expect(await readFile(plain.ibqueryerrors, 'utf8')).not.toContain('autogroup');
    // The wrapper's lines, then what the kernel says of the shell's autogroup: in a session of its
    // own (detached, as the command runner starts every tool) and in the caller's.
    const autogroupOf = (detached: boolean) =>
      execa('/bin/sh', ['-c', `${autogroupNice(19)}cat /proc/$$/autogroup 2>/dev/null; exit 0`], {
        detached,
        reject: false,
        stripFinalNewline: false,
      });
    const autogroups = existsSync('/proc/self/autogroup');
    const mine = autogroups ? readFileSync('/proc/self/autogroup', 'utf8') : '';
    const own = await autogroupOf(true);
    const callers = await autogroupOf(false);
    expect([own.exitCode, own.stderr, callers.exitCode, callers.stderr]).toEqual([0, '', 0, '']);
    if (autogroups) {
      // Debian's kernels group by session: the CI machine's does.
      expect(own.stdout).toMatch(/^\/autogroup-\d+ nice 19\n$/);
      expect(own.stdout.split(' ')[0]).not.toBe(mine.split(' ')[0]);
      // The caller's autogroup, as it was before.
      expect(callers.stdout).toBe(mine);
      expect(readFileSync('/proc/self/autogroup', 'utf8')).toBe(mine);
    } else {
      // No autogroups: the lines are silent and change nothing.
      expect([own.stdout, callers.stdout]).toEqual(['', '']);
    }
  });
});
