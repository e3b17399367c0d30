// 200 scrapers at once over real sockets while snapshots are swapped underneath them: every
// response is complete (its full length, a final newline), parses, and is the text of exactly one
// snapshot — never half of one and half of the next.
import { Agent, request } from 'node:http';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Exporter } from '../../src/commands/serve/exporter.js';
import { ServerMetrics } from '../../src/commands/serve/server-metrics.js';
import { exporterFromFlags, settingsFromFlags } from '../support/exporter.js';
import { renderExposition } from '../support/exposition.js';
import { generateTree } from '../../synthetic/generate-tree.js';
import { parseExposition } from './support.js';

const SCRAPERS = 200;
const SCRAPES_EACH = 4;
const DEVICES = 4;

let dir: string;
let root: string;
let exporter: Exporter;
let port: number;
const rendered = new Set<string>();

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'ibx-concurrent-'));
  root = path.join(dir, 'sys');
  await generateTree(root, DEVICES, 2);
  // 200 scrapers from one address: above the per-client connection limit's default (64).
  const flags = [
    '--path.sysfs',
    root,
    '--no-collector.diag',
    '--web.disable-exporter-metrics',
    '--collection.interval',
    '1h',
    '--web.max-connections-per-client',
    '256',
  ];
  exporter = exporterFromFlags(flags);
  // The same rendering the exporter does, of every snapshot it publishes, with the HTTP server's
  // own metrics (no connection refused here): the texts a scrape may serve.
  const settings = settingsFromFlags(flags);
  const server = new ServerMetrics().current()!;
  exporter.collectors.store.subscribe((snapshot) => {
    rendered.add(renderExposition(snapshot, settings, undefined, [server]));
  });
  await prepareCycle(0);
  await exporter.collectOnce();
  port = Number(new URL(await exporter.app.listen({ host: '127.0.0.1', port: 0 })).port);
}, 60_000);
afterAll(async () => {
  await exporter.stop();
  await rm(dir, { recursive: true, force: true });
});

interface Scrape {
  status: number | undefined;
  body: string;
  declaredLength: number;
  complete: boolean;
}

function scrape(agent: Agent): Promise<Scrape> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/metrics', agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const body = Buffer.concat(chunks);
        resolve({
          status: res.statusCode,
          body: body.toString('utf8'),
          declaredLength: Number(res.headers['content-length']),
          complete: res.complete && body.length === Number(res.headers['content-length']),
        });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** Cycle k: every symbol_error file holds k, and port mlx5_0/1 is DOWN on odd cycles. */
async function prepareCycle(k: number): Promise<void> {
  const writes: Promise<void>[] = [];
  for (let d = 0; d < DEVICES; d++) {
    for (const p of [1, 2])
      writes.push(writeFile(path.join(root, `class/infiniband/mlx5_${d}/ports/${p}/counters/symbol_error`), `${k}\n`));
  }
  writes.push(writeFile(path.join(root, 'class/infiniband/mlx5_0/ports/1/state'), k % 2 === 1 ? '1: DOWN\n' : '4: ACTIVE\n'));
  await Promise.all(writes);
}

describe('200 concurrent scrapers across snapshot swaps', () => {
  it('every response is whole and from one snapshot', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: SCRAPERS });
    let scrapersDone = false;
    let cycles = 0;
    const swapping = (async () => {
      while (!scrapersDone) {
        await prepareCycle(cycles + 1);
        await exporter.collectOnce();
        cycles += 1;
      }
    })();
    const results = await Promise.all(
      Array.from({ length: SCRAPERS }, async () => {
        const mine: Scrape[] = [];
        // At least SCRAPES_EACH each, and on until three swaps are done: the scrapes straddle them.
        for (let i = 0; i < SCRAPES_EACH || cycles < 3; i++) mine.push(await scrape(agent));
        return mine;
      }),
    ).finally(() => {
      scrapersDone = true;
    });
    await swapping;
    agent.destroy();

    const responses = results.flat();
    expect(responses.length).toBeGreaterThanOrEqual(SCRAPERS * SCRAPES_EACH);
    const seen = new Set<string>();
    for (const response of responses) {
      expect(response.status).toBe(200);
      expect(response.complete).toBe(true);
      expect(response.body.endsWith('\n')).toBe(true);
      const series = parseExposition(response.body);
      // One cycle's values throughout: all symbol_error counters equal k, and the state of
      // mlx5_0/1 and its change count agree with that k.
      const symbolErrors = new Set(
        [...series].filter(([key]) => key.startsWith('infiniband_port_symbol_errors_total')).map(([, value]) => value),
      );
      expect(symbolErrors.size).toBe(1);
      const k = [...symbolErrors][0]!;
      expect(series.get('infiniband_port_state_id{device="mlx5_0",port="1"}')).toBe(k % 2 === 1 ? 1 : 4);
      expect(series.get('infiniband_port_state_changes_total{device="mlx5_0",port="1"}')).toBe(k);
      expect(rendered.has(response.body)).toBe(true);
      seen.add(response.body);
    }
    // The scrapes straddled swaps: more than one snapshot was served.
    expect(seen.size).toBeGreaterThan(1);
  });
});
