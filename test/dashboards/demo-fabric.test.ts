// The fabric dashboard on the fabric demo (--demo=fabric): a real Prometheus scraping the exporter
// that replays demo/fabric, as a new user would see it on any machine. Every panel that needs no
// hour of history returns data, and the faults of the demo are where the panels put them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Exporter } from '../../src/commands/serve/exporter.js';
import { waitFor } from '../../synthetic/processes.js';
import { requireSystemTools } from '../support/system.js';
import { startDemoFabric, type RunningPrometheus, type Sample } from './harness.js';
import { loadDashboards, needsHour, queryPanels, substitute, type Dashboard, type Target } from './model.js';

const tools = requireSystemTools('fabric dashboard on the demo fabric', { prometheus: 'prometheus' });
const fabric = loadDashboards().find(({ model }) => model.uid === 'infiniband-fabric')!.model as Dashboard;
const DEMO = { __rate_interval: '4s', __range: '1h', job: 'infiniband', instance: 'demo' };
const LEAF = (n: number): string => `0x0002c902005${n}0000`;
/** Panels of problems the demo does not have, each with why: they must be empty on it. */
const NOT_IN_DEMO: Readonly<Record<string, string>> = {
  'Ports stuck in INIT': 'no port is stuck INIT in the recording',
  'Saturated fabric port counters': 'no counter is at its maximum (for about two hours)',
  'Switch ports down that were up': 'the cable was pulled before the exporter started: it was never up in the time range',
};

describe.skipIf(tools.skipReason)('fabric dashboard on --demo=fabric', () => {
  let exporter: Exporter;
  let prometheus: RunningPrometheus;
  let firstScrape = 0;

  beforeAll(async () => {
    ({ exporter, prometheus } = await startDemoFabric(tools.paths.prometheus!));
    await waitFor(
      'six scrapes of the demo',
      async () =>
        (await prometheus.query('count_over_time(infiniband_fabric_port_state_id{node_guid="0x0002c90200510000",port="2"}[1m]) >= 6'))
          .length === 1 || undefined,
      40_000,
      250,
    );
    const [up] = await prometheus.query('up{job="infiniband", instance="demo"}[1m]');
    firstScrape = up!.values![0]![0];
  }, 60_000);

  afterAll(async () => {
    await prometheus?.stop();
    await exporter?.stop();
  });

  const run = (target: Target): Promise<Sample[]> => {
    const expr = substitute(target.expr, DEMO);
    return target.instant
      ? prometheus.query(expr)
      : prometheus.queryRange(expr, Math.floor(firstScrape) - 2, Math.ceil(Date.now() / 1000), 1);
  };
  const nonEmpty = (samples: Sample[]): boolean => samples.some((s) => s.value !== undefined || (s.values?.length ?? 0) > 0);

  const shown = queryPanels(fabric).filter((panel) => !needsHour(panel) && NOT_IN_DEMO[panel.title] === undefined);
  it.each(shown.map((p) => [p.title, p] as const))('%s returns data', async (_title, panel) => {
    for (const target of panel.targets!) expect(nonEmpty(await run(target)), `${panel.title} ${target.refId}: ${target.expr}`).toBe(true);
  });

  it.each(Object.entries(NOT_IN_DEMO))('%s is empty: %s', async (title) => {
    const panel = queryPanels(fabric).find((candidate) => candidate.title === title)!;
    for (const target of panel.targets!) expect(await run(target), `${title} ${target.refId}`).toEqual([]);
  });

  it('the congested tier: the leaf uplinks wait to send, the rest hardly at all', async () => {
    const waiting = await prometheus.query('rate(infiniband_fabric_port_transmit_wait_total{instance="demo"}[5s]) > 100000');
    expect(waiting.map((s) => `${s.metric.node_guid}/${s.metric.port}`).sort()).toEqual(
      [1, 2, 3].flatMap((leaf) => [`${LEAF(leaf)}/4`, `${LEAF(leaf)}/5`]),
    );
  });

  it('the pulled cable is down and the degraded inter-switch link runs at 1X, below its expectation, with rising errors', async () => {
    const degraded = await prometheus.query('infiniband_fabric_port_link_degraded{instance="demo"} == 1');
    expect(degraded.map((s) => `${s.metric.node_guid}/${s.metric.port}/${s.metric.reason}`).sort()).toEqual([
      '0x0002c90200410000/1/width',
      `${LEAF(1)}/4/width`,
    ]);
    expect((await prometheus.query(`infiniband_fabric_port_state_id{instance="demo",node_guid="${LEAF(1)}",port="2"}`))[0]!.value![1]).toBe(
      '1',
    );
    expect(
      (await prometheus.query(`infiniband_fabric_port_link_width_lanes{instance="demo",node_guid="${LEAF(1)}",port="4"}`))[0]!.value![1],
    ).toBe('1');
    expect(
      await prometheus.query(`rate(infiniband_fabric_port_symbol_errors_total{instance="demo",node_guid="${LEAF(1)}",port="4"}[5s]) > 0`),
    ).toHaveLength(1);
  });
});
