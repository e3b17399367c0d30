// The exporter's own process_* / nodejs_* metrics: one reading serves the scrapes of one second.
import pino from 'pino';
import { Gauge, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { OWN_METRICS_MAX_AGE_MS, buildApp } from '../../src/server/app.js';

describe('own metrics', () => {
  it('are read once per second however many scrapes come, and a failed reading is not kept', async () => {
    let now = 5_000_000;
    let readings = 0;
    let failNext = false;
    const registry = new Registry();
    new Gauge({
      name: 'bench_readings',
      help: 'How often the process metrics were read.',
      registers: [registry],
      collect() {
        if (failNext) {
          failNext = false;
          throw new Error('cannot read /proc/self/status');
        }
        readings += 1;
        this.set(readings);
      },
    });
    const app = buildApp({
      source: { text: () => 'snapshot 1\n', takenAt: () => now },
      telemetryPath: '/metrics',
      processRegistry: registry,
      maxSnapshotAgeMs: 30_000,
      version: 'test',
      logger: pino({ level: 'silent' }),
      now: () => now,
    });
    try {
      const bodies = await Promise.all(Array.from({ length: 20 }, () => app.inject({ url: '/metrics' }).then((r) => r.body)));
      expect(new Set(bodies)).toEqual(new Set([expect.stringContaining('bench_readings 1\n')]));
      expect(bodies[0]!.startsWith('snapshot 1\n')).toBe(true);
      now += OWN_METRICS_MAX_AGE_MS - 1;
      expect((await app.inject({ url: '/metrics' })).body).toContain('bench_readings 1\n');
      now += 1;
      expect((await app.inject({ url: '/metrics' })).body).toContain('bench_readings 2\n');
      expect(readings).toBe(2);

      now += OWN_METRICS_MAX_AGE_MS;
      failNext = true;
      const failed = await app.inject({ url: '/metrics' });
      expect(failed.statusCode).toBe(500);
      expect(failed.body).toBe('internal error\n');
      // The next scrape reads again instead of serving the failure for the rest of the second.
      expect((await app.inject({ url: '/metrics' })).body).toContain('bench_readings 3\n');
    } finally {
      await app.close();
    }
  });
});
