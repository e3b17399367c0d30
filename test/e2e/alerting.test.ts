// The on-call path, end to end: a real Prometheus scrapes the exporter with the shipped rules, a
// real Alertmanager routes the alerts to a webhook in this test, the fault is healed and the
// resolved notification arrives. Two cases:
//   - host: the exporter serves a host with a port stuck INIT; an SM configures it;
//   - fabric: the exporter in fabric mode on a simulated fat tree (ibsim, opensm, the real
//     infiniband-diags); a switch port loses its cable (Unlink), then gets it back (ReLink).
//
// The shipped configurations are used, with documented transformations so the test takes
// seconds: the rule files are those deploy/prometheus/prometheus.yml loads, with every `for:`
// becoming 1s (look-backs such as PortDown's "LinkUp within the last day" stay: the test's whole
// history lies within them); in deploy/alertmanager/alertmanager.yml every webhook URL points at
// this test's receiver and the group_wait/group_interval of every route become 1s. Routing,
// grouping and inhibition stay as shipped. Scrapes and rule evaluations run every second.
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import type { Exporter } from '../../src/commands/serve/exporter.js';
import { HOST12, LEAF1 } from '../support/fabric-recordings.js';
import { exporterFromFlags } from '../support/exporter.js';
import { FABRIC_LAB_PACKAGES, Lab } from '../../synthetic/ibsim-lab.js';
import { freePort, startService, waitFor } from '../../synthetic/processes.js';
import { requireSystemTools } from '../support/system.js';
import { copyTree, PROJECT_ROOT, ZOO, type TempTree } from '../support/trees.js';

const tools = requireSystemTools('alerting end-to-end', { prometheus: 'prometheus', 'prometheus-alertmanager': 'prometheus-alertmanager' });
const fabricTools = requireSystemTools('fabric alerting end-to-end', FABRIC_LAB_PACKAGES);

