// Every panel of both dashboards, with Grafana's variables substituted, returns data from a real
// Prometheus that scraped the exporter serving fixture hosts:
//   zoo01  a copy of the zoo fixture (every quirk: INIT and DOWN ports, degraded links, saturated
//          counters), made live: mlx5_7 receives 1 GB/s and qib0 goes DOWN during the test
//   dgx01  the dgx fixture (a healthy 8-port host): panels documented as empty on a healthy fabric
//          must be empty there, so they raise no false alarm
//   diag01 a synthetic host serving the diag collector's metrics (peer counters that grow, subnet
//          manager with a failover, a port without SM), for the panels that need the diag collector
//   ibsim01 the exporter with its real diag collector replaying infiniband-diags outputs recorded
//          on the simulated fabric (test/fixtures/diag: a master SM and a standby SM on this host)
//   physics01 the exporter on the link physics host (test/support/physics-host.ts: adapters whose
//          PCIe link trained at x8 and at Gen3, cables read by a fake mstlink replaying recorded
//          captures through the real runner) with an hour and a quarter of history written into
//          Prometheus before it starts: one link at a bit error rate of 10^-11, one at 3x10^-14,
//          one without errors, for the recording rule of the shipped rules (loaded) to measure
// zoo01 and dgx01 have no PCIe attributes, no module tool and no hour of data: the Link health
// panels must be empty there (a link up for a minute has no bit error rate, not a spike).
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { physicsHost } from '../support/physics-host.js';
import { requireSystemTools } from '../support/system.js';
import { DGX, PROJECT_ROOT, SIMULATED_HOST, ZOO, ZOO_CONFIG, copyTree, writeTree } from '../support/trees.js';
import { ReplayRunner } from '../support/replay.js';
import { SM_GUIDS, diagHostExposition } from './contract.js';
import {
  emptyWhenHealthy,
  loadDashboards,
  needsDiag,
  needsExpectation,
  needsLinkPhysics,
  queryPanels,
  regexLiteral,
  substitute,
  variableQuery,
  type Dashboard,
  type Panel,
  type Target,
  type VariableValues,
} from './model.js';
import {
  openMetricsHistory,
  startExporter,
  startPrometheus,
  startStaticTarget,
  type HistorySeries,
  type RunningExporter,
  type RunningPrometheus,
  type RunningServer,
  type Sample,
} from './harness.js';
import type { DiagCommand } from '../../src/sources/diag/local-ports.js';

const tools = requireSystemTools('dashboards', { prometheus: 'prometheus', promtool: 'prometheus' });
const HOST_RULES = path.join(PROJECT_ROOT, 'rules/infiniband-alerts.yml');
const SCRAPES = 6;
const FAILOVER_AT_SCRAPE = 3;
/** mlx5_7/1 (2X HDR, data rate 12.5 GB/s) receives this many bytes per second during the test. */
const RECEIVE_BYTES_PER_SECOND = 1e9;
const MLX5_7_DATA_RATE = 12.5e9;

/**
 * The links of physics01 and the bit error rate each had over the hour and a quarter of history:
 * symbol errors at rate x lanes x signalling rate (NDR 106.25, HDR 53.125 Gb/s a lane), up to the
 * value the exporter serves from then on.
 */
const PHYSICS_LINKS = [
  { device: 'mlx5_0', ber: 0, signallingGbps: 106.25, laneBytes: 12.5e9, symbolErrors: 0 },
  { device: 'mlx5_1', ber: 1e-11, signallingGbps: 106.25, laneBytes: 12.5e9, symbolErrors: 20_000 },
  { device: 'mlx5_2', ber: 3e-14, signallingGbps: 53.125, laneBytes: 6.25e9, symbolErrors: 1_000 },
] as const;
const HISTORY_MINUTES = 75;

