// Every panel of the fabric dashboard, with Grafana's variables substituted, returns data from a
// real Prometheus scraping two fabric-mode exporters of one subnet (sm1, sm2: one on each subnet
// manager host). They serve a synthetic exposition that follows the fabric metric contract
// exactly (test/dashboards/contract.ts): a degraded inter-switch link, a switch cable pulled
// during the test, a port stuck INIT, a spine port counting errors and congested, opensm's default
// IPoIB broadcast group. Two instances see every port: the panels must show each port once.
// (Phase 2 proves the same panels against the real exporter on an ibsim fabric.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireSystemTools } from '../support/system.js';
import { FABRIC, fabricExposition } from './contract.js';
import { loadDashboards, queryPanels, substitute, variableQuery, type Dashboard, type Panel, type VariableValues } from './model.js';
import { startPrometheus, startStaticTarget, type RunningPrometheus, type Sample } from './harness.js';

const tools = requireSystemTools('fabric dashboard', { prometheus: 'prometheus' });
const SCRAPES = 8;
const PULL_AT_SCRAPE = 4;
const fabric = loadDashboards().find(({ model }) => model.uid === 'infiniband-fabric')!.model as Dashboard;
const VALUES: VariableValues = { __rate_interval: '4s', __range: '1h', job: 'infiniband', instance: '.*' };

const titled = (title: string): Panel => {
  const panel = queryPanels(fabric).find((p) => p.title === title);
  if (!panel) throw new Error(`no panel ${title}`);
  return panel;
};

