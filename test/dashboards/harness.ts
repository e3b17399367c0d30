// A real Prometheus scraping real exporters (in-process, on fixture trees) and a synthetic host,
// all on 127.0.0.1, in temporary directories, stopped by PID in teardown; with the shipped rules
// loaded, and an hour of history written into its storage before it starts where a rule needs one.
import { execFile } from 'node:child_process';
import { createServer as createHttpServer, type Server } from 'node:http';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { MODULE } from '../../src/collectors/host/module.js';
import { demoRunners } from '../../src/commands/demo.js';
import { Exporter } from '../../src/commands/serve/exporter.js';
import { createLogger } from '../../src/log/logger.js';
import { parseServeCommandLine as parseCommandLine } from '../../src/commands/serve/command-line.js';
import type { CommandRunner } from '../../src/sources/command-runner.js';
import type { DiagCommand } from '../../src/sources/diag/local-ports.js';
import { freePort, startService, type Service } from '../../synthetic/processes.js';
import { PROJECT_ROOT } from '../support/trees.js';

export interface RunningExporter {
  address: string;
  stop(): Promise<void>;
}

/**
 * The exporter in this process on a fixture tree, on a random port, collecting every second; with
 * a diag runner, the diag collector runs too, every second, through that runner. With `modules`,
 * the module collector runs the tool its flags name (--mstlink.path), once before the first scrape.
 */
export async function startExporter(
  args: string[],
  diagRunner?: CommandRunner<DiagCommand>,
  options: { modules?: boolean } = {},
): Promise<RunningExporter> {
  const diag = diagRunner ? ['--diag.interval=1s', '--diag.timeout=1s'] : ['--no-collector.diag'];
  const parsed = parseCommandLine([...args, ...diag, '--collection.interval=1s', '--web.listen-address=127.0.0.1:0']);
  if (parsed.action !== 'run') throw new Error(`unexpected command line action ${parsed.action}`);
  const quiet = new Writable({ write: (_chunk, _encoding, callback) => callback() });
  const exporter = new Exporter({
    settings: parsed.settings,
    logger: createLogger('error', 'json', quiet),
    runners: { ...(!options.modules && { module: 'not-installed' }), diag: diagRunner },
  });
  await exporter.collectOnce();
  if (diagRunner) await exporter.collectDiagOnce();
  if (options.modules) await exporter.collectors.runCycle(MODULE.schedule.cycle);
  exporter.start();
  const address = await exporter.app.listen({ host: '127.0.0.1', port: 0 });
  return { address: new URL(address).host, stop: () => exporter.stop() };
}

/**
 * The fabric demo (--demo=fabric) in this process, on a random port, its cycles every second, and
 * a real Prometheus scraping it as `instance="demo"` with the shipped fabric rules.
 */
export async function startDemoFabric(
  prometheusPath: string,
  flags: readonly string[] = [],
): Promise<{ exporter: Exporter; prometheus: RunningPrometheus }> {
  const parsed = parseCommandLine([
    '--demo=fabric',
    '--fabric.interval=1s',
    '--collection.interval=1s',
    '--web.listen-address=127.0.0.1:0',
    ...flags,
  ]);
  if (parsed.action !== 'run') throw new Error(`unexpected command line action ${parsed.action}`);
  const quiet = new Writable({ write: (_chunk, _encoding, callback) => callback() });
  const exporter = new Exporter({
    settings: parsed.settings,
    logger: createLogger('error', 'json', quiet),
    runners: demoRunners(parsed.settings),
  });
  await exporter.collectOnce();
  await exporter.collectFabricOnce();
  exporter.start();
  const address = new URL(await exporter.app.listen({ host: '127.0.0.1', port: 0 })).host;
  const prometheus = await startPrometheus(
    prometheusPath,
    { demo: address },
    { ruleFiles: [path.join(PROJECT_ROOT, 'rules/infiniband-fabric-alerts.yml')] },
  );
  return { exporter, prometheus };
}

export interface RunningServer {
  address: string;
  requests(): number;
  stop(): Promise<void>;
}