interface Alert {
  status: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

interface Notification {
  receiver: string;
  status: 'firing' | 'resolved';
  alerts: Alert[];
}

interface Route {
  group_wait?: string;
  group_interval?: string;
  routes?: Route[];
}

/** The shipped Alertmanager config, delivering to `url` with 1s grouping (see the file comment). */
export function alertmanagerForTest(shippedYaml: string, url: string): string {
  const config = parse(shippedYaml) as { route: Route; receivers: { webhook_configs?: { url: string }[] }[] };
  const shorten = (route: Route): void => {
    if (route.group_wait !== undefined || route === config.route) route.group_wait = '1s';
    if (route.group_interval !== undefined || route === config.route) route.group_interval = '1s';
    route.routes?.forEach(shorten);
  };
  shorten(config.route);
  for (const receiver of config.receivers) for (const webhook of receiver.webhook_configs ?? []) webhook.url = url;
  return stringify(config);
}

/** The shipped rules with every pending period shortened to 1s (see the file comment). */
export function shortenPendingPeriods(rulesYaml: string): string {
  const document = parse(rulesYaml) as { groups: { rules: { for?: string }[] }[] };
  for (const group of document.groups) for (const rule of group.rules) if (rule.for !== undefined) rule.for = '1s';
  return stringify(document);
}

const SHIPPED_PROMETHEUS = path.join(PROJECT_ROOT, 'deploy/prometheus/prometheus.yml');

/** The rule files the shipped Prometheus configuration loads, as absolute paths. */
function shippedRuleFiles(): string[] {
  const config = parse(readFileSync(SHIPPED_PROMETHEUS, 'utf8')) as { rule_files: string[] };
  return config.rule_files.map((file) => path.resolve(path.dirname(SHIPPED_PROMETHEUS), file));
}

interface Pipeline {
  /** Every notification the webhook received, in order. */
  notifications: Notification[];
  /** An instant PromQL query against the pipeline's Prometheus. */
  query(expr: string): Promise<unknown[]>;
  stop(): Promise<void>;
}

/**
 * A webhook receiver, the shipped Alertmanager delivering to it, and Prometheus with the shipped
 * rules scraping `target` (host:port) as job `job`, all on 127.0.0.1 in a temporary directory.
 */
async function startPipeline(job: string, target: string): Promise<Pipeline> {
  const dir = await mkdtemp(path.join(tmpdir(), 'ibx-e2e-'));
  const stops: (() => Promise<void>)[] = [() => rm(dir, { recursive: true, force: true })];
  const stop = async () => {
    for (const step of stops.splice(0).reverse()) await step();
  };
  try {
    const notifications: Notification[] = [];
    const webhook = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () => {
        notifications.push(JSON.parse(body) as Notification);
        response.end('ok');
      });
    });
    await new Promise<void>((resolve) => webhook.listen(0, '127.0.0.1', resolve));
    stops.push(() => new Promise<void>((resolve) => webhook.close(() => resolve())));
    const webhookPort = (webhook.address() as { port: number }).port;

    const alertmanagerPort = await freePort();
    const shipped = readFileSync(path.join(PROJECT_ROOT, 'deploy/alertmanager/alertmanager.yml'), 'utf8');
    await writeFile(path.join(dir, 'alertmanager.yml'), alertmanagerForTest(shipped, `http://127.0.0.1:${webhookPort}/`));
    const alertmanager = await startService(
      'alertmanager',
      tools.paths['prometheus-alertmanager']!,
      [
        `--config.file=${path.join(dir, 'alertmanager.yml')}`,
        `--storage.path=${path.join(dir, 'alertmanager')}`,
        `--web.listen-address=127.0.0.1:${alertmanagerPort}`,
        '--cluster.listen-address=',
      ],
      `http://127.0.0.1:${alertmanagerPort}`,
      '/-/ready',
    );
    stops.push(() => alertmanager.stop());

    const ruleFiles: string[] = [];
    for (const file of shippedRuleFiles()) {
      const copy = path.join(dir, path.basename(file));
      await writeFile(copy, shortenPendingPeriods(readFileSync(file, 'utf8')));
      ruleFiles.push(copy);
    }
    const prometheusPort = await freePort();
    await writeFile(
      path.join(dir, 'prometheus.yml'),
      stringify({
        global: { scrape_interval: '1s', evaluation_interval: '1s' },
        rule_files: ruleFiles,
        alerting: { alertmanagers: [{ static_configs: [{ targets: [`127.0.0.1:${alertmanagerPort}`] }] }] },
        scrape_configs: [{ job_name: job, static_configs: [{ targets: [target] }] }],
      }),
    );
    const url = `http://127.0.0.1:${prometheusPort}`;
    const prometheus = await startService(
      'prometheus',
      tools.paths.prometheus!,
      [
        `--config.file=${path.join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${path.join(dir, 'prometheus')}`,
        `--web.listen-address=127.0.0.1:${prometheusPort}`,
      ],
      url,
      '/-/ready',
    );
    stops.push(() => prometheus.stop());

    const query = async (expr: string): Promise<unknown[]> => {
      const body = (await (await fetch(`${url}/api/v1/query?${new URLSearchParams({ query: expr })}`)).json()) as {
        data: { result: unknown[] };
      };
      return body.data.result;
    };
    return { notifications, query, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** The first alert named `alertname` with `status` (and `labels`) in the notifications so far. */
const delivered = (notifications: Notification[], alertname: string, status: string, labels: Record<string, string>): Alert | undefined =>
  notifications
    .flatMap((n) => n.alerts)
    .find((a) => a.labels.alertname === alertname && a.status === status && Object.entries(labels).every(([k, v]) => a.labels[k] === v));

describe.skipIf(tools.skipReason)('alert delivery through Prometheus and Alertmanager', () => {
  let tree: TempTree;
  let exporter: Exporter;
  let pipeline: Pipeline;

  beforeAll(async () => {
    tree = await copyTree(ZOO);
    exporter = exporterFromFlags(['--path.sysfs', tree.root, '--no-collector.diag', '--collection.interval', '250ms']);
    exporter.start();
    const exporterUrl = new URL(await exporter.app.listen({ host: '127.0.0.1', port: 0 }));
    pipeline = await startPipeline('infiniband', exporterUrl.host);
  }, 90_000);

  afterAll(async () => {
    await pipeline?.stop();
    await exporter?.stop();
    await tree?.remove();
  });

  it('delivers InfiniBandPortStuckInitializing with device, port and runbook, then its resolution', async () => {
    const { notifications } = pipeline;
    const stuck = { device: 'mlx5_2' };
    const firing = await waitFor(
      'the firing notification',
      () => delivered(notifications, 'InfiniBandPortStuckInitializing', 'firing', stuck),
      60_000,
      200,
    );
    expect(firing.labels).toMatchObject({
      alertname: 'InfiniBandPortStuckInitializing',
      device: 'mlx5_2',
      port: '1',
      severity: 'critical',
      job: 'infiniband',
    });
    expect(firing.annotations.description).toContain('mlx5_2');
    expect(firing.annotations.runbook_url).toMatch(/docs\/runbooks\.md#infinibandportstuckinitializing$/);
    // No other port of the zoo is stuck in INIT (the RoCE and down ports must not fire it).
    const stuckPorts = new Set(
      notifications
        .flatMap((n) => n.alerts)
        .filter((a) => a.labels.alertname === 'InfiniBandPortStuckInitializing')
        .map((a) => `${a.labels.device}/${a.labels.port}`),
    );
    expect([...stuckPorts]).toEqual(['mlx5_2/1']);

    // An SM configures the port: ACTIVE with a LID and the SM's LID.
    const port = path.join(tree.root, 'class/infiniband/mlx5_2/ports/1');
    await writeFile(path.join(port, 'lid'), '0x2a\n');
    await writeFile(path.join(port, 'sm_lid'), '0x1\n');
    await writeFile(path.join(port, 'state'), '4: ACTIVE\n');
    const resolved = await waitFor(
      'the resolved notification',
      () => delivered(notifications, 'InfiniBandPortStuckInitializing', 'resolved', stuck),
      60_000,
      200,
    );
    expect(resolved.labels).toMatchObject({ device: 'mlx5_2', port: '1' });
  }, 150_000);
});

// The simulated fat tree of test/fixtures/ibsim-topologies/fat-tree.net with one opensm (on H11, so the
// subnet has no standby) and the exporter in fabric mode on H22, scraped as the shipped
// configuration's job infiniband-fabric. Leaf 1 has a name in the node-name-map; host 12 (on
// leaf 1's port 2) is named by its NodeDescription only.
describe.skipIf(tools.skipReason ?? fabricTools.skipReason)('fabric alert delivery on a simulated fat tree', () => {
  const stops: (() => Promise<void>)[] = [];
  let lab: Lab;
  let pipeline: Pipeline;
  const pulled = { node_guid: LEAF1, port: '2' };

  beforeAll(async () => {
    lab = await Lab.start('fat-tree.net');
    stops.push(() => lab.stop());
    await lab.startSm('sm', 'H11', 5);
    await lab.waitSmState('sm', 'MASTER');
    await lab.waitActive('H22');
    const names = path.join(lab.dir, 'node-name-map');
    await writeFile(names, `${LEAF1} "leaf01"\n`);
    const exporter = exporterFromFlags([
      ...(await lab.fabricExporterFlags('H22')),
      '--fabric.node-name-map',
      names,
      // A ports and SA cycle every second; discovery runs anyway when a scan sees a cable change.
      '--fabric.interval',
      '1s',
      '--fabric.discovery-interval',
      '30s',
      // opensm and at most 4 tools stay within ibsim's 10 clients.
      '--fabric.max-concurrent',
      '4',
      '--diag.timeout',
      '5s',
    ]);
    stops.push(() => exporter.stop());
    exporter.start();
    const exporterUrl = new URL(await exporter.app.listen({ host: '127.0.0.1', port: 0 }));
    pipeline = await startPipeline('infiniband-fabric', exporterUrl.host);
    stops.push(() => pipeline.stop());
  }, 90_000);

  afterAll(async () => {
    for (const step of stops.splice(0).reverse()) await step();
  });

  it('delivers InfiniBandFabricPortDown naming the switch, the port and what it was cabled to when the cable is pulled, then its resolution', async ({
    annotate,
  }) => {
    const { notifications } = pipeline;
    // The rule needs the port to have been LinkUp before, within its look-back.
    await waitFor(
      'Prometheus to scrape leaf 1 port 2 LinkUp',
      async () =>
        (await pipeline.query(`infiniband_fabric_port_physical_state_id{node_guid="${LEAF1}",port="2"} == 5`)).length > 0 || undefined,
      60_000,
      200,
    );

    const pulledAt = Date.now();
    await lab.command('Unlink "H12"[1]');
    const firing = await waitFor(
      'the firing notification',
      () => delivered(notifications, 'InfiniBandFabricPortDown', 'firing', pulled),
      60_000,
      100,
    );
    const firingAfter = Date.now() - pulledAt;
    // One alert per switch port, whatever instance scrapes it: no instance label.
    expect(firing.labels).toEqual({ alertname: 'InfiniBandFabricPortDown', node_guid: LEAF1, port: '2', severity: 'critical' });
    expect(firing.annotations.description).toContain(`Port 2 of switch leaf01 (${LEAF1})`);
    expect(firing.annotations.description).toContain('physical state 2 (');
    expect(firing.annotations.description).toContain(`its cable went to port 1 of node12 HCA-1 (${HOST12})`);
    expect(firing.annotations.runbook_url).toMatch(/docs\/runbooks\.md#infinibandfabricportdown$/);
    // The pager heard of this port and of nothing else: not the empty ports that never had a cable.
    const pages = notifications.filter((n) => n.receiver === 'pager').flatMap((n) => n.alerts);
    expect(new Set(pages.map((a) => `${a.labels.alertname} ${a.labels.node_guid}/${a.labels.port}`))).toEqual(
      new Set([`InfiniBandFabricPortDown ${LEAF1}/2`]),
    );

    const relinkedAt = Date.now();
    await lab.command('ReLink "H12"[1]');
    const resolved = await waitFor(
      'the resolved notification',
      () => delivered(notifications, 'InfiniBandFabricPortDown', 'resolved', pulled),
      60_000,
      100,
    );
    const resolvedAfter = Date.now() - relinkedAt;
    expect(resolved.labels).toMatchObject(pulled);
    await annotate(`Unlink to firing notification ${firingAfter} ms; ReLink to resolved notification ${resolvedAfter} ms`);
  }, 150_000);

  it('delivers InfiniBandSubnetManagerNotRedundant naming the lone subnet manager, as the exporter labels its state', async () => {
    const lone = await waitFor(
      'the NotRedundant notification',
      () => delivered(pipeline.notifications, 'InfiniBandSubnetManagerNotRedundant', 'firing', {}),
      60_000,
      100,
    );
    // The SM runs on host 11's port, GUID 0x0002c90300a10011.
    expect(lone.labels).toEqual({ alertname: 'InfiniBandSubnetManagerNotRedundant', sm_guid: '0x0002c90300a10011', severity: 'warning' });
    expect(lone.annotations.description).toContain('has 1 subnet manager(s)');
    expect(pipeline.notifications.find((n) => n.alerts.includes(lone))?.receiver).toBe('ticket');
  }, 90_000);
});
