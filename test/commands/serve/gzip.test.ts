// /metrics gzip-compressed for clients that accept it: each part of the exposition is one gzip
// member, compressed once; their concatenation is one gzip stream that zlib, curl and Prometheus
// (Go's reader) read whole, to the same text as the plain response.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import type { Exporter } from '../../../src/commands/serve/exporter.js';
import pino from 'pino';
import { EncodedPart, MAX_JOINED_BYTES, RenderedPart } from '../../../src/metrics/exposition-parts.js';
import { acceptsGzip, buildApp } from '../../../src/commands/serve/app.js';
import { startPrometheus } from '../../dashboards/harness.js';
import { exporterFromFlags } from '../../support/exporter.js';
import { waitFor } from '../../../synthetic/processes.js';
import { requireSystemTools } from '../../support/system.js';
import { ZOO } from '../../support/trees.js';

// Asynchronously: the server answering curl runs in this process.
const run = async (file: string, args: string[]): Promise<string> => (await promisify(execFile)(file, args, { encoding: 'utf8' })).stdout;
const curl = requireSystemTools('gzip with curl', { curl: 'curl' });
const prometheus = requireSystemTools('gzip scraped by Prometheus', { prometheus: 'prometheus' });

const exporters: Exporter[] = [];
afterEach(async () => {
  for (const exporter of exporters.splice(0)) await exporter.stop();
});

function zoo(extra: string[] = []): Exporter {
  const exporter = exporterFromFlags(['--path.sysfs', ZOO, '--no-collector.diag', ...extra]);
  exporters.push(exporter);
  return exporter;
}

describe('Accept-Encoding', () => {
  it.each([
    ['gzip', true],
    ['GZIP', true],
    ['x-gzip', true],
    ['gzip, deflate, br', true],
    ['br;q=1.0, gzip;q=0.5', true],
    ['*', true],
    ['gzip;q=0', false],
    ['*;q=0', false],
    ['*, gzip;q=0', false],
    ['deflate, br', false],
    ['identity', false],
    ['', false],
    [undefined, false],
  ] as const)('%j accepts gzip: %s', (header, expected) => {
    expect(acceptsGzip(header)).toBe(expected);
  });
});

describe('/metrics with gzip', () => {
  it('decompresses to the plain text, snapshot and own metrics alike, and says Vary: Accept-Encoding', async () => {
    const exporter = zoo();
    await exporter.collectOnce();
    const plain = await exporter.app.inject({ url: '/metrics' });
    const gzipped = await exporter.app.inject({ url: '/metrics', headers: { 'accept-encoding': 'gzip' } });
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.headers.vary).toBe('Accept-Encoding');
    expect(gzipped.headers['content-encoding']).toBe('gzip');
    expect(gzipped.headers.vary).toBe('Accept-Encoding');
    expect(gzipped.headers['content-type']).toBe(plain.headers['content-type']);
    expect(gzipped.rawPayload.length).toBeLessThan(plain.rawPayload.length / 4);
    // Two members (snapshot, own metrics) read as one stream. The own metrics are read once a
    // second: both responses came within it, so they hold the same text.
    expect(gunzipSync(gzipped.rawPayload).toString()).toBe(plain.body);
    expect(plain.body).toContain('infiniband_port_state_id{device="mlx5_2",port="1"} 2');
    expect(plain.body).toContain('process_cpu_user_seconds_total');
  });

  it('compresses a snapshot once, however many scrapes ask for it', async () => {
    const exporter = zoo(['--web.disable-exporter-metrics', '--collection.interval', '1h']);
    await exporter.collectOnce();
    const bodies = await Promise.all(
      Array.from({ length: 10 }, () => exporter.app.inject({ url: '/metrics', headers: { 'accept-encoding': 'gzip' } })),
    );
    expect(new Set(bodies.map((response) => response.rawPayload.toString('base64'))).size).toBe(1);
  });

  it.skipIf(curl.skipReason)('curl --compressed gets the same text as a plain curl', async () => {
    const exporter = zoo(['--web.disable-exporter-metrics']);
    await exporter.collectOnce();
    const url = `${await exporter.app.listen({ host: '127.0.0.1', port: 0 })}/metrics`;
    const headers = await run(curl.paths.curl!, ['-s', '-D', '-', '-o', '/dev/null', '--compressed', url]);
    expect(headers).toMatch(/^content-encoding: gzip\r$/im);
    const compressed = await run(curl.paths.curl!, ['-s', '--compressed', url]);
    const plain = await run(curl.paths.curl!, ['-s', url]);
    expect(compressed).toBe(plain);
    expect(plain).toContain('infiniband_port_state_id{');
  });

  it.skipIf(prometheus.skipReason)(
    'a real Prometheus scrapes it compressed and stores what it says',
    async () => {
      const exporter = zoo();
      await exporter.collectOnce();
      const encodings: string[] = [];
      exporter.app.addHook('onSend', async (request, reply, payload) => {
        if (request.url === '/metrics' && String(request.headers['user-agent']).startsWith('Prometheus/'))
          encodings.push(`${String(request.headers['accept-encoding'])} -> ${String(reply.getHeader('content-encoding'))}`);
        return payload;
      });
      const address = new URL(await exporter.app.listen({ host: '127.0.0.1', port: 0 })).host;
      const server = await startPrometheus(prometheus.paths.prometheus!, { zoo01: address });
      try {
        const samples = await waitFor(
          'Prometheus to store a scrape',
          async () => {
            const result = await server.query('infiniband_port_state_id{device="mlx5_2",port="1"}');
            return result.length > 0 ? result : undefined;
          },
          20_000,
          200,
        );
        expect(samples[0]!.value![1]).toBe('2');
        const own = await server.query('process_resident_memory_bytes');
        expect(Number(own[0]!.value![1])).toBeGreaterThan(0);
        expect((await server.query('scrape_samples_scraped'))[0]!.value![1]).toBe(
          String(plainSeries(await exporter.app.inject({ url: '/metrics' }).then((r) => r.body))),
        );
        expect(encodings.length).toBeGreaterThan(0);
        for (const encoding of encodings) expect(encoding).toMatch(/gzip.* -> gzip$/);
      } finally {
        await server.stop();
      }
    },
    40_000,
  );
});

