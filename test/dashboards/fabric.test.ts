// Every panel of the fabric dashboard, with Grafana's variables substituted, returns data from a
// real Prometheus scraping the real exporter in fabric mode on simulated fabrics (ibsim, opensm,
// the infiniband-diags tools):
//   sm1, sm2  two exporters on one subnet, one on each subnet manager host, of the fat tree
//             test/fixtures/ibsim-topologies/fat-tree.net made unhealthy: the spine-1/leaf-1 link trained
//             at 1X against a config expectation of 4X, a symbol error counter saturated
//             (PerformanceSet), a spine port whose symbol errors, transmit wait and data counters
//             rise during the test (PerformanceSet, from a timer), a host cable pulled during the
//             test (Unlink) and then a port stuck INIT (ibportstate down: opensm runs without
//             periodic sweeps, so nothing brings it back), a master SM and a standby at distinct
//             priorities, opensm's default IPoIB group and a partition configured at 40 Gb/s, MTU 4096.
//             Two instances see every port: the panels must show each port once.
//   healthy   one exporter on a healthy generated fat tree (other GUIDs, two SMs): the panels that
//             list problems must be empty there, every other panel must show data.
// Nothing is left to a synthetic exposition: the simulator produces every state the panels show.
// The bit error rate is the recording rule's (the shipped fabric rules are loaded), which needs an
// hour of a link's data: an hour and a quarter of the past of three ports, as the exporters would
// have served it, is written into Prometheus before it starts (the hot spine port without errors
// until the test, the saturated one at 65535 all along, and one link of the healthy fabric
// without errors); every other link is younger than an hour and has none.
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { runTopology } from '../../src/commands/topology/command.js';
import { HOST12, HOST13, LEAF1, LEAF2, SPINE1, SPINE2 } from '../support/fabric-recordings.js';
import { generateFabric, ibsimNet, leafGuid, spineGuid } from '../../synthetic/fabric-generator/index.js';
import { FABRIC_LAB_PACKAGES, Lab } from '../../synthetic/ibsim-lab.js';
import { waitFor } from '../../synthetic/processes.js';
import { requireSystemTools } from '../support/system.js';
import { FIXTURES, PROJECT_ROOT } from '../support/trees.js';
import {
  emptyWhenHealthy,
  loadDashboards,
  queryPanels,
  substitute,
  variableQuery,
  type Dashboard,
  type Panel,
  type Target,
  type VariableValues,
} from './model.js';
import { openMetricsHistory, startExporter, startPrometheus, type HistorySeries, type RunningPrometheus, type Sample } from './harness.js';

const tools = requireSystemTools('fabric dashboard', { prometheus: 'prometheus', promtool: 'prometheus', ...FABRIC_LAB_PACKAGES });
const fabric = loadDashboards().find(({ model }) => model.uid === 'infiniband-fabric')!.model as Dashboard;
const variables = (instance: string): VariableValues => ({ __rate_interval: '4s', __range: '1h', job: 'infiniband', instance });
const UNHEALTHY = variables('(sm1|sm2)');
const HEALTHY = variables('healthy');

/** The subnet managers of both labs run on these hosts' ports (node GUID + 1). */
const MASTER = '0x0002c90300a10011';
const STANDBY = '0x0002c90300a30031';
/** Spine port 2 of spine 2 (to leaf 2): its counters rise during the test. */
const HOT = { node_guid: SPINE2, port: '2' };
/** PortXmitData (extended, 4-byte words) per second on the hot port: 2 GB/s, 0.4 of its 4X QDR link. */
const HOT_WORDS_PER_SECOND = 5e8;
/** Spine port 2 of spine 1: its 16-bit symbol error counter is saturated from the start. */
const SATURATED = { node_guid: SPINE1, port: '2' };
/** A link of the healthy fabric without errors for the whole history. */
const QUIET = { node_guid: spineGuid(1), port: '1' };

