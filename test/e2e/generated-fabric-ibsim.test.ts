// The generated outputs are those of the real tools: a fabric from the generator
// (synthetic/fabric-generator/), run by ibsim from the net file the generator writes for it,
// with opensm, and the real infiniband-diags tools run on it as fabric mode runs them. What they
// print parses, with the exporter's own parsers, to what the generated outputs parse to — nodes,
// LIDs, cables, ports, states, widths, speeds, enabled rates, counters, SMs, multicast groups —
// and is the same text byte for byte, but for what changes from run to run: ibnetdiscover's date
// line, the SMs' activity counts, the state the SA recorded for a standby (discovering or standby,
// depending on when the master met it; under load the SA may not list it yet: the records it
// lists are compared), and the data and packet counters, which ibsim moves by the
// management packets that cross a port (drift checked, then the text compared at the values the
// real PMA reported). The generated discovery cache is read by the real tools as their own.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseDiscoveryCache } from '../../src/sources/fabric/discovery-cache.js';
import { buildTopology } from '../../src/sources/fabric/discovery.js';
import { parseIblinkinfo } from '../../src/sources/fabric/iblinkinfo.js';
import { parseIbnetdiscover } from '../../src/sources/fabric/ibnetdiscover.js';
import { parseIbqueryerrors, type SweepReading } from '../../src/sources/fabric/ibqueryerrors.js';
import { parsePerfqueryLoop } from '../../src/sources/fabric/perfquery-counters.js';
import { parseMemberCounts, parseMulticastGroups, parseSmInfoRecords } from '../../src/sources/fabric/saquery.js';
import {
  discoveryCache,
  generateFabric,
  ibnetdiscover,
  iblinkinfo,
  ibqueryerrorsCounters,
  ibqueryerrorsErrors,
  ibsimNet,
  ibsimProfile,
  linkUp,
  perfquery,
  saqueryGroups,
  saqueryMembers,
  saquerySmInfo,
  sminfo,
  type FabricSpec,
  type GeneratedFabric,
  type Sink,
} from '../../synthetic/fabric-generator/index.js';
import { TRAFFIC_FIELDS, type TrafficField } from '../../synthetic/fabric-generator/pma.js';
import { FABRIC_LAB_PACKAGES, Lab } from '../../synthetic/ibsim-lab.js';
import { waitFor } from '../../synthetic/processes.js';
import { requireSystemTools } from '../support/system.js';

const tools = requireSystemTools('generated fabric against the real tools on ibsim', FABRIC_LAB_PACKAGES);

const teardown: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const step of teardown.splice(0).reverse()) await step();
});

function text(render: (sink: Sink) => unknown): string {
  const parts: string[] = [];
  render((part) => parts.push(part));
  return parts.join('');
}