/** The number of sample lines of an exposition. */
function plainSeries(text: string): number {
  return text.split('\n').filter((line) => line !== '' && !line.startsWith('#')).length;
}

describe('a large exposition (fabric mode)', () => {
  // Parts of 0.7 MB each: joined they pass MAX_JOINED_BYTES and are sent part by part.
  const line = (part: number, i: number): string => `infiniband_fabric_port_state_id{node_guid="0x${part}",port="${i}"} 4\n`;
  const parts = [0, 1, 2].map(
    (part) =>
      new EncodedPart(`# HELP p${part} Part.\n# TYPE p${part} gauge\n${Array.from({ length: 12_000 }, (_, i) => line(part, i)).join('')}`),
  );

  function app() {
    return buildApp({
      source: { parts: async () => parts, takenAt: () => Date.now() },
      telemetryPath: '/metrics',
      maxSnapshotAgeMs: 60_000,
      version: 'test',
      logger: pino({ level: 'silent' }),
    });
  }

  it('is sent whole, with its length, plain and gzip-compressed, over a real connection', async () => {
    const server = app();
    try {
      // Parts are joined with the blank line that separates families.
      const total = parts.reduce((sum, part) => sum + part.plain.length, 0) + parts.length - 1;
      expect(total).toBeGreaterThan(MAX_JOINED_BYTES);
      const url = `${await server.listen({ host: '127.0.0.1', port: 0 })}/metrics`;
      const plain = await fetch(url, { headers: { 'accept-encoding': 'identity' } });
      expect(plain.headers.get('content-length')).toBe(String(total));
      const whole = Buffer.concat(parts.flatMap((part, i) => (i === 0 ? [part.plain] : [Buffer.from('\n'), part.plain])));
      // Buffer.equals: a deep toEqual over megabytes takes seconds.
      expect(Buffer.from(await plain.arrayBuffer()).equals(whole)).toBe(true);
      const head = await server.inject({ url: '/metrics', method: 'HEAD' });
      expect(head.statusCode).toBe(200);
      const compressed = await server.inject({ url: '/metrics', headers: { 'accept-encoding': 'gzip' } });
      expect(compressed.headers['content-encoding']).toBe('gzip');
      expect(gunzipSync(compressed.rawPayload).equals(whole)).toBe(true);
    } finally {
      await server.close();
    }
  });

  it('is inflated from the compressed parts as the client reads it, plain, with its length', async () => {
    // Parts as a fabric's are kept: compressed only.
    const rendered = await Promise.all(
      parts.map((part) => new RenderedPart<Buffer>((text, out) => out.write(text.toString())).render(part.plain, [part])),
    );
    const whole = Buffer.concat(parts.flatMap((part, i) => (i === 0 ? [part.plain] : [Buffer.from('\n'), part.plain])));
    const server = buildApp({
      source: { parts: async () => rendered.map((part) => part!), takenAt: () => Date.now() },
      telemetryPath: '/metrics',
      maxSnapshotAgeMs: 60_000,
      version: 'test',
      logger: pino({ level: 'silent' }),
    });
    try {
      const url = `${await server.listen({ host: '127.0.0.1', port: 0 })}/metrics`;
      for (let i = 0; i < 2; i++) {
        const plain = await fetch(url, { headers: { 'accept-encoding': 'identity' } });
        expect(plain.headers.get('content-length')).toBe(String(whole.length));
        expect(Buffer.from(await plain.arrayBuffer()).equals(whole)).toBe(true);
      }
    } finally {
      await server.close();
    }
  });
});