/** The last hour and a quarter of three 4X QDR ports (10 Gb/s a lane), as the fabric exporters of each lab served them. */
function fabricHistory(endSeconds: number): string {
  const port = (instance: string, where: { node_guid: string; port: string }, symbolErrors: number): HistorySeries[] => {
    const labels = { instance, job: 'infiniband', ...where };
    return [
      { name: 'infiniband_fabric_port_symbol_errors_total', labels, value: () => symbolErrors },
      { name: 'infiniband_fabric_port_link_width_lanes', labels, value: () => 4 },
      { name: 'infiniband_fabric_port_lane_rate_bytes_per_second', labels, value: () => 1.25e9 },
    ];
  };
  return openMetricsHistory(
    [
      ...['sm1', 'sm2'].flatMap((instance) => [...port(instance, HOT, 0), ...port(instance, SATURATED, 65535)]),
      ...port('healthy', QUIET, 0),
    ],
    endSeconds,
    75,
    15,
  );
}

const titled = (title: string): Panel => {
  const panel = queryPanels(fabric).find((p) => p.title === title);
  if (!panel) throw new Error(`no panel ${title}`);
  return panel;
};

/** The expression of a shipped fabric alert. */
function alertExpression(alert: string): string {
  const rules = parse(readFileSync(path.join(PROJECT_ROOT, 'rules/infiniband-fabric-alerts.yml'), 'utf8')) as {
    groups: { rules: { alert?: string; expr: string }[] }[];
  };
  return rules.groups.flatMap((g) => g.rules).find((r) => r.alert === alert)!.expr;
}

