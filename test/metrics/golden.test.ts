// The whole /metrics of the zoo host, compared with a reviewed golden file. Regenerate with
// `npm run test:golden:update` and review the diff like code.
import { readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { exporterFromFlags } from '../support/exporter.js';
import { FIXTURES, ZOO, ZOO_CONFIG } from '../support/trees.js';

const GOLDEN = `${FIXTURES}golden/zoo.metrics`;

/** Values that differ from run to run: durations, timestamps, and the build's revision and Node version. */
export function normalise(exposition: string): string {
  return exposition
    .replace(/^(infiniband_exporter_collector_duration_seconds\{[^}]*\}) .*$/gm, '$1 <duration>')
    .replace(/^(infiniband_exporter_last_collection_timestamp_seconds\{[^}]*\}) .*$/gm, '$1 <timestamp>')
    .replace(/^infiniband_exporter_build_info\{.*\} 1$/m, 'infiniband_exporter_build_info{<build>} 1');
}

describe('golden /metrics of the zoo host', () => {
  it('matches test/fixtures/golden/zoo.metrics', async () => {
    const exporter = exporterFromFlags(['--path.sysfs', ZOO, '--config.file', ZOO_CONFIG, '--web.disable-exporter-metrics']);
    try {
      await exporter.collectOnce();
      const response = await exporter.app.inject({ url: '/metrics' });
      expect(response.statusCode).toBe(200);
      const actual = normalise(response.body);
      if (process.env.UPDATE_GOLDEN === '1') writeFileSync(GOLDEN, actual);
      expect(actual).toBe(readFileSync(GOLDEN, 'utf8'));
    } finally {
      await exporter.stop();
    }
  });
});
