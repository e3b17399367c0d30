// `promtool check metrics` on the real output, process metrics included (system-dependent).
import { execFileSync, spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { requireSystemTools } from '../support/system.js';
import { exporterFromFlags } from '../support/exporter.js';
import { DGX, ZOO, ZOO_CONFIG } from '../support/trees.js';

const tools = requireSystemTools('promtool check metrics', { promtool: 'prometheus' });

// The contract names these two; promtool's lint rejects any name containing "_counter_"
// ("metric name should not include type 'counter'"). Nothing else may be reported.
const CONTRACT_FINDINGS = [
  "infiniband_port_counter_saturated metric name should not include type 'counter'",
  "infiniband_port_hw_counter_total metric name should not include type 'counter'",
];

async function scrape(flags: string[]): Promise<string> {
  const exporter = exporterFromFlags(flags);
  try {
    await exporter.collectOnce();
    return (await exporter.app.inject({ url: '/metrics' })).body;
  } finally {
    await exporter.stop();
  }
}

describe.skipIf(tools.skipReason)('promtool check metrics', () => {
  it.each([
    ['zoo', ['--path.sysfs', ZOO, '--config.file', ZOO_CONFIG]],
    ['dgx', ['--path.sysfs', DGX, '--no-collector.diag']],
    ['no InfiniBand', ['--path.sysfs', '/nonexistent', '--no-collector.diag']],
  ])('reports only the contract-mandated names on the %s host', async (_name, flags) => {
    const text = await scrape(flags);
    expect(text).toContain('process_cpu_user_seconds_total');
    const result = spawnSync(tools.paths.promtool!, ['check', 'metrics'], { input: text, encoding: 'utf8' });
    const findings = `${result.stdout}${result.stderr}`.split('\n').filter(Boolean);
    const hasCounterMetrics = text.includes('infiniband_port_counter_saturated{');
    expect(findings.sort()).toEqual(hasCounterMetrics ? CONTRACT_FINDINGS : []);
  });

  it('promtool is the real thing', () => {
    expect(execFileSync(tools.paths.promtool!, ['--version'], { encoding: 'utf8' })).toMatch(/promtool/);
  });
});