describe.skipIf(tools.skipReason)('fabric dashboard against a real Prometheus', () => {
  let prometheus: RunningPrometheus;
  let firstScrape = 0;
  const stops: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    const targets: Record<string, string> = {};
    for (const instance of ['sm1', 'sm2']) {
      const target = await startStaticTarget((scrape) => fabricExposition(scrape, PULL_AT_SCRAPE, Date.now() / 1000));
      stops.push(target.stop);
      targets[instance] = target.address;
    }
    prometheus = await startPrometheus(tools.paths.prometheus!, targets);
    stops.push(prometheus.stop);
    const deadline = Date.now() + 40_000;
    for (;;) {
      const scrapes = await prometheus.query('count_over_time(up{job="infiniband"}[1m])');
      if (scrapes.length === 2 && Math.min(...scrapes.map((s) => Number(s.value![1]))) >= SCRAPES) break;
      if (Date.now() > deadline) throw new Error(`targets not scraped ${SCRAPES} times: ${JSON.stringify(scrapes)}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    const [up] = await prometheus.query('up{job="infiniband", instance="sm1"}[1m]');
    firstScrape = up!.values![0]![0];
  }, 60_000);

  afterAll(async () => {
    for (const stop of stops.reverse()) await stop();
  });

  const rows = (panel: Panel, refId: string): Promise<Sample[]> =>
    prometheus.query(substitute(panel.targets!.find((t) => t.refId === refId)!.expr, VALUES));
  const value = async (title: string): Promise<string | undefined> => (await rows(titled(title), 'A'))[0]?.value?.[1];
  const ends = (samples: Sample[]) => samples.map((s) => `${s.metric.node_guid}/${s.metric.port}`).sort();

  it.each(queryPanels(fabric).map((p) => [p.title, p] as const))('%s returns data for every query', async (_title, panel) => {
    for (const target of panel.targets!) {
      const expr = substitute(target.expr, VALUES);
      const samples = target.instant ? await prometheus.query(expr) : await prometheus.queryRange(expr, Math.floor(firstScrape) - 2, Math.ceil(Date.now() / 1000), 1);
      expect(samples.some((s) => s.value !== undefined || (s.values?.length ?? 0) > 0), `${panel.title} ${target.refId}: ${target.expr}`).toBe(true);
    }
  });

  it('the instance variable lists both fabric-mode exporters', async () => {
    const instance = fabric.templating.list.find((v) => v.name === 'instance')!;
    const query = variableQuery(instance)!;
    expect(await prometheus.labelValues(query.label, substitute(query.selector, VALUES))).toEqual(['sm1', 'sm2']);
  });

  it('counts nodes, links and subnet managers once, although two exporters report them', async () => {
    expect(await value('Switches')).toBe('4');
    expect(await value('HCAs')).toBe('5');
    expect(await value('Inter-switch links')).toBe('4');
    expect(await value('Subnet managers and standbys')).toBe('2');
    expect(await value('Address conflicts')).toBe('0');
    // Down that was up, two ends of the degraded link, the INIT port.
    expect(await value('Unhealthy links')).toBe('4');
    const byType = await rows(titled('Nodes by type'), 'A');
    expect(Object.fromEntries(byType.map((s) => [s.metric.node_type, s.value![1]]))).toEqual({ switch: '4', ca: '5' });
    const cabled = await rows(titled('Switch ports by what they are cabled to'), 'A');
    expect(Object.fromEntries(cabled.map((s) => [s.metric.peer_type, s.value![1]]))).toEqual({ ca: '4', switch: '8' });
    const managers = await rows(titled('Subnet managers'), 'A');
    expect(managers.map((s) => `${s.metric.sm_guid} ${s.metric.state} ${s.metric.priority} ${s.value![1]}`).sort()).toEqual([
      `${FABRIC.master} MASTER 14 2`, `${FABRIC.standby} STANDBY 10 2`,
    ]);
  });

  it('names both ends of every unhealthy link', async () => {
    const down = titled('Switch ports down that were up');
    const downPorts = await rows(down, 'A');
    expect(downPorts.map((s) => `${s.metric.node_guid}/${s.metric.port} ${s.metric.node_name} ${s.value![1]}`)).toEqual([`${FABRIC.leaf2}/2 leaf2 2`]);
    const downPeer = await rows(down, 'B');
    expect(downPeer.map((s) => `${s.metric.peer_guid}/${s.metric.peer_port} ${s.metric.peer_desc}`)).toEqual([`${FABRIC.hosts[3]}/1 node04 HCA-1`]);

    const degraded = titled('Degraded links');
    expect(ends(await rows(degraded, 'A'))).toEqual([`${FABRIC.spine1}/1`, `${FABRIC.leaf1}/3`].sort());
    const peers = await rows(degraded, 'B');
    expect(peers.map((s) => `${s.metric.node_guid} -> ${s.metric.peer_guid}/${s.metric.peer_port} ${s.metric.peer_name || s.metric.peer_desc}`).sort()).toEqual([
      `${FABRIC.leaf1} -> ${FABRIC.spine1}/1 spine1`, `${FABRIC.spine1} -> ${FABRIC.leaf1}/3 MF0;leaf1:MQM8700/U1`,
    ].sort());
    expect((await rows(degraded, 'C')).map((s) => s.value![1])).toEqual(['1', '1']);
    expect((await rows(degraded, 'D')).map((s) => s.value![1])).toEqual(['4', '4']);

    const init = titled('Ports stuck in INIT');
    expect(ends(await rows(init, 'A'))).toEqual([`${FABRIC.leaf2}/5`]);
    expect((await rows(init, 'B')).map((s) => s.metric.peer_guid)).toEqual([FABRIC.hosts[4]]);
  });

  it('ranks the spine port with symbol errors and transmit wait first, and shows its utilisation', async () => {
    const [worst] = await rows(titled('Top ports by error rate'), 'A');
    expect(worst?.metric).toMatchObject({ node_guid: FABRIC.spine2, port: '2', counter: 'symbol_errors', node_name: 'spine2' });
    expect(Number(worst!.value![1])).toBeGreaterThan(2);
    const [congested] = await rows(titled('Top ports by congestion'), 'A');
    expect(congested?.metric).toMatchObject({ node_guid: FABRIC.spine2, port: '2' });
    expect(Number(congested!.value![1])).toBeCloseTo(0.75, 1);
    const [busiest] = await rows(titled('Top 10 switch ports by utilisation'), 'A');
    expect(busiest?.metric).toMatchObject({ node_guid: FABRIC.spine2, port: '2' });
    expect(Number(busiest!.value![1])).toBeGreaterThan(0.2);
    expect(Number(busiest!.value![1])).toBeLessThan(0.8);
  });

  it('shows the IPoIB broadcast groups with MTU and rate, and the slowest host link', async () => {
    const panel = titled('IPoIB broadcast groups');
    const mtu = await rows(panel, 'A');
    expect(Object.fromEntries(mtu.map((s) => [s.metric.pkey, s.value![1]]))).toEqual({ '0xffff': '2048', '0x8001': '4096' });
    const rate = await rows(panel, 'B');
    expect(Object.fromEntries(rate.map((s) => [s.metric.pkey, s.value![1]]))).toEqual({ '0xffff': '10000000000', '0x8001': '40000000000' });
    expect(await value('Slowest active HCA link')).toBe('40000000000');
  });
});
