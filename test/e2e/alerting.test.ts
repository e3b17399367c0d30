// The on-call path, end to end: the exporter serves a host with a port stuck INIT; a real
// Prometheus scrapes it with the shipped rules; a real Alertmanager routes the alert to a webhook
// in this test; the port is healed and the resolved notification arrives.
//
// Both shipped configurations are used, with documented transformations so the test takes
// seconds: in rules/infiniband-alerts.yml every `for:` becomes 1s; in
// deploy/alertmanager/alertmanager.yml every webhook URL points at this test's receiver and the
// group_wait/group_interval of every route become 1s. Routing, grouping and inhibition stay as
// shipped.
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import type { Exporter } from '../../src/exporter.js';
import { exporterFromFlags } from '../support/exporter.js';
import { freePort, startService, waitFor, type Service } from '../support/processes.js';
import { requireSystemTools } from '../support/system.js';
import { copyTree, PROJECT_ROOT, ZOO, type TempTree } from '../support/trees.js';

const tools = requireSystemTools('alerting end-to-end', { prometheus: 'prometheus', 'prometheus-alertmanager': 'prometheus-alertmanager' });

interface Notification {
  status: 'firing' | 'resolved';
  alerts: { status: string; labels: Record<string, string>; annotations: Record<string, string> }[];
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

describe.skipIf(tools.skipReason)('alert delivery through Prometheus and Alertmanager', () => {
  let dir: string;
  let tree: TempTree;
  let exporter: Exporter;
  let webhook: Server;
  const services: Service[] = [];
  const notifications: Notification[] = [];
  let prometheus: Service;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'ibx-e2e-'));
    tree = await copyTree(ZOO);
    exporter = exporterFromFlags(['--path.sysfs', tree.root, '--no-collector.diag', '--collection.interval', '250ms']);
    exporter.start();
    const exporterUrl = new URL(await exporter.app.listen({ host: '127.0.0.1', port: 0 }));

    webhook = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () => {
        notifications.push(JSON.parse(body) as Notification);
        response.end('ok');
      });
    });
    await new Promise<void>((resolve) => webhook.listen(0, '127.0.0.1', resolve));
    const webhookPort = (webhook.address() as { port: number }).port;

    const alertmanagerPort = await freePort();
    const shipped = readFileSync(path.join(PROJECT_ROOT, 'deploy/alertmanager/alertmanager.yml'), 'utf8');
    await writeFile(path.join(dir, 'alertmanager.yml'), alertmanagerForTest(shipped, `http://127.0.0.1:${webhookPort}/`));
    services.push(await startService('alertmanager', tools.paths['prometheus-alertmanager']!, [
      `--config.file=${path.join(dir, 'alertmanager.yml')}`,
      `--storage.path=${path.join(dir, 'alertmanager')}`,
      `--web.listen-address=127.0.0.1:${alertmanagerPort}`,
      '--cluster.listen-address=',
    ], `http://127.0.0.1:${alertmanagerPort}`, '/-/ready'));

    await writeFile(path.join(dir, 'rules.yml'), shortenPendingPeriods(readFileSync(path.join(PROJECT_ROOT, 'rules/infiniband-alerts.yml'), 'utf8')));
    const prometheusPort = await freePort();
    await writeFile(path.join(dir, 'prometheus.yml'), stringify({
      global: { scrape_interval: '1s', evaluation_interval: '1s' },
      rule_files: [path.join(dir, 'rules.yml')],
      alerting: { alertmanagers: [{ static_configs: [{ targets: [`127.0.0.1:${alertmanagerPort}`] }] }] },
      scrape_configs: [{ job_name: 'infiniband', static_configs: [{ targets: [exporterUrl.host] }] }],
    }));
    prometheus = await startService('prometheus', tools.paths.prometheus!, [
      `--config.file=${path.join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${path.join(dir, 'prometheus')}`,
      `--web.listen-address=127.0.0.1:${prometheusPort}`,
    ], `http://127.0.0.1:${prometheusPort}`, '/-/ready');
    services.push(prometheus);
  }, 90_000);

  afterAll(async () => {
    for (const service of services.reverse()) await service.stop();
    webhook?.close();
    await exporter?.stop();
    await tree?.remove();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const stuck = (n: Notification, status: string) =>
    n.alerts.find((a) => a.labels.alertname === 'InfiniBandPortStuckInitializing' && a.labels.device === 'mlx5_2' && a.status === status);

  it('delivers InfiniBandPortStuckInitializing with device, port and runbook, then its resolution', async () => {
    const firing = await waitFor('the firing notification', () => notifications.map((n) => stuck(n, 'firing')).find(Boolean), 60_000, 200);
    expect(firing.labels).toMatchObject({ alertname: 'InfiniBandPortStuckInitializing', device: 'mlx5_2', port: '1', severity: 'critical', job: 'infiniband' });
    expect(firing.annotations.description).toContain('mlx5_2');
    expect(firing.annotations.runbook_url).toMatch(/docs\/runbooks\.md#infinibandportstuckinitializing$/);
    // No other port of the zoo is stuck in INIT (the RoCE and down ports must not fire it).
    const stuckPorts = new Set(notifications.flatMap((n) => n.alerts).filter((a) => a.labels.alertname === 'InfiniBandPortStuckInitializing').map((a) => `${a.labels.device}/${a.labels.port}`));
    expect([...stuckPorts]).toEqual(['mlx5_2/1']);

    // An SM configures the port: ACTIVE with a LID and the SM's LID.
    const port = path.join(tree.root, 'class/infiniband/mlx5_2/ports/1');
    await writeFile(path.join(port, 'lid'), '0x2a\n');
    await writeFile(path.join(port, 'sm_lid'), '0x1\n');
    await writeFile(path.join(port, 'state'), '4: ACTIVE\n');
    const resolved = await waitFor('the resolved notification', () => notifications.map((n) => stuck(n, 'resolved')).find(Boolean), 60_000, 200);
    expect(resolved.labels).toMatchObject({ device: 'mlx5_2', port: '1' });
  }, 150_000);
});