function physicsHistory(endSeconds: number): string {
  const labels = (device: string) => ({ instance: 'physics01', job: 'infiniband', device, port: '1' });
  const series: HistorySeries[] = PHYSICS_LINKS.flatMap((link) => [
    {
      name: 'infiniband_port_symbol_errors_total',
      labels: labels(link.device),
      value: (ago: number) => Math.round(link.symbolErrors - link.ber * 4 * link.signallingGbps * 1e9 * ago),
    },
    { name: 'infiniband_port_link_width_lanes', labels: labels(link.device), value: () => 4 },
    { name: 'infiniband_port_lane_rate_bytes_per_second', labels: labels(link.device), value: () => link.laneBytes },
  ]);
  return openMetricsHistory(series, endSeconds, HISTORY_MINUTES, 15);
}

/** Replace a sysfs file in one step, so the exporter never reads it half written. */
async function replaceFile(file: string, text: string): Promise<void> {
  await writeFile(`${file}.new`, text);
  await rename(`${file}.new`, file);
}

const dashboards = Object.fromEntries(loadDashboards().map(({ model }) => [model.uid, model])) as Record<string, Dashboard>;
const overview = dashboards['infiniband-overview']!;
const host = dashboards['infiniband-host']!;

/** Grafana's substitution for one selected host (or a regex for the fleet). */
function variables(instance: string): VariableValues {
  return {
    __rate_interval: '1m',
    __range: '1h',
    job: 'infiniband',
    instance,
    device: '.*',
    port: '.*',
    hw_counter: '.*',
  };
}
const FLEET = variables('.*');
const ZOO01 = variables(regexLiteral('zoo01'));
const DGX01 = variables(regexLiteral('dgx01'));
const DIAG01 = variables(regexLiteral('diag01'));
const IBSIM01 = variables(regexLiteral('ibsim01'));
const PHYSICS01 = variables(regexLiteral('physics01'));

const titled = (model: Dashboard, title: string): Panel => {
  const panel = queryPanels(model).find((p) => p.title === title);
  if (!panel) throw new Error(`no panel ${title} in ${model.uid}`);
  return panel;
};

