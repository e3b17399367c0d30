// The exporter's own process_* / nodejs_* metrics: read when a scrape asks and at most once per
// second, with nothing running between scrapes.
import { Gauge, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { TimedPart } from '../../../src/metrics/exposition-parts.js';
import { closeSync, openSync, readdirSync } from 'node:fs';
import { openFileDescriptors, processRegistry } from '../../../src/metrics/process.js';
import { OWN_METRICS_MAX_AGE_MS } from '../../../src/commands/serve/app.js';

const timers = (): number => process.getActiveResourcesInfo().filter((resource) => resource === 'Timeout').length;

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
    const part = new TimedPart(
      () => registry.metrics(),
      OWN_METRICS_MAX_AGE_MS,
      () => now,
    );
    const text = async (): Promise<string> => (await part.current()).plain.toString();

    const texts = await Promise.all(Array.from({ length: 20 }, text));
    expect(new Set(texts)).toEqual(new Set([expect.stringContaining('bench_readings 1\n')]));
    now += OWN_METRICS_MAX_AGE_MS - 1;
    expect(await text()).toContain('bench_readings 1\n');
    now += 1;
    expect(await text()).toContain('bench_readings 2\n');
    expect(readings).toBe(2);

    now += OWN_METRICS_MAX_AGE_MS;
    failNext = true;
    await expect(part.current()).rejects.toThrow(/proc/);
    // The next scrape reads again instead of serving the failure for the rest of the second.
    expect(await text()).toContain('bench_readings 3\n');
  });

  it('start no timer and leave out the event-loop histogram, which samples every 10 ms', async () => {
    const before = timers();
    const registry = processRegistry();
    const text = await registry.metrics();
    expect(timers()).toBe(before);
    for (const name of [
      'process_cpu_user_seconds_total',
      'process_cpu_system_seconds_total',
      'process_cpu_seconds_total',
      'process_resident_memory_bytes',
      'process_open_fds',
      'process_start_time_seconds',
      'nodejs_heap_size_used_bytes',
      'nodejs_heap_space_size_used_bytes',
      'nodejs_gc_duration_seconds',
      'nodejs_version_info',
      'nodejs_eventloop_lag_seconds',
    ]) {
      expect(text, name).toContain(`# TYPE ${name} `);
    }
    expect(text).not.toMatch(/nodejs_eventloop_lag_(min|max|mean|stddev|p50|p90|p99)_seconds/);
    expect(text).not.toMatch(/nodejs_active_(handles|requests|resources)_total/);
    const cpu = Number(/^process_cpu_seconds_total (\S+)$/m.exec(text)?.[1]);
    const usage = process.cpuUsage();
    expect(cpu).toBeGreaterThan(0);
    expect(cpu).toBeLessThanOrEqual((usage.user + usage.system) / 1e6);
    expect(Number(/^nodejs_eventloop_lag_seconds (\S+)$/m.exec(text)?.[1])).toBeGreaterThanOrEqual(0);
  });

  it('count open file descriptors as prom-client did (the listing of /proc/self/fd less its own)', async () => {
    const opened = Array.from({ length: 50 }, () => openSync(new URL(import.meta.url), 'r'));
    try {
      const listed = readdirSync('/proc/self/fd').length - 1;
      expect(openFileDescriptors()).toBe(listed);
      expect(listed).toBeGreaterThanOrEqual(50);
      const text = await processRegistry().metrics();
      expect(Number(/^process_open_fds (\S+)$/m.exec(text)?.[1])).toBe(listed);
    } finally {
      for (const fd of opened) closeSync(fd);
    }
  });
});
