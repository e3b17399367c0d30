import { request } from 'node:http';
import { describe, expect, it, vi } from 'vitest';
import { Periodic } from '../../../src/collection/periodic.js';
import { exporterFromFlags } from '../../support/exporter.js';
import { ZOO } from '../../support/trees.js';

describe('HTTP app through inject()', () => {
  it('serves the landing page, health, readiness and 404', async () => {
    let now = 1_000_000;
    const exporter = exporterFromFlags(['--path.sysfs', ZOO, '--no-collector.diag', '--collection.interval', '10s'], () => now);
    try {
      const landing = await exporter.app.inject({ url: '/' });
      expect(landing.statusCode).toBe(200);
      expect(landing.headers['content-type']).toMatch(/^text\/html/);
      expect(landing.body).toContain('<a href="/metrics">');

      expect((await exporter.app.inject({ url: '/healthz' })).statusCode).toBe(200);
      const notReady = await exporter.app.inject({ url: '/ready' });
      expect(notReady.statusCode).toBe(503);
      expect(notReady.body).toMatch(/first collection/);

      await exporter.collectOnce();
      expect((await exporter.app.inject({ url: '/ready' })).statusCode).toBe(200);
      now += 30_001; // three intervals without a new snapshot
      const stale = await exporter.app.inject({ url: '/ready' });
      expect(stale.statusCode).toBe(503);
      expect(stale.body).toMatch(/30s ago/);

      for (const url of ['/nope', '/metrics/extra', '/METRICS']) {
        const missing = await exporter.app.inject({ url });
        expect(missing.statusCode, url).toBe(404);
      }
      expect((await exporter.app.inject({ url: '/metrics', method: 'POST' })).statusCode).toBe(405);
      const head = await exporter.app.inject({ url: '/metrics', method: 'HEAD' });
      expect(head.statusCode).toBe(200);
      expect(head.body).toBe('');
    } finally {
      await exporter.stop();
    }
  });

  it("serves metrics in the text format with the exporter's own metrics unless disabled", async () => {
    const withOwn = exporterFromFlags(['--path.sysfs', ZOO, '--no-collector.diag']);
    const without = exporterFromFlags([
      '--path.sysfs',
      ZOO,
      '--no-collector.diag',
      '--web.disable-exporter-metrics',
      '--web.telemetry-path',
      '/ib',
    ]);
    try {
      await withOwn.collectOnce();
      await without.collectOnce();
      const a = await withOwn.app.inject({ url: '/metrics' });
      expect(a.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
      expect(a.body).toContain('infiniband_port_state_id{device="mlx5_2",port="1"} 2');
      expect(a.body).toContain('process_resident_memory_bytes');
      expect(a.body).toContain('nodejs_heap_size_used_bytes');
      const b = await without.app.inject({ url: '/ib' });
      expect(b.body).toContain('infiniband_port_state_id');
      expect(b.body).not.toMatch(/^(process|nodejs)_/m);
      expect((await without.app.inject({ url: '/metrics' })).statusCode).toBe(404);
    } finally {
      await withOwn.stop();
      await without.stop();
    }
  });

  it('reads the host for a scrape that comes before any collection finished', async () => {
    const exporter = exporterFromFlags(['--path.sysfs', ZOO, '--no-collector.diag']);
    try {
      const response = await exporter.app.inject({ url: '/metrics' });
      expect(response.statusCode).toBe(200);
      expect(response.body).toContain('process_cpu_user_seconds_total');
      expect(response.body).toContain('infiniband_port_state_id{device="mlx5_2",port="1"} 2');
    } finally {
      await exporter.stop();
    }
  });
});

describe('how fresh a scrape is', () => {
  const sysfsTime = (body: string): number =>
    Number(/^infiniband_exporter_last_collection_timestamp_seconds\{collector="sysfs"\} (\S+)$/m.exec(body)?.[1]);

  it('scrapes within one interval share a host reading; concurrent ones share one; a later one reads again', async () => {
    // Every look at the clock moves it on a millisecond, so that two readings never share a time.
    let now = 1_700_000_000_000;
    const exporter = exporterFromFlags(
      ['--path.sysfs', ZOO, '--no-collector.diag', '--collection.interval', '10s', '--web.disable-exporter-metrics'],
      () => (now += 1),
    );
    try {
      const first = await Promise.all(Array.from({ length: 20 }, () => exporter.app.inject({ url: '/metrics' })));
      const times = new Set(first.map((response) => sysfsTime(response.body)));
      expect(times.size).toBe(1);
      const [read] = times;
      expect(read).toBeGreaterThan(1_700_000_000);

      now += 9_000;
      expect(sysfsTime((await exporter.app.inject({ url: '/metrics' })).body)).toBe(read);
      now += 1_000;
      const again = sysfsTime((await exporter.app.inject({ url: '/metrics' })).body);
      expect(again).toBeGreaterThan(read!);
      // Never older than one interval when served.
      expect(now / 1000 - again).toBeLessThan(10);
    } finally {
      await exporter.stop();
    }
  });

  it('/ready follows the port-state samples, which run whether anyone scrapes or not', async () => {
    let now = 1_700_000_000_000;
    const exporter = exporterFromFlags(['--path.sysfs', ZOO, '--no-collector.diag', '--collection.interval', '10s'], () => now);
    try {
      await exporter.collectOnce();
      for (let step = 0; step < 6; step++) {
        now += 10_000;
        await exporter.collectors.sampleNow();
        expect((await exporter.app.inject({ url: '/ready' })).statusCode).toBe(200);
      }
      now += 30_001;
      expect((await exporter.app.inject({ url: '/ready' })).statusCode).toBe(503);
    } finally {
      await exporter.stop();
    }
  });

  it('puts the next port-state sample off after a full reading, which read the states', async () => {
    const postpone = vi.spyOn(Periodic.prototype, 'postpone');
    const exporter = exporterFromFlags(['--path.sysfs', ZOO, '--no-collector.diag', '--collection.interval', '10s']);
    try {
      await exporter.collectOnce();
      expect(postpone).toHaveBeenCalledTimes(1);
      await exporter.collectOnce();
      expect(postpone).toHaveBeenCalledTimes(2);
    } finally {
      postpone.mockRestore();
      await exporter.stop();
    }
  });
});

describe('HTTP app over a real socket', () => {
  it('answers scrapes on 127.0.0.1 while collection runs on its schedule', async () => {
    const exporter = exporterFromFlags(['--path.sysfs', ZOO, '--no-collector.diag', '--collection.interval', '200ms']);
    try {
      exporter.start();
      const address = await exporter.app.listen({ host: '127.0.0.1', port: 0 });
      const { port } = new URL(address);
      let body = '';
      for (let attempt = 0; attempt < 50 && !body.includes('infiniband_port_state_id'); attempt++) {
        body = await new Promise<string>((resolve, reject) => {
          const req = request({ host: '127.0.0.1', port, path: '/metrics' }, (res) => {
            let data = '';
            res.setEncoding('utf8');
            res.on('data', (chunk: string) => (data += chunk));
            res.on('end', () => resolve(data));
          });
          req.on('error', reject);
          req.end();
        });
        if (!body.includes('infiniband_port_state_id')) await new Promise((r) => setTimeout(r, 50));
      }
      expect(body).toContain('infiniband_port_state_id{device="mlx5_0",port="1"} 4');
    } finally {
      await exporter.stop();
    }
  });
});