describe.skipIf(tools.skipReason)('dashboards against a real Prometheus', () => {
  let prometheus: RunningPrometheus;
  const stops: (() => Promise<void>)[] = [];
  let firstScrape = 0;

  let qib0DownAt = 0;

  beforeAll(async () => {
    const zooTree = await copyTree(ZOO);
    stops.push(zooTree.remove);
    const ports = path.join(zooTree.root, 'class/infiniband');
    const zoo: RunningExporter = await startExporter([`--path.sysfs=${zooTree.root}`, `--config.file=${ZOO_CONFIG}`]);
    stops.push(zoo.stop);
    const dgx: RunningExporter = await startExporter([`--path.sysfs=${DGX}`]);
    stops.push(dgx.stop);
    const diag: RunningServer = await startStaticTarget((scrape) => diagHostExposition(scrape, FAILOVER_AT_SCRAPE, Date.now() / 1000));
    stops.push(diag.stop);
    const ibsimRoot = await mkdtemp(path.join(tmpdir(), 'ibx-dash-ibsim-'));
    stops.push(() => rm(ibsimRoot, { recursive: true, force: true }));
    await writeTree(ibsimRoot, SIMULATED_HOST);
    const ibsim: RunningExporter = await startExporter(
      [`--path.sysfs=${ibsimRoot}`],
      new ReplayRunner<DiagCommand>('diag', ['two-sms', 'sm-master']),
    );
    stops.push(ibsim.stop);
    const physicsTree = await physicsHost({
      symbolErrors: Object.fromEntries(PHYSICS_LINKS.map((link) => [link.device, link.symbolErrors])),
    });
    stops.push(physicsTree.remove);
    const physics: RunningExporter = await startExporter(
      ['--path.sysfs', physicsTree.root, '--mstlink.path', physicsTree.tool.path],
      undefined,
      { modules: true },
    );
    stops.push(physics.stop);

    // Traffic: the PMA data counter counts 4-byte words.
    const rcvData = path.join(ports, 'mlx5_7/ports/1/counters/port_rcv_data');
    const startWords = 702255190017;
    const trafficFrom = Date.now();
    let writing = Promise.resolve();
    const traffic = setInterval(() => {
      const words = startWords + Math.round(((Date.now() - trafficFrom) / 1000) * (RECEIVE_BYTES_PER_SECOND / 4));
      writing = writing.then(() => replaceFile(rcvData, `${words}\n`));
    }, 100);
    stops.push(async () => {
      clearInterval(traffic);
      await writing;
    });

    prometheus = await startPrometheus(
      tools.paths.prometheus!,
      { zoo01: zoo.address, dgx01: dgx.address, diag01: diag.address, ibsim01: ibsim.address, physics01: physics.address },
      {
        ruleFiles: [HOST_RULES],
        history: { promtool: tools.paths.promtool!, openMetrics: physicsHistory(Math.floor(Date.now() / 1000) - 1) },
      },
    );
    stops.push(prometheus.stop);

    const deadline = Date.now() + 30_000;
    for (;;) {
      const scrapes = await prometheus.query('count_over_time(up{job="infiniband"}[1m])');
      const fewest = scrapes.length === 5 ? Math.min(...scrapes.map((s) => Number(s.value![1]))) : 0;
      if (!qib0DownAt && fewest >= 3) {
        // The cable of qib0 is pulled: a port that was ACTIVE goes DOWN / Polling.
        qib0DownAt = Date.now() / 1000;
        await replaceFile(path.join(ports, 'qib0/ports/1/state'), '1: DOWN\n');
        await replaceFile(path.join(ports, 'qib0/ports/1/phys_state'), '2: Polling\n');
      }
      if (fewest >= SCRAPES && diag.requests() >= SCRAPES && qib0DownAt && Date.now() / 1000 - qib0DownAt > 3.5) break;
      if (Date.now() > deadline) throw new Error(`targets not scraped ${SCRAPES} times in 30 s: ${JSON.stringify(scrapes)}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    // Prometheus applies new targets a few seconds after start: the data begins at the first scrape.
    const [zooUp] = await prometheus.query('up{job="infiniband", instance="zoo01"}[1m]');
    firstScrape = zooUp!.values![0]![0];
  }, 60_000);

  afterAll(async () => {
    for (const stop of stops.reverse()) await stop();
  });

  /** What the panel's query returns, the way Grafana asks for it (instant, or a range over the test). */
  async function run(target: Target, values: VariableValues): Promise<Sample[]> {
    const expr = substitute(target.expr, values);
    if (target.instant) return prometheus.query(expr);
    return prometheus.queryRange(expr, Math.floor(firstScrape) - 2, Math.ceil(Date.now() / 1000), 1);
  }
  const nonEmpty = (samples: Sample[]) => samples.some((s) => s.value !== undefined || (s.values?.length ?? 0) > 0);
  async function instantRows(panel: Panel, refId: string, values: VariableValues): Promise<Sample[]> {
    const target = panel.targets!.find((t) => t.refId === refId)!;
    return prometheus.query(substitute(target.expr, values));
  }
  /**
   * On the healthy dgx01 (no config file, no diag collector, no PCIe attributes, no module tool, a
   * minute of data), a panel documented as empty on a healthy fabric, or as needing the diag
   * collector, an expectation, PCIe attributes, the module collector or an hour of data, shows
   * nothing; any other panel shows data.
   */
  async function expectHealthy(panel: Panel): Promise<void> {
    const results = await Promise.all(panel.targets!.map((target) => run(target, DGX01)));
    if (emptyWhenHealthy(panel) || needsDiag(panel) || needsExpectation(panel) || needsLinkPhysics(panel)) {
      results.forEach((samples, i) => expect(samples, `${panel.title} ${panel.targets![i]!.refId}`).toEqual([]));
    } else {
      expect(results.some(nonEmpty), panel.title).toBe(true);
    }
  }
  const row = (rows: Sample[], labels: Record<string, string>) =>
    rows.find((r) => Object.entries(labels).every(([k, v]) => r.metric[k] === v));

  it('scrapes the five hosts successfully', async () => {
    const up = await prometheus.query('up{job="infiniband"}');
    expect(Object.fromEntries(up.map((s) => [s.metric.instance, s.value![1]]))).toEqual({
      zoo01: '1',
      dgx01: '1',
      diag01: '1',
      ibsim01: '1',
      physics01: '1',
    });
  });

  describe('fleet overview, all hosts', () => {
    it.each(queryPanels(overview).map((p) => [p.title, p] as const))('%s returns data for every query', async (_title, panel) => {
      for (const target of panel.targets!)
        expect(nonEmpty(await run(target, FLEET)), `${panel.title} ${target.refId}: ${target.expr}`).toBe(true);
    });

    it('variables list the job and the hosts', async () => {
      const values: Record<string, string[]> = {};
      for (const variable of overview.templating.list) {
        const query = variableQuery(variable);
        if (query) values[variable.name] = await prometheus.labelValues(query.label, substitute(query.selector, FLEET));
      }
      expect(values).toEqual({ job: ['infiniband'], instance: ['dgx01', 'diag01', 'ibsim01', 'physics01', 'zoo01'] });
    });
  });

  describe('fleet overview, one healthy host (dgx01): no false alarms', () => {
    it.each(queryPanels(overview).map((p) => [p.title, p] as const))('%s', async (_title, panel) => {
      await expectHealthy(panel);
    });
    it('the "or vector(0)" stats say 0 rather than nothing', async () => {
      for (const title of ['Exporters down', 'Not ACTIVE', 'Links degraded', 'Counters saturated', 'HCA types with mixed firmware']) {
        const [sample] = await instantRows(titled(overview, title), 'A', DGX01);
        expect(sample?.value?.[1], title).toBe('0');
      }
    });
  });

  describe('fleet overview: what the zoo and the synthetic diag host must show', () => {
    it('Ports not ACTIVE lists the INIT port, the DOWN port and the port that just went down, since when', async () => {
      const panel = titled(overview, 'Ports not ACTIVE');
      const state = await instantRows(panel, 'A', FLEET);
      expect(state.map((r) => `${r.metric.instance} ${r.metric.device}/${r.metric.port} ${r.value![1]}`).sort()).toEqual([
        'physics01 mlx5_3/1 1',
        'zoo01 mlx5_2/1 2',
        'zoo01 mlx5_5/1 1',
        'zoo01 qib0/1 1',
      ]);
      const phys = await instantRows(panel, 'B', FLEET);
      expect(row(phys, { instance: 'zoo01', device: 'mlx5_2' })?.value?.[1]).toBe('5');
      expect(row(phys, { instance: 'zoo01', device: 'mlx5_5' })?.value?.[1]).toBe('2');
      expect(row(phys, { instance: 'zoo01', device: 'qib0' })?.value?.[1]).toBe('2');
      // Never ACTIVE in the range: since the start of the data. ACTIVE before: since it was last seen ACTIVE.
      const since = await instantRows(panel, 'C', FLEET);
      const sinceOf = (device: string) => Number(row(since, { instance: 'zoo01', device })?.value?.[1]) / 1000;
      expect(sinceOf('mlx5_2')).toBeGreaterThan(firstScrape - 1);
      expect(sinceOf('mlx5_2')).toBeLessThan(firstScrape + 1.5);
      expect(sinceOf('qib0')).toBeGreaterThan(qib0DownAt - 2);
      expect(sinceOf('qib0')).toBeLessThan(qib0DownAt + 3);
      const changes = await instantRows(panel, 'D', FLEET);
      expect(Object.fromEntries(changes.map((r) => [`${r.metric.instance} ${r.metric.device}`, r.value![1]]))).toEqual({
        'zoo01 mlx5_2': '0',
        'zoo01 mlx5_5': '0',
        'zoo01 qib0': '1',
        'physics01 mlx5_3': '0',
      });
    });

    it('throughput and utilisation show the traffic of mlx5_7 in bytes per second and share of its data rate', async () => {
      // A rate window inside the test's data, so that the rate is close to the true one (the
      // exporter's 1 s collections and the 1 s scrapes alias, hence the loose bounds: they still
      // catch a words/bytes (x4) or bytes/bits (x8) mistake).
      const short = { ...FLEET, __rate_interval: '4s' };
      const [top] = await instantRows(titled(overview, 'Top 10 ports by utilisation'), 'A', short);
      expect(top?.metric).toMatchObject({ instance: 'zoo01', device: 'mlx5_7', port: '1' });
      expect(Number(top!.value![1])).toBeGreaterThan(0.5 * (RECEIVE_BYTES_PER_SECOND / MLX5_7_DATA_RATE));
      expect(Number(top!.value![1])).toBeLessThan(1.6 * (RECEIVE_BYTES_PER_SECOND / MLX5_7_DATA_RATE));
      const [busiest] = await instantRows(titled(overview, 'Top 10 ports by throughput'), 'A', short);
      expect(busiest?.metric.device).toBe('mlx5_7');
      expect(Number(busiest!.value![1])).toBeGreaterThan(0.5 * RECEIVE_BYTES_PER_SECOND);
      const received = await instantRows(titled(host, 'Throughput'), 'B', { ...ZOO01, __rate_interval: '4s', device: 'mlx5_7' });
      expect(Number(received[0]!.value![1])).toBeGreaterThan(0.5 * RECEIVE_BYTES_PER_SECOND);
      expect(Number(received[0]!.value![1])).toBeLessThan(1.6 * RECEIVE_BYTES_PER_SECOND);
    });

    it('Degraded links shows active against expected width and lane rate', async () => {
      const panel = titled(overview, 'Degraded links');
      const at = async (refId: string, device: string) =>
        row(await instantRows(panel, refId, FLEET), { instance: 'zoo01', device })?.value?.[1];
      expect(await at('A', 'mlx5_3')).toBe('1');
      expect(await at('B', 'mlx5_3')).toBe('4');
      expect(await at('E', 'mlx5_3')).toBe('1');
      expect(await at('F', 'mlx5_3')).toBe('0');
      expect(await at('C', 'mlx5_4')).toBe('2500000000');
      expect(await at('D', 'mlx5_4')).toBe('25000000000');
      expect(await at('F', 'mlx5_4')).toBe('1');
      expect(await instantRows(panel, 'A', FLEET)).toHaveLength(2);
    });

    it('subnet manager panels see the failover and the port without a subnet manager', async () => {
      const [changes] = await instantRows(titled(overview, 'Master subnet manager changes'), 'A', FLEET);
      expect(changes?.value?.[1]).toBe('1');
      const [missing] = await instantRows(titled(overview, 'Ports with no subnet manager'), 'A', FLEET);
      expect(missing?.value?.[1]).toBe('1');
      const unreachable = await instantRows(titled(overview, 'Ports that cannot reach a subnet manager'), 'A', FLEET);
      expect(unreachable.map((r) => `${r.metric.instance} ${r.metric.device}/${r.metric.port}`)).toEqual(['diag01 mlx5_1/1']);
      const managers = await instantRows(titled(overview, 'Subnet managers'), 'C', DIAG01);
      expect(managers.map((r) => [r.metric.sm_guid, r.metric.state, r.value![1]])).toEqual([[SM_GUIDS.after, 'MASTER', '14']]);
    });

    it('the peer error table ranks the link whose switch port counts errors first', async () => {
      const rows = await instantRows(titled(overview, 'Top ports by peer error rate'), 'A', FLEET);
      const top = rows.map((r) => ({ ...r.metric, rate: Number(r.value![1]) })).sort((a, b) => b.rate - a.rate);
      expect(top[0]).toMatchObject({ instance: 'diag01', device: 'mlx5_0', counter: 'transmit_wait' });
      expect(top[1]).toMatchObject({ instance: 'diag01', device: 'mlx5_0', counter: 'symbol_errors' });
      expect(top[1]!.rate).toBeGreaterThan(0);
    });

    it('firmware, IPoIB and saturation tables count what the fixtures hold', async () => {
      const firmware = await instantRows(titled(overview, 'Firmware versions per HCA type'), 'A', FLEET);
      expect(row(firmware, { hca_type: 'MT4129', firmware_version: '28.39.1002' })?.value?.[1]).toBe('10');
      const pkeys = await instantRows(titled(overview, 'IPoIB settings per P_Key'), 'A', FLEET);
      expect(row(pkeys, { pkey: '0xffff', mode: 'datagram', mtu: '4092' })?.value?.[1]).toBe('10');
      expect(row(pkeys, { pkey: '0xffff', mode: 'connected', mtu: '65520' })?.value?.[1]).toBe('1');
      const saturated = await instantRows(titled(overview, 'Saturated PMA counters'), 'A', FLEET);
      expect(saturated.map((r) => `${r.metric.instance} ${r.metric.device} ${r.metric.counter}`).sort()).toEqual([
        'ibsim01 ibsim0 link_downed',
        'ibsim01 ibsim0 peer_symbol_errors',
        'zoo01 mlx5_4 link_downed',
        'zoo01 mlx5_4 local_link_integrity_errors',
        'zoo01 mlx5_4 symbol_errors',
        'zoo01 mlx5_4 transmit_data_bytes',
        'zoo01 mlx5_6 transmit_data_bytes',
      ]);
      const carrier = await instantRows(titled(overview, 'IPoIB interfaces without carrier'), 'A', FLEET);
      expect(carrier.map((r) => r.metric.interface).sort()).toEqual(['ib2', 'ib3']);
    });
  });

  describe('host dashboard, zoo01', () => {
    it.each(queryPanels(host).map((p) => [p.title, p] as const))(
      '%s returns data, unless it needs the diag collector or link physics data',
      async (_title, panel) => {
        for (const target of panel.targets!) {
          const samples = await run(target, ZOO01);
          if (needsDiag(panel) || needsLinkPhysics(panel)) expect(samples, `${panel.title} ${target.refId}`).toEqual([]);
          else expect(nonEmpty(samples), `${panel.title} ${target.refId}: ${target.expr}`).toBe(true);
        }
      },
    );

    it('variables list the host, its devices, ports and hw_counters', async () => {
      const values: Record<string, string[]> = {};
      for (const variable of host.templating.list) {
        const query = variableQuery(variable);
        if (query) values[variable.name] = await prometheus.labelValues(query.label, substitute(query.selector, ZOO01));
      }
      expect(values.job).toEqual(['infiniband']);
      expect(values.instance).toEqual(['dgx01', 'diag01', 'ibsim01', 'physics01', 'zoo01']);
      expect(values.device).toHaveLength(13);
      expect(values.port).toEqual(['1', '2']);
      expect(values.hw_counter).toEqual(expect.arrayContaining(['out_of_buffer', 'np_cnp_sent', 'tcpRetransSegs']));
    });

    it('one selected port narrows every port panel to it', async () => {
      const one = { ...ZOO01, device: 'mlx5_0', port: '1' };
      for (const title of ['Ports', 'Throughput', 'Local physical link errors', 'IPoIB interfaces', 'Driver hw_counters values']) {
        for (const target of titled(host, title).targets!) {
          const samples = await run(target, one);
          expect(samples.length, `${title} ${target.refId}`).toBeGreaterThan(0);
          for (const s of samples) {
            if ('device' in s.metric) expect(s.metric.device, title).toBe('mlx5_0');
            if ('port' in s.metric) expect(s.metric.port, title).toBe('1');
          }
        }
      }
    });
  });

  describe('host dashboard, hosts with the diag collector (diag01 synthetic, ibsim01 recorded tools)', () => {
    it.each(
      queryPanels(host)
        .filter(needsDiag)
        .map((p) => [p.title, p] as const),
    )('%s returns data for every query', async (_title, panel) => {
      for (const values of [DIAG01, IBSIM01]) {
        for (const target of panel.targets!)
          expect(nonEmpty(await run(target, values)), `${values.instance} ${panel.title} ${target.refId}`).toBe(true);
      }
    });

    it('the real diag collector: the master SM with its priority, the standby SM on this host, no failover', async () => {
      const [changes] = await instantRows(titled(overview, 'Master subnet manager changes'), 'A', IBSIM01);
      expect(changes?.value?.[1]).toBe('0');
      const panel = titled(overview, 'Subnet managers');
      const ports = await instantRows(panel, 'A', IBSIM01);
      expect(ports.map((r) => `${r.metric.sm_guid} ${r.metric.sm_lid} ${r.metric.state} ${r.value![1]}`).sort()).toEqual([
        '0x0002c90200400000 1 MASTER 1',
        '0x0002c90300a1b3d1 4 STANDBY 1',
      ]);
      const priority = await instantRows(panel, 'C', IBSIM01);
      expect(priority.map((r) => `${r.metric.sm_guid} ${r.value![1]}`)).toEqual(['0x0002c90200400000 10']);
      const seen = await instantRows(titled(host, 'Subnet manager seen from this host'), 'B', IBSIM01);
      expect(seen.map((r) => r.metric.sm_guid)).toEqual(['0x0002c90200400000']);
    });
  });

  describe('host dashboard, physics01: Link health', () => {
    it.each(
      queryPanels(host)
        .filter(needsLinkPhysics)
        .map((p) => [p.title, p] as const),
    )('%s returns data for every query', async (_title, panel) => {
      for (const target of panel.targets!)
        expect(nonEmpty(await run(target, PHYSICS01)), `${panel.title} ${target.refId}: ${target.expr}`).toBe(true);
    });

    it('ranks the links by the bit error rate the recording rule measured over the hour, and has none for the link that is down', async () => {
      const rows = await instantRows(titled(host, 'Worst links by bit error rate'), 'A', PHYSICS01);
      const ber = Object.fromEntries(rows.map((r) => [`${r.metric.device}/${r.metric.port} ${r.metric.end}`, Number(r.value![1])]));
      expect(Object.keys(ber).sort()).toEqual(['mlx5_0/1 local', 'mlx5_1/1 local', 'mlx5_2/1 local']);
      // The rule reads the rate the link trained at (NDR, HDR) and the hour's errors. It reads low by
      // the share of the hour that passed since the history ended without new errors (minutes on a
      // loaded machine), and the HDR link's 23 errors an hour are whole numbers.
      expect(ber['mlx5_1/1 local']).toBeGreaterThan(0.8e-11);
      expect(ber['mlx5_1/1 local']).toBeLessThan(1.05e-11);
      expect(ber['mlx5_2/1 local']).toBeGreaterThan(2e-14);
      expect(ber['mlx5_2/1 local']).toBeLessThan(3.5e-14);
      expect(ber['mlx5_0/1 local']).toBe(0);
      // The same series over time, and the alert beside it fires for the one link above 10^-12 only.
      const overTime = await run(titled(host, 'Bit error rate over time').targets![0]!, PHYSICS01);
      expect(overTime.map((s) => s.metric.device).sort()).toEqual(['mlx5_0', 'mlx5_1', 'mlx5_2']);
      const firing = await prometheus.query('ALERTS{alertname="InfiniBandLinkBitErrorRateHigh", instance="physics01"}');
      expect(firing.map((s) => `${s.metric.device} ${s.metric.alertstate}`)).toEqual(['mlx5_1 pending']);
    });

    it("shows each adapter's PCIe link against its maximum, the degraded ones, the ports they limit and the AER totals", async () => {
      const panel = titled(host, 'PCIe links');
      const at = async (refId: string) =>
        Object.fromEntries((await instantRows(panel, refId, PHYSICS01)).map((r) => [r.metric.device, Number(r.value![1])]));
      expect(await at('A')).toEqual({ mlx5_0: 16, mlx5_1: 8, mlx5_2: 16 });
      expect(await at('B')).toEqual({ mlx5_0: 16, mlx5_1: 16, mlx5_2: 16 });
      expect(await at('C')).toEqual({ mlx5_0: 32, mlx5_1: 32, mlx5_2: 8 });
      expect(await at('D')).toEqual({ mlx5_0: 32, mlx5_1: 32, mlx5_2: 16 });
      expect((await at('E')).mlx5_1! / 1e9).toBeCloseTo(31.5, 1);
      expect(await at('F')).toEqual({ mlx5_0: 0, mlx5_1: 1, mlx5_2: 0 });
      expect(await at('G')).toEqual({ mlx5_0: 0, mlx5_1: 0, mlx5_2: 1 });
      expect(await at('H')).toEqual({ mlx5_0: 0, mlx5_1: 17 });
      const limited = titled(host, 'Ports limited by PCIe');
      const ports = async (refId: string) =>
        Object.fromEntries(
          (await instantRows(limited, refId, PHYSICS01)).map((r) => [`${r.metric.device}/${r.metric.port}`, Number(r.value![1])]),
        );
      expect(await ports('A')).toEqual({ 'mlx5_0/1': 0, 'mlx5_1/1': 1, 'mlx5_2/1': 1 });
      expect(await ports('B')).toEqual({ 'mlx5_0/1': 50e9, 'mlx5_1/1': 50e9, 'mlx5_2/1': 25e9 });
      expect((await ports('C'))['mlx5_2/1']! / 1e9).toBeCloseTo(15.75, 1);
    });

    it('shows the cables the tool read (none for the empty cage or the port whose call failed) and the optical module against its own thresholds', async () => {
      const cables = await instantRows(titled(host, 'Cables and modules'), 'A', PHYSICS01);
      // (An empty label, such as the excerpt's unknown cable type, is no label in Prometheus.)
      expect(
        cables
          .map((r) => `${r.metric.device} ${r.metric.vendor} ${r.metric.part_number} ${r.metric.serial} ${r.metric.cable_type ?? '-'}`)
          .sort(),
      ).toEqual(['mlx5_0 CLT T-F4GS-BV0 CWJH05025502589 -', 'mlx5_1 FS Q28-PC03 S2202655321-1 Passive copper cable']);
      const temperature = titled(host, 'Module temperature against threshold');
      expect((await instantRows(temperature, 'A', PHYSICS01)).map((r) => `${r.metric.device} ${r.value![1]}`)).toEqual(['mlx5_0 54']);
      expect((await instantRows(temperature, 'B', PHYSICS01)).map((r) => `${r.metric.device} ${r.value![1]}`)).toEqual(['mlx5_0 75']);
      const rx = titled(host, 'Module receive power against threshold');
      expect((await instantRows(rx, 'A', PHYSICS01)).map((r) => r.metric.lane).sort()).toEqual(['1', '2', '3', '4']);
      expect((await instantRows(rx, 'B', PHYSICS01)).map((r) => r.value![1])).toEqual(['-10.41']);
    });
  });

  describe('host dashboard, dgx01 (healthy host, no config file, no diag collector): no false alarms', () => {
    it.each(queryPanels(host).map((p) => [p.title, p] as const))('%s', async (_title, panel) => {
      await expectHealthy(panel);
    });
  });
});