describe.skipIf(tools.skipReason)('fabric dashboard against a real Prometheus scraping the exporter on ibsim', () => {
  let prometheus: RunningPrometheus;
  let firstScrape = 0;
  const stops: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    const sick = await Lab.start('fat-tree.net');
    stops.push(() => sick.stop());
    const partitions = path.join(sick.dir, 'partitions.conf');
    await writeFile(partitions, 'Default=0x7fff, ipoib : ALL=full;\nstorage=0x8001, ipoib, rate=7, mtu=5 : ALL=full;\n');
    const names = path.join(sick.dir, 'node-name-map');
    await writeFile(names, `${SPINE1} "spine01"\n${SPINE2} "spine02"\n`);
    await sick.command('PerformanceSet "S1"[2] PortCounters.SymbolErrorCounter=65535');
    const withPartitions = ['-P', partitions];
    await sick.startRedundantSms(
      'H22',
      { host: 'H11', priority: 10, extra: withPartitions },
      { host: 'H33', priority: 5, extra: withPartitions },
    );
    await sick.waitActive('H22');

    const net = path.join(sick.dir, 'healthy.net');
    await writeFile(
      net,
      ibsimNet(generateFabric({ shape: { tiers: 2, spines: 2, leaves: 2, hostsPerLeaf: 3, spareLeafPorts: 2 } }), { counters: false }),
    );
    const healthy = await Lab.start(net);
    stops.push(() => healthy.stop());
    await healthy.startRedundantSms('H1_2', { host: 'H1_1', priority: 10 }, { host: 'H2_3', priority: 5 });
    await healthy.waitActive('H1_2');

    // Every cycle each second; 2 opensm + 2 x 3 tools stay within ibsim's 10 clients, with one to spare for ibportstate.
    const fast = ['--fabric.interval=1s', '--fabric.discovery-interval=30s', '--fabric.max-concurrent=3', '--diag.timeout=5s'];
    const expectations = ['--config.file', path.join(FIXTURES, 'config/fabric.yml'), '--fabric.node-name-map', names];
    // Each fabric as it is now, saved as a cabling plan (topology save) for one exporter of it: the
    // cable pulled below is then a planned cable without a link.
    const plans = { sick: path.join(sick.dir, 'plan.txt'), healthy: path.join(healthy.dir, 'plan.txt') };
    for (const [lab, host, plan] of [
      [sick, 'H11', plans.sick],
      [healthy, 'H1_2', plans.healthy],
    ] as const) {
      const saved = await runTopology(['save', plan, ...(await lab.fabricExporterFlags(host, 'plan')), '--fabric.node-name-map', names], {
        stdout: { write: () => true },
        stderr: { write: () => true },
      });
      expect(saved).toBe(0);
    }
    const targets: Record<string, string> = {};
    for (const [instance, lab, host, extra] of [
      ['sm1', sick, 'H11', [...expectations, '--fabric.topology-file', plans.sick]],
      ['sm2', sick, 'H33', expectations],
      ['healthy', healthy, 'H1_2', ['--fabric.topology-file', plans.healthy]],
    ] as const) {
      const exporter = await startExporter([...(await lab.fabricExporterFlags(host, instance)), ...fast, ...extra]);
      stops.push(exporter.stop);
      targets[instance] = exporter.address;
    }

    // The hot port's counters rise from now on.
    const from = Date.now();
    let driving: Promise<unknown> | undefined;
    const driver = setInterval(() => {
      if (driving) return;
      const seconds = (Date.now() - from) / 1000;
      driving = Promise.all([
        sick.command(`PerformanceSet "S2"[2] PortCounters.SymbolErrorCounter=${Math.round(5 * seconds)}`),
        sick.command(`PerformanceSet "S2"[2] PortCounters.PortXmitWait=${Math.round(30_000 * seconds)}`),
        sick.command(`PerformanceSet "S2"[2] PortCountersExtended.PortXmitData=${Math.round(HOT_WORDS_PER_SECOND * seconds)}`),
      ]).finally(() => (driving = undefined));
    }, 250);
    stops.push(async () => {
      clearInterval(driver);
      await driving;
    });

    prometheus = await startPrometheus(tools.paths.prometheus!, targets, {
      ruleFiles: [path.join(PROJECT_ROOT, 'rules/infiniband-fabric-alerts.yml')],
      history: { promtool: tools.paths.promtool!, openMetrics: fabricHistory(Math.floor(Date.now() / 1000) - 1) },
    });
    stops.push(prometheus.stop);
    const instances = async (expr: string): Promise<string[]> => (await prometheus.query(expr)).map((s) => s.metric.instance!).sort();

    // Every instance scraped its fabric a few times, leaf 1 port 2 LinkUp among it; then its cable is pulled.
    await waitFor(
      'three scrapes of each fabric',
      async () =>
        (await instances('min by (instance) (count_over_time(infiniband_fabric_port_state_id[1m])) >= 3')).length === 3 || undefined,
      40_000,
      250,
    );
    await sick.command('Unlink "H12"[1]');
    await waitFor(
      'leaf 1 port 2 down in both instances',
      async () =>
        (await instances(`infiniband_fabric_port_physical_state_id{node_guid="${LEAF1}",port="2"} == 2`)).length === 2 || undefined,
      20_000,
      250,
    );
    // The SM's sweep for the pulled cable is over: nothing configures leaf 1 port 3 again.
    const down = await sick.run('H22', 'ibportstate', ['-G', LEAF1, '3', 'down']);
    if (down.exitCode !== 0) throw new Error(`ibportstate down failed: ${down.stdout}`);
    await waitFor(
      'leaf 1 port 3 INIT in both instances for three scrapes',
      async () =>
        (await instances(`count_over_time((infiniband_fabric_port_state_id{node_guid="${LEAF1}",port="3"} == 2)[1m:1s]) >= 3`)).length ===
          2 || undefined,
      20_000,
      250,
    );

    const [up] = await prometheus.query('up{job="infiniband", instance="sm1"}[1m]');
    firstScrape = up!.values![0]![0];
  }, 120_000);

  afterAll(async () => {
    for (const stop of stops.reverse()) await stop();
  });

  const run = (target: Target, values: VariableValues): Promise<Sample[]> => {
    const expr = substitute(target.expr, values);
    return target.instant
      ? prometheus.query(expr)
      : prometheus.queryRange(expr, Math.floor(firstScrape) - 2, Math.ceil(Date.now() / 1000), 1);
  };
  const nonEmpty = (samples: Sample[]) => samples.some((s) => s.value !== undefined || (s.values?.length ?? 0) > 0);
  const rows = (panel: Panel, refId: string, values = UNHEALTHY): Promise<Sample[]> =>
    prometheus.query(substitute(panel.targets!.find((t) => t.refId === refId)!.expr, values));
  const value = async (title: string, values = UNHEALTHY): Promise<string | undefined> =>
    (await rows(titled(title), 'A', values))[0]?.value?.[1];
  const ends = (samples: Sample[]) => samples.map((s) => `${s.metric.node_guid}/${s.metric.port}`).sort();

  it.each(queryPanels(fabric).map((p) => [p.title, p] as const))(
    '%s returns data for every query on the unhealthy fabric',
    async (_title, panel) => {
      for (const target of panel.targets!)
        expect(nonEmpty(await run(target, UNHEALTHY)), `${panel.title} ${target.refId}: ${target.expr}`).toBe(true);
    },
  );

  it.each(queryPanels(fabric).map((p) => [p.title, p] as const))(
    '%s on the healthy fabric: empty if it lists problems, else data',
    async (_title, panel) => {
      const results = await Promise.all(panel.targets!.map((target) => run(target, HEALTHY)));
      if (emptyWhenHealthy(panel))
        results.forEach((samples, i) => expect(samples, `${panel.title} ${panel.targets![i]!.refId}`).toEqual([]));
      else expect(results.some(nonEmpty), panel.title).toBe(true);
    },
  );

  it('the instance variable lists the three fabric-mode exporters', async () => {
    const instance = fabric.templating.list.find((v) => v.name === 'instance')!;
    const query = variableQuery(instance)!;
    expect(await prometheus.labelValues(query.label, substitute(query.selector, UNHEALTHY))).toEqual(['healthy', 'sm1', 'sm2']);
  });

  it('counts nodes, links and subnet managers once, although two exporters report them', async () => {
    expect(await value('Switches')).toBe('5');
    // Host 12 is cut off: the discovery after the pull no longer finds it.
    expect(await value('HCAs')).toBe('8');
    expect(await value('Inter-switch links')).toBe('6');
    expect(await value('Subnet managers and standbys')).toBe('2');
    expect(await value('Address conflicts')).toBe('0');
    // Down that was up, the two ends of the degraded link, the INIT port.
    expect(await value('Unhealthy links')).toBe('4');
    const byType = await rows(titled('Nodes by type'), 'A');
    expect(Object.fromEntries(byType.map((s) => [s.metric.node_type, s.value![1]]))).toEqual({ switch: '5', ca: '8' });
    const cabled = await rows(titled('Switch ports by what they are cabled to'), 'A');
    expect(Object.fromEntries(cabled.map((s) => [s.metric.peer_type, s.value![1]]))).toEqual({ ca: '8', switch: '12' });
    const physical = await rows(titled('Switch ports by physical state'), 'A');
    // 2 spines x 4 ports + 3 leaves x 8 ports: 20 cabled and up, the pulled one and 11 empty ones Polling.
    expect(Object.fromEntries(physical.map((s) => [s.metric.state, s.value![1]]))).toEqual({ LinkUp: '20', Polling: '12' });
    const managers = await rows(titled('Subnet managers'), 'A');
    expect(managers.map((s) => `${s.metric.sm_guid} ${s.metric.state} ${s.metric.priority} ${s.value![1]}`).sort()).toEqual([
      `${MASTER} MASTER 10 2`,
      `${STANDBY} STANDBY 5 2`,
    ]);
  });

  it('the subnet manager states the exporter emits are those the rules select: the master is found, a master and a standby at distinct priorities fire nothing', async () => {
    const notRedundant = alertExpression('InfiniBandSubnetManagerNotRedundant');
    const master = /infiniband_fabric_subnet_manager_info\{state=~"([^"]+)"\}/.exec(notRedundant)![1]!;
    expect(alertExpression('InfiniBandSubnetManagerPriorityTie')).toContain(`{state=~"${master}"}`);
    const selected = await prometheus.query(
      `count by (sm_guid, state) (infiniband_fabric_subnet_manager_info{instance=~"sm1|sm2", state=~"${master}"})`,
    );
    expect(selected.map((s) => `${s.metric.sm_guid} ${s.metric.state} ${s.value![1]}`)).toEqual([`${MASTER} MASTER 2`]);
    expect(await prometheus.labelValues('state', 'infiniband_fabric_subnet_manager_info')).toEqual(['MASTER', 'STANDBY']);
    // Both subnets (the healthy one has its own master and standby) fire neither alert.
    expect(await prometheus.query(notRedundant)).toEqual([]);
    expect(await prometheus.query(alertExpression('InfiniBandSubnetManagerPriorityTie'))).toEqual([]);
  });

  it('names both ends of every unhealthy link', async () => {
    const down = titled('Switch ports down that were up');
    const downPorts = await rows(down, 'A');
    expect(
      downPorts.map((s) => `${s.metric.node_guid}/${s.metric.port} ${s.metric.node_name ?? ''}|${s.metric.node_desc} ${s.value![1]}`),
    ).toEqual([`${LEAF1}/2 |MF0;leaf-1:SX6036/U1 2`]);
    const downPeer = await rows(down, 'B');
    expect(downPeer.map((s) => `${s.metric.peer_guid}/${s.metric.peer_port} ${s.metric.peer_desc}`)).toEqual([`${HOST12}/1 node12 HCA-1`]);

    const degraded = titled('Degraded links');
    expect(ends(await rows(degraded, 'A'))).toEqual([`${SPINE1}/1`, `${LEAF1}/4`].sort());
    const peers = await rows(degraded, 'B');
    expect(
      peers
        .map((s) => `${s.metric.node_guid} -> ${s.metric.peer_guid}/${s.metric.peer_port} ${s.metric.peer_name || s.metric.peer_desc}`)
        .sort(),
    ).toEqual([`${LEAF1} -> ${SPINE1}/1 spine01`, `${SPINE1} -> ${LEAF1}/4 MF0;leaf-1:SX6036/U1`].sort());
    expect((await rows(degraded, 'C')).map((s) => s.value![1])).toEqual(['1', '1']);
    expect((await rows(degraded, 'D')).map((s) => s.value![1])).toEqual(['4', '4']);
    expect((await rows(degraded, 'E')).map((s) => s.value![1])).toEqual(['10000000000', '10000000000']);

    const init = titled('Ports stuck in INIT');
    expect((await rows(init, 'A')).map((s) => `${s.metric.node_guid}/${s.metric.port} ${s.value![1]}`)).toEqual([`${LEAF1}/3 2`]);
    expect((await rows(init, 'B')).map((s) => `${s.metric.peer_guid}/${s.metric.peer_port} ${s.metric.peer_desc}`)).toEqual([
      `${HOST13}/1 node13 HCA-1`,
    ]);
  });

  it('ranks the spine port whose symbol errors and transmit wait rise first, shows its utilisation and the saturated counter', async () => {
    const [worst] = await rows(titled('Top ports by error rate'), 'A');
    expect(worst?.metric).toMatchObject({ ...HOT, counter: 'symbol_errors', node_name: 'spine02' });
    expect(Number(worst!.value![1])).toBeGreaterThan(1);
    const congested = await rows(titled('Top ports by congestion'), 'A');
    expect(ends(congested)).toEqual([`${SPINE2}/2`]);
    // Its PortXmitWait times the Switch-X tick ibsim's switches get (32 ns at QDR): about 0.1 % of the time.
    expect(Number(congested[0]!.value![1])).toBeGreaterThan(0.0005);
    expect(Number(congested[0]!.value![1])).toBeLessThan(0.01);
    const [busiest] = await rows(titled('Top 10 switch ports by utilisation'), 'A');
    expect(busiest?.metric).toMatchObject(HOT);
    // 2 GB/s of a 5 GB/s link; loose bounds for the 1 s cycles and scrapes aliasing (they still catch x4 or x8).
    expect(Number(busiest!.value![1])).toBeGreaterThan(0.2);
    expect(Number(busiest!.value![1])).toBeLessThan(0.8);
    const saturated = await rows(titled('Saturated fabric port counters'), 'A');
    expect(saturated.map((s) => `${s.metric.node_guid}/${s.metric.port} ${s.metric.counter} ${s.metric.node_name}`)).toEqual([
      `${SPINE1}/2 symbol_errors spine01`,
    ]);
  });

  it('ranks the hot spine port by the bit error rate the rule measured over the hour, both ends named; none for the saturated counter or the links younger than an hour', async () => {
    const panel = titled('Worst links by bit error rate');
    const worst = await rows(panel, 'A');
    expect(worst.map((s) => `${s.metric.node_guid}/${s.metric.port} ${s.metric.node_name}`)).toEqual([`${SPINE2}/2 spine02`]);
    // About 5 errors a second during the test, over the 4 x 10 Gb/s x 3600 s of the hour.
    expect(Number(worst[0]!.value![1])).toBeGreaterThan(1e-14);
    expect(Number(worst[0]!.value![1])).toBeLessThan(1e-10);
    const peer = await rows(panel, 'B');
    expect(peer.map((s) => `${s.metric.peer_guid}/${s.metric.peer_port} ${s.metric.peer_desc}`)).toEqual([
      `${LEAF2}/5 MF0;leaf-2:SX6036/U1`,
    ]);
    const overTime = await run(titled('Bit error rate over time, worst 10 links').targets![0]!, UNHEALTHY);
    expect(ends(overTime)).toEqual([`${SPINE2}/2`]);
    // The saturated counter counts nothing: an hour of history, and still no rate.
    expect(
      await prometheus.query(`infiniband:fabric_port_symbol_ber:1h{node_guid="${SATURATED.node_guid}", port="${SATURATED.port}"}`),
    ).toEqual([]);
  });

  it('the healthy fabric: an hour without an error is a rate of 0, which the Link health panels leave out', async () => {
    const [quiet] = await prometheus.query(`infiniband:fabric_port_symbol_ber:1h{node_guid="${QUIET.node_guid}", port="${QUIET.port}"}`);
    expect(quiet?.value?.[1]).toBe('0');
    expect(await rows(titled('Worst links by bit error rate'), 'A', HEALTHY)).toEqual([]);
  });

  it('shows the IPoIB broadcast groups as opensm made them, and the slowest host link', async () => {
    const panel = titled('IPoIB broadcast groups');
    const mtu = await rows(panel, 'A');
    expect(Object.fromEntries(mtu.map((s) => [s.metric.pkey, s.value![1]]))).toEqual({ '0xffff': '2048', '0x8001': '4096' });
    const rate = await rows(panel, 'B');
    expect(Object.fromEntries(rate.map((s) => [s.metric.pkey, s.value![1]]))).toEqual({ '0xffff': '10000000000', '0x8001': '40000000000' });
    // Every host link is 4X QDR; the INIT one is not ACTIVE and does not count.
    expect(await value('Slowest active HCA link')).toBe('40000000000');
  });

  it('the healthy fabric: its own nodes, nothing unhealthy', async () => {
    expect(await value('Switches', HEALTHY)).toBe('4');
    expect(await value('HCAs', HEALTHY)).toBe('6');
    expect(await value('Unhealthy links', HEALTHY)).toBe('0');
    const switches = await rows(titled('Switches'), 'A', HEALTHY);
    expect(switches).toHaveLength(1);
    const nodes = await prometheus.query('count by (node_guid) (infiniband_fabric_node_info{instance="healthy", node_type="switch"})');
    expect(nodes.map((s) => s.metric.node_guid).sort()).toEqual([spineGuid(1), spineGuid(2), leafGuid(1), leafGuid(2)].sort());
  });
});
