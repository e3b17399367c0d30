// `promtool check metrics` on the real output, process metrics included (system-dependent).
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { parseCommandLine } from '../../src/config/settings.js';
import { Exporter } from '../../src/exporter.js';
import { ReplayRunner } from '../diag/replay.js';
import { requireSystemTools } from '../support/system.js';
import { exporterFromFlags } from '../support/exporter.js';
import { DGX, SIMULATED_HOST, writeTree, ZOO, ZOO_CONFIG } from '../support/trees.js';

const tools = requireSystemTools('promtool check metrics', { promtool: 'prometheus' });

// Three contract names trip promtool's naming lint; nothing else may be reported. They are kept
// because users' queries, the rules and the dashboards depend on them (see the README).
const CONTRACT_FINDINGS: Record<string, string> = {
  'infiniband_port_counter_saturated{': "infiniband_port_counter_saturated metric name should not include type 'counter'",
  'infiniband_port_hw_counter_total{': "infiniband_port_hw_counter_total metric name should not include type 'counter'",
  'infiniband_subnet_manager_activity_count{':
    'infiniband_subnet_manager_activity_count non-histogram and non-summary metrics should not have "_count" suffix',
};

function promtoolFindings(text: string): string[] {
  const result = spawnSync(tools.paths.promtool!, ['check', 'metrics'], { input: text, encoding: 'utf8' });
  return `${result.stdout}${result.stderr}`.split('\n').filter(Boolean).sort();
}

function expectedFindings(text: string): string[] {
  return Object.entries(CONTRACT_FINDINGS)
    .filter(([sample]) => text.includes(sample))
    .map(([, finding]) => finding)
    .sort();
}

async function scrape(exporter: Exporter, withDiag = false): Promise<string> {
  try {
    await exporter.collectOnce();
    if (withDiag) await exporter.collectDiagOnce();
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
    const text = await scrape(exporterFromFlags(flags));
    expect(text).toContain('process_cpu_user_seconds_total');
    expect(promtoolFindings(text)).toEqual(expectedFindings(text));
  });

  it('reports only the contract-mandated names with the diag collector (recorded tool outputs)', async () => {
    const root = await mkdtemp(path.join(tmpdir(), 'ibx-promtool-'));
    try {
      await writeTree(root, SIMULATED_HOST);
      const command = parseCommandLine(['--path.sysfs', root, '--diag.timeout', '1s']);
      if (command.action !== 'run') throw new Error('unexpected');
      const runner = new ReplayRunner(['two-sms', 'sm-master']);
      const text = await scrape(new Exporter({ settings: command.settings, logger: pino({ level: 'silent' }), diagRunner: runner }), true);
      expect(text).toContain('infiniband_subnet_manager_info{');
      expect(text).toContain('infiniband_port_peer_symbol_errors_total{');
      expect(promtoolFindings(text)).toEqual(expectedFindings(text));
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it('promtool is the real thing', () => {
    expect(execFileSync(tools.paths.promtool!, ['--version'], { encoding: 'utf8' })).toMatch(/promtool/);
  });
});
