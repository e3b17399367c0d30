// The jobs dashboard on the fabric demo (--demo=fabric, whose jobs come from demo/fabric/jobs.yaml):
// a real Prometheus scraping the exporter, with the shipped rules. The job's panels show its
// hosts, links and the degraded inter-switch link under it; the hosts' panels need host
// exporters with infiniband_host_job_info, which the demo has not: their queries run and are empty.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Exporter } from '../../src/commands/serve/exporter.js';
import { waitFor } from '../../synthetic/processes.js';
import { requireSystemTools } from '../support/system.js';
import { startDemoFabric, type RunningPrometheus, type Sample } from './harness.js';
import { loadDashboards, queryPanels, substitute, type Dashboard, type Target } from './model.js';

const tools = requireSystemTools('jobs dashboard on the demo fabric', { prometheus: 'prometheus' });
const jobs = loadDashboards().find(({ model }) => model.uid === 'infiniband-jobs')!.model as Dashboard;
const DEMO = { __rate_interval: '4s', __range: '1h', job: 'infiniband', instance: '.*', job_id: '48213' };
const HOST_PANELS = ["Physical errors on the job's hosts", "Transmit wait on the job's hosts"];

describe.skipIf(tools.skipReason)('jobs dashboard on --demo=fabric', () => {
  let exporter: Exporter;
  let prometheus: RunningPrometheus;

  beforeAll(async () => {
    ({ exporter, prometheus } = await startDemoFabric(tools.paths.prometheus!, ['--jobs.interval=1s']));
    await waitFor(
      'the jobs in Prometheus',
      async () => (await prometheus.query('infiniband:job_links_impaired:sum{job_id="48213"}')).length > 0 || undefined,
      40_000,
      250,
    );
  }, 60_000);

  afterAll(async () => {
    await prometheus?.stop();
    await exporter?.stop();
  });

  const run = (target: Target): Promise<Sample[]> => {
    const expr = substitute(target.expr, DEMO);
    const now = Math.ceil(Date.now() / 1000);
    return target.instant ? prometheus.query(expr) : prometheus.queryRange(expr, now - 30, now, 1);
  };
  const values = (samples: Sample[]): string[] => samples.map((s) => s.value?.[1] ?? s.values?.at(-1)?.[1] ?? '');

  const shown = queryPanels(jobs).filter((panel) => !HOST_PANELS.includes(panel.title));
  it.each(shown.map((p) => [p.title, p] as const))('%s returns data', async (_title, panel) => {
    for (const target of panel.targets!)
      expect((await run(target)).length, `${panel.title} ${target.refId}: ${target.expr}`).toBeGreaterThan(0);
  });

  it.each(HOST_PANELS)('%s runs and is empty without host exporters', async (title) => {
    const panel = queryPanels(jobs).find((candidate) => candidate.title === title)!;
    for (const target of panel.targets!) expect(await run(target)).toEqual([]);
  });

  it("shows the job's four hosts, four adapter and four inter-switch links, the degraded spine link among them", async () => {
    const panel = (title: string) => queryPanels(jobs).find((candidate) => candidate.title === title)!.targets![0]!;
    expect(values(await run(panel('Hosts on the fabric')))).toEqual(['4']);
    expect(values(await run(panel('Hosts not found')))).toEqual(['0']);
    expect(values(await run(panel('Adapter links')))).toEqual(['4']);
    expect(values(await run(panel('Inter-switch links')))).toEqual(['4']);
    const impaired = await run(panel('Impaired links of the job'));
    expect(impaired.map((s) => `${s.metric.scope} ${s.metric.reason} ${s.value![1]}`)).toContain('switch degraded 1');
  });

  it("shows how long the job's inter-switch links were stalled: the demo's leaf uplinks, 1.6 % of the time", async () => {
    const panel = (title: string) => queryPanels(jobs).find((candidate) => candidate.title === title)!.targets![0]!;
    // A ratio needs two ports cycles after the exporter started: wait for the first one measured.
    const stalled = async (title: string) =>
      Number((await run(panel(title))).find((s) => s.metric.scope === 'switch')?.values?.at(-1)?.[1] ?? 0);
    await waitFor('a measured ratio', async () => ((await stalled('Worst congested link of the job')) > 0 ? true : undefined), 20_000, 250);
    expect(await stalled('Worst congested link of the job')).toBeCloseTo(0.016, 2);
    expect(await stalled('Mean congestion of the job')).toBeCloseTo(0.016, 2);
  });
});