/** A tiny exposition endpoint whose body is computed per scrape (scrape number from 1). */
export async function startStaticTarget(body: (scrape: number) => string): Promise<RunningServer> {
  let count = 0;
  const server: Server = createHttpServer((request, response) => {
    if (request.url !== '/metrics') {
      response.writeHead(404).end();
      return;
    }
    count += 1;
    response.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(body(count));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    address: `127.0.0.1:${port}`,
    requests: () => count,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface Sample {
  metric: Record<string, string>;
  value?: [number, string];
  values?: [number, string][];
}

export interface RunningPrometheus {
  url: string;
  /** Instant query at `time` (default: now). */
  query(expr: string, time?: number): Promise<Sample[]>;
  queryRange(expr: string, start: number, end: number, step: number): Promise<Sample[]>;
  labelValues(label: string, match: string): Promise<string[]>;
  stop(): Promise<void>;
}

/** One series of a history: its name, labels and its value `secondsAgo` before the history's end. */
export interface HistorySeries {
  name: string;
  labels: Record<string, string>;
  value(secondsAgo: number): number;
}

/**
 * The OpenMetrics text of `series` sampled every `stepSeconds` for `minutes` up to `endSeconds`
 * (one family per name, each series's samples together and in time order, as promtool's backfill
 * reads them).
 */
export function openMetricsHistory(series: readonly HistorySeries[], endSeconds: number, minutes: number, stepSeconds: number): string {
  const lines: string[] = [];
  for (const name of new Set(series.map((s) => s.name))) {
    lines.push(`# TYPE ${name} unknown`);
    for (const one of series.filter((s) => s.name === name)) {
      const labels = Object.entries(one.labels)
        .map(([key, value]) => `${key}="${value}"`)
        .join(',');
      for (let ago = minutes * 60; ago >= 0; ago -= stepSeconds) lines.push(`${name}{${labels}} ${one.value(ago)} ${endSeconds - ago}`);
    }
  }
  return `${lines.join('\n')}\n# EOF\n`;
}

export interface PrometheusOptions {
  /** Rule files to evaluate (every second). */
  ruleFiles?: string[];
  /** History (OpenMetrics text, see openMetricsHistory) written into the storage with promtool before Prometheus starts. */
  history?: { promtool: string; openMetrics: string };
}

/** Prometheus 2.x scraping `targets` (instance label → host:port) as job `infiniband` every second. */
export async function startPrometheus(
  binary: string,
  targets: Record<string, string>,
  options: PrometheusOptions = {},
): Promise<RunningPrometheus> {
  const dir = await mkdtemp(path.join(tmpdir(), 'ibx-dash-prom-'));
  if (options.history) {
    // Blocks of the past; Prometheus opens them with its storage and appends what it scrapes after them.
    const input = path.join(dir, 'history.om');
    await writeFile(input, options.history.openMetrics);
    try {
      await promisify(execFile)(options.history.promtool, ['tsdb', 'create-blocks-from', 'openmetrics', input, path.join(dir, 'data')]);
    } catch (error) {
      await rm(dir, { recursive: true, force: true });
      throw error;
    }
  }
  const config = {
    global: { scrape_interval: '1s', scrape_timeout: '1s', evaluation_interval: '1s' },
    ...(options.ruleFiles && { rule_files: options.ruleFiles }),
    scrape_configs: [
      {
        job_name: 'infiniband',
        static_configs: Object.entries(targets).map(([instance, address]) => ({ targets: [address], labels: { instance } })),
      },
    ],
  };
  await writeFile(path.join(dir, 'prometheus.yml'), stringify(config));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  let service: Service;
  try {
    service = await startService(
      'prometheus',
      binary,
      [
        `--config.file=${path.join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${path.join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--log.level=warn',
      ],
      url,
      '/-/ready',
    );
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  const stop = async () => {
    await service.stop();
    await rm(dir, { recursive: true, force: true });
  };

  const api = async (pathAndQuery: string): Promise<unknown> => {
    const response = await fetch(`${url}${pathAndQuery}`);
    const body = (await response.json()) as { status: string; data: unknown; error?: string };
    if (body.status !== 'success') throw new Error(`Prometheus ${pathAndQuery}: ${body.error ?? response.status}`);
    return body.data;
  };

  return {
    url,
    query: async (expr, time) => {
      const params = new URLSearchParams({ query: expr });
      if (time !== undefined) params.set('time', String(time));
      return ((await api(`/api/v1/query?${params}`)) as { result: Sample[] }).result;
    },
    queryRange: async (expr, start, end, step) => {
      const params = new URLSearchParams({ query: expr, start: String(start), end: String(end), step: String(step) });
      return ((await api(`/api/v1/query_range?${params}`)) as { result: Sample[] }).result;
    },
    labelValues: async (label, match) => {
      const params = new URLSearchParams({ 'match[]': match });
      return (await api(`/api/v1/label/${label}/values?${params}`)) as string[];
    },
    stop,
  };
}
