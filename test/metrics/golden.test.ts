// The whole /metrics of the zoo host, compared with a reviewed golden file that
// scripts/generate/golden.ts writes (`npm run generate`; review the diff like code).
import { describe, expect, it } from 'vitest';
import { ZOO_GOLDEN, zooExposition } from '../../scripts/generate/golden.js';
import { committed, stale } from '../../scripts/generate/generated-file.js';
import { exporterFromFlags } from '../support/exporter.js';
import { ZOO, ZOO_CONFIG } from '../support/trees.js';

describe('golden /metrics of the zoo host', () => {
  it(`matches ${ZOO_GOLDEN}`, async () => {
    expect(await zooExposition(), stale(ZOO_GOLDEN)).toBe(committed(ZOO_GOLDEN));
  });
});

describe('series a healthy port does not need', () => {
  async function scrape(flags: string[]): Promise<string> {
    const exporter = exporterFromFlags(['--path.sysfs', ZOO, '--config.file', ZOO_CONFIG, '--web.disable-exporter-metrics', ...flags]);
    try {
      await exporter.collectOnce();
      return (await exporter.app.inject({ url: '/metrics' })).body;
    } finally {
      await exporter.stop();
    }
  }
  const samples = (text: string, name: string): string[] => text.split('\n').filter((line) => line.startsWith(`${name}{`));

  it('pma_saturated exists only for counters at their maximum, always with value 1', async () => {
    const saturated = samples(await scrape([]), 'infiniband_port_pma_saturated');
    expect(saturated.length).toBeGreaterThan(0);
    for (const line of saturated) expect(line).toMatch(/ 1$/);
    // mlx5_4 holds the counters at their 4-, 8-, 16- and 32-bit maxima (test/fixtures/sys/README.md).
    expect(
      saturated
        .filter((line) => line.includes('device="mlx5_4"'))
        .map((line) => /counter="(\w+)"/.exec(line)![1])
        .sort(),
    ).toEqual(['link_downed', 'local_link_integrity_errors', 'symbol_errors', 'transmit_data_bytes']);
  });

  it('the one-hot state families come only with --metrics.port-state-series, one 1 per port each', async () => {
    const plain = await scrape([]);
    expect(samples(plain, 'infiniband_port_state')).toEqual([]);
    expect(samples(plain, 'infiniband_port_physical_state')).toEqual([]);
    const full = await scrape(['--metrics.port-state-series']);
    const ports = samples(full, 'infiniband_port_state_id').length;
    expect(ports).toBeGreaterThan(10);
    expect(samples(full, 'infiniband_port_state')).toHaveLength(6 * ports);
    expect(samples(full, 'infiniband_port_state').filter((line) => line.endsWith(' 1'))).toHaveLength(ports);
    const physical = samples(full, 'infiniband_port_physical_state_id').length;
    expect(samples(full, 'infiniband_port_physical_state')).toHaveLength(7 * physical);
    // The id and the one-hot series agree: INIT is 2.
    const init = samples(full, 'infiniband_port_state_id')
      .filter((line) => line.endsWith(' 2'))
      .map((line) => line.slice(line.indexOf('{'), line.indexOf('}')));
    expect(init.length).toBeGreaterThan(0);
    for (const labels of init) expect(full).toContain(`infiniband_port_state${labels},state="INIT"} 1`);
  });
});