/** ibnetdiscover's output without its date line. */
const undated = (output: string): string => output.replace(/^# Topology file: generated on .*$/m, '# Topology file: generated on <date>');

/** How far ibsim moves a data or packet counter on its own (management packets through the port) during a test. */
const DRIFT = { packets: 20_000, words: 20_000 * 72 };

/** The generated fabric on ibsim, SMs up, every port that should be Active so. */
async function labOf(fabric: GeneratedFabric): Promise<Lab> {
  const dir = await mkdtemp(path.join(tmpdir(), 'ibx-generated-'));
  teardown.push(() => rm(dir, { recursive: true, force: true }));
  const net = path.join(dir, 'generated.net');
  await writeFile(net, ibsimNet(fabric));
  const lab = await Lab.start(net);
  teardown.push(() => lab.stop());
  const [master, ...standbys] = fabric.subnetManagers;
  await lab.startSm('master', master!.host, master!.priority);
  await lab.waitSmState('master', 'MASTER', 30_000);
  const active = fabric.listed.flatMap((node) =>
    node.ports.filter((port) => port && linkUp(port) && (node.kind === 'switch' || node.reachable)),
  ).length;
  await waitFor(
    'every plugged port to be Active',
    async () => {
      const { stdout } = await lab.run(fabric.origin.id, 'iblinkinfo', ['--line']);
      return stdout.split('\n').filter((line) => line.includes(' Active/')).length === active || undefined;
    },
    60_000,
    250,
  );
  // A standby starts once the master has configured the fabric: started during the master's only
  // sweep (the lab's SMs sweep once), the master's SA never lists it.
  for (const [i, sm] of standbys.entries()) {
    await lab.startSm(`standby-${i}`, sm.host, sm.priority);
    await lab.waitSmState(`standby-${i}`, 'STANDBY', 30_000);
  }
  return lab;
}

/** Traffic counter values of a sweep, by `guid/port`. */
function trafficOf(reading: SweepReading): Map<string, Map<string, bigint>> {
  return new Map(
    reading.ports.map((port) => [`${port.guid}/${port.port}`, new Map([...port.values].map(([field, v]) => [field, v.value]))]),
  );
}

const hexGuid = (guid: bigint): string => `0x${guid.toString(16).padStart(16, '0')}`;

/** Every generated traffic counter is ibsim's, but for what ibsim's own packets added. */
function expectDrift(real: ReadonlyMap<string, bigint>, generated: ReadonlyMap<string, bigint>, where: string): void {
  for (const field of TRAFFIC_FIELDS) {
    if (!real.has(field)) continue;
    const moved = Number(real.get(field)! - generated.get(field)!);
    const bound = /Data$/.test(field) ? DRIFT.words : DRIFT.packets;
    expect(moved >= 0 && moved <= bound, `${where} ${field}: real ${real.get(field)}, generated ${generated.get(field)}`).toBe(true);
  }
}

/** Make the generator print the traffic counters the real PMA reported (the rest stays the generator's). */
function adoptTraffic(fabric: GeneratedFabric, reading: SweepReading): void {
  for (const node of fabric.listed) {
    for (const port of node.ports) {
      if (!port) continue;
      const values = reading.ports.find((p) => p.guid === hexGuid(node.guid) && p.port === port.number)?.values;
      if (!values) continue;
      port.override = new Map(
        [...values]
          .filter(([field]) => (TRAFFIC_FIELDS as readonly string[]).includes(field))
          .map(([field, v]) => [field as TrafficField, Number(v.value)]),
      );
    }
  }
}

async function proveAgainstTheRealTools(spec: FabricSpec): Promise<void> {
  const fabric = generateFabric(spec);
  const lab = await labOf(fabric);
  const run = async (tool: string, args: string[]): Promise<{ stdout: string; stderr: string; exitCode: number | undefined }> => {
    const result = await lab.run(fabric.origin.id, tool, args, 30_000);
    expect(result.exitCode, `${tool} ${args.join(' ')}: ${result.stderr}`).toBeLessThanOrEqual(1);
    return result;
  };
  const realCache = path.join(lab.dir, 'real.cache');
  const generatedCache = path.join(lab.dir, 'generated.cache');
  await writeFile(generatedCache, discoveryCache(fabric));

  // Discovery: text and cache.
  const discovered = await run('ibnetdiscover', ['--cache', realCache]);
  const realCacheBytes = new Uint8Array(await readFile(realCache));
  const generatedCacheBytes = discoveryCache(fabric);
  const generatedText = text((sink) => ibnetdiscover(fabric, sink));
  const topology = (output: string, cache: Uint8Array) =>
    buildTopology(parseIbnetdiscover(output), parseDiscoveryCache(cache), new Map(), 0);
  expect(topology(generatedText, generatedCacheBytes)).toEqual(topology(discovered.stdout, realCacheBytes));
  expect(undated(generatedText)).toBe(undated(discovered.stdout));
  const [real, generated] = [parseDiscoveryCache(realCacheBytes), parseDiscoveryCache(generatedCacheBytes)];
  const nodes = (cache: typeof real) => cache.nodes.map(({ guid, type, portCount, lid }) => ({ guid, type, portCount, lid }));
  const ports = (cache: typeof real) =>
    cache.ports
      .map(({ guid, port, nodeGuid, lid, enabled, peer }) => ({ guid, port, nodeGuid, lid, enabled, peer }))
      .sort((a, b) => `${a.nodeGuid}/${a.port}`.localeCompare(`${b.nodeGuid}/${b.port}`));
  expect(generated.fromNodeGuid).toBe(real.fromNodeGuid);
  expect(nodes(generated)).toEqual(nodes(real));
  expect(ports(generated)).toEqual(ports(real));
  // The header's counts and the hops libibnetdisc discovered.
  expect(generatedCacheBytes.subarray(0, 28)).toEqual(realCacheBytes.subarray(0, 28));
  // The real tools read the generated cache as their own.
  expect(undated((await run('ibnetdiscover', ['--load-cache', generatedCache])).stdout)).toBe(undated(generatedText));

  // The scan of every port.
  for (const switchesOnly of [true, false]) {
    const scanned = await run('iblinkinfo', ['--line', ...(switchesOnly ? ['--switches-only'] : [])]);
    const generatedScan = text((sink) => iblinkinfo(fabric, sink, { switchesOnly }));
    expect(parseIblinkinfo(generatedScan)).toEqual(parseIblinkinfo(scanned.stdout));
    expect(generatedScan).toBe(scanned.stdout);
  }
  expect((await run('iblinkinfo', ['--line', '--switches-only', '--load-cache', generatedCache])).stdout).toBe(
    text((sink) => iblinkinfo(fabric, sink, { switchesOnly: true })),
  );

  // The error sweeps, from either cache: the same ports, counters and text.
  for (const switchesOnly of [true, false]) {
    const generatedSweep = text((sink) => ibqueryerrorsErrors(fabric, sink, { switchesOnly }));
    for (const cache of [realCache, generatedCache]) {
      const swept = await run('ibqueryerrors', [
        '--skip-sl',
        '--threshold-file',
        '/dev/null',
        '--load-cache',
        cache,
        ...(switchesOnly ? ['--switch'] : []),
      ]);
      expect(parseIbqueryerrors(generatedSweep, '')).toEqual(parseIbqueryerrors(swept.stdout, swept.stderr));
      expect(generatedSweep).toBe(swept.stdout);
      expect(swept.exitCode).toBe(ibqueryerrorsErrors(fabric, () => undefined, { switchesOnly }));
    }
  }

  // The data sweep: every generated counter is ibsim's up to its own drift; at ibsim's values, the same text.
  const counted = await run('ibqueryerrors', ['--skip-sl', '--counters', '--load-cache', realCache]);
  const realTraffic = parseIbqueryerrors(counted.stdout, counted.stderr);
  const generatedTraffic = trafficOf(
    parseIbqueryerrors(
      text((sink) => ibqueryerrorsCounters(fabric, sink, { switchesOnly: false })),
      '',
    ),
  );
  expect([...trafficOf(realTraffic).keys()].sort()).toEqual([...generatedTraffic.keys()].sort());
  for (const [port, values] of trafficOf(realTraffic)) expectDrift(values, generatedTraffic.get(port)!, port);
  adoptTraffic(fabric, realTraffic);
  expect(text((sink) => ibqueryerrorsCounters(fabric, sink, { switchesOnly: false }))).toBe(counted.stdout);

  // Per-switch perfquery, basic and extended, for the switches with errors.
  for (const node of fabric.listed.filter((n) => n.kind === 'switch' && n.ports.some((port) => port?.errors !== undefined))) {
    for (const extended of [false, true]) {
      for (const port of node.ports) if (port) port.override = undefined;
      const read = await run('perfquery', [...(extended ? ['-x'] : []), '-l', String(node.lid), `1-${node.portCount}`]);
      const readings = parsePerfqueryLoop(read.stdout).readings;
      const generatedReadings = parsePerfqueryLoop(perfquery(fabric, node, extended)).readings;
      expect([...readings.keys()]).toEqual([...generatedReadings.keys()]);
      for (const [number, reading] of readings) {
        const generatedValues = generatedReadings.get(number)!.values;
        for (const [field, v] of reading.values) {
          if (!(TRAFFIC_FIELDS as readonly string[]).includes(field))
            expect(generatedValues.get(field), `${node.id}[${number}] ${field}`).toBe(v);
        }
        expectDrift(reading.values, generatedValues, `${node.id}[${number}]`);
        node.ports[number]!.override = new Map(
          TRAFFIC_FIELDS.filter((field) => reading.values.has(field)).map((field) => [field, Number(reading.values.get(field))]),
        );
      }
      expect(perfquery(fabric, node, extended)).toBe(read.stdout);
    }
  }

  // The subnet administrator and the SMs. The SA keeps a standby's state from when the master
  // polled it (discovering or standby, as it happened), and every SM counts its own activity.
  const activityCounts = (output: string) =>
    output
      .replace(/ActCount\.+\d+/g, 'ActCount..<n>')
      .replace(/activity count \d+/g, 'activity count <n>')
      .replace(/SMState\.+[12]$/gm, 'SMState..<not master>');
  // The SA lists the SMs in its own order, the master always; a standby only once the master has
  // recorded it, which under load it may not do for long: each record listed is the generated one.
  const records = await run('saquery', ['SMIR']);
  const generatedRecords = text((sink) => saquerySmInfo(fabric, sink));
  const managers = (output: string) =>
    new Map(
      parseSmInfoRecords(output).subnetManagers.map(({ activityCount: _, state, ...sm }) => [
        sm.guid,
        { ...sm, state: state === 'MASTER' ? state : 'not master' },
      ]),
    );
  const [listed, generatedManagers] = [managers(records.stdout), managers(generatedRecords)];
  expect(listed.get(hexGuid(fabric.subnetManagers[0]!.port.guid))?.state).toBe('MASTER');
  for (const [guid, sm] of listed) expect(sm).toEqual(generatedManagers.get(guid));
  const byGuid = (output: string) =>
    new Map(
      activityCounts(output)
        .split(/(?=SMInfoRecord)/)
        .map((record) => [/GUID\.+(0x[0-9a-f]+)/.exec(record)![1]!, record]),
    );
  const generatedByGuid = byGuid(generatedRecords);
  for (const [guid, record] of byGuid(records.stdout)) expect(record).toBe(generatedByGuid.get(guid));
  for (const [lid, line] of sminfo(fabric)) expect(activityCounts(line)).toBe(activityCounts((await run('sminfo', [String(lid)])).stdout));
  const groups = await run('saquery', ['-g']);
  const generatedGroups = text((sink) => saqueryGroups(fabric, sink));
  expect(parseMulticastGroups(generatedGroups)).toEqual(parseMulticastGroups(groups.stdout));
  expect(generatedGroups).toBe(groups.stdout);
  const members = await run('saquery', ['-m']);
  const generatedMembers = text((sink) => saqueryMembers(fabric, sink));
  expect(parseMemberCounts(generatedMembers)).toEqual(parseMemberCounts(members.stdout));
  expect(generatedMembers).toBe(members.stdout);
}

const FAULTS = { seed: 3, pulledHostCables: 2, pulledSwitchCables: 2, narrowLinks: 2, slowLinks: 2, erroringPorts: 6, congestedPorts: 4 };

describe.skipIf(tools.skipReason !== undefined)('generated outputs against the real tools on ibsim', () => {
  it('three tiers of 8-port QDR switches, 128 hosts (208 nodes): cables pulled, links narrow and slow, errors and congestion, a master and a standby SM', async () => {
    await proveAgainstTheRealTools({
      shape: { tiers: 3, hosts: 128, radix: 8 },
      profile: ibsimProfile('QDR'),
      faults: FAULTS,
      origin: 'H1_2',
      // The SA keeps the state the standby had when the master met it: discovering.
      subnetManagers: [
        { host: 'H1_1', priority: 5, state: 3 },
        { host: 'H32_4', priority: 5, state: 2, recordState: 1 },
      ],
    });
  }, 180_000);

  it('two tiers of HDR switches (extended speeds), spare ports, one SM', async () => {
    await proveAgainstTheRealTools({
      shape: { tiers: 2, spines: 3, leaves: 4, hostsPerLeaf: 4, spareLeafPorts: 2 },
      profile: ibsimProfile('HDR'),
      faults: { ...FAULTS, seed: 7, pulledHostCables: 1, pulledSwitchCables: 1, narrowLinks: 1, erroringPorts: 3, congestedPorts: 2 },
      origin: 'H2_1',
      subnetManagers: [{ host: 'H1_1', priority: 0, state: 3 }],
    });
  }, 180_000);
});
