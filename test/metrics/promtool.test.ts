// `promtool check metrics` on the real output, process metrics included (system-dependent).
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { parseServeCommandLine as parseCommandLine } from '../../src/commands/serve/command-line.js';
import { Exporter } from '../../src/commands/serve/exporter.js';
import { ReplayRunner } from '../support/replay.js';
import { requireSystemTools } from '../support/system.js';
import { exporterFromFlags } from '../support/exporter.js';
import { copyTree, DGX, FIXTURES, NO_INFINIBAND, SIMULATED_HOST, writeTree, ZOO, ZOO_CONFIG } from '../support/trees.js';
import type { DiagCommand } from '../../src/sources/diag/local-ports.js';
import type { FabricCommand } from '../../src/sources/fabric/commands.js';

const tools = requireSystemTools('promtool check metrics', { promtool: 'prometheus' });

function promtoolFindings(text: string): string[] {
  const result = spawnSync(tools.paths.promtool!, ['check', 'metrics'], { input: text, encoding: 'utf8' });
  return `${result.stdout}${result.stderr}`.split('\n').filter(Boolean).sort();
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
    ['no InfiniBand', ['--path.sysfs', NO_INFINIBAND, '--no-collector.diag']],
    ['zoo with the one-hot state series', ['--path.sysfs', ZOO, '--config.file', ZOO_CONFIG, '--metrics.port-state-series']],
  ])('reports nothing on the %s host', async (_name, flags) => {
    const text = await scrape(exporterFromFlags(flags));
    expect(text).toContain('process_cpu_user_seconds_total');
    expect(promtoolFindings(text)).toEqual([]);
  });

  it('reports nothing on a hostile tree (FIFO, directory, garbage, quotes, backslashes and invalid UTF-8 in labels)', async () => {
    const tree = await copyTree(ZOO);
    try {
      const ib = (relative: string) => path.join(tree.root, 'class/infiniband', relative);
      await rm(ib('mlx5_0/ports/1/state'));
      execFileSync('mkfifo', [ib('mlx5_0/ports/1/state')]);
      await rm(ib('mlx5_0/ports/1/rate'));
      await mkdir(ib('mlx5_0/ports/1/rate'));
      await writeFile(ib('mlx5_3/ports/1/lid'), 'garbage\n');
      await writeFile(ib('mlx5_3/ports/1/counters/port_rcv_errors'), '12 apples\n');
      await writeFile(ib('mlx5_4/node_desc'), Buffer.concat([Buffer.from('rack "7" \\ row\tb '), Buffer.from([0xff, 0xfe, 0x0a])]));
      await writeFile(ib('mlx5_5/fw_ver'), '1.2.3\n# HELP injected\n');
      const text = await scrape(exporterFromFlags(['--path.sysfs', tree.root, '--config.file', ZOO_CONFIG, '--no-collector.diag']));
      expect(text).toContain('rack \\"7\\" \\\\ row');
      expect(text).toMatch(/infiniband_exporter_read_errors_total\{collector="sysfs"\} [1-9]/);
      expect(promtoolFindings(text)).toEqual([]);
    } finally {
      await tree.remove();
    }
  });

  it('reports only the contract-mandated names with the diag collector (recorded tool outputs)', async () => {
    const root = await mkdtemp(path.join(tmpdir(), 'ibx-promtool-'));
    try {
      await writeTree(root, SIMULATED_HOST);
      const command = parseCommandLine(['--path.sysfs', root, '--diag.timeout', '1s']);
      if (command.action !== 'run') throw new Error('unexpected');
      const runner = new ReplayRunner<DiagCommand>('diag', ['two-sms', 'sm-master']);
      const text = await scrape(
        new Exporter({ settings: command.settings, logger: pino({ level: 'silent' }), runners: { module: 'not-installed', diag: runner } }),
        true,
      );
      expect(text).toContain('infiniband_subnet_manager_info{');
      expect(text).toContain('infiniband_port_peer_symbol_errors_total{');
      expect(promtoolFindings(text)).toEqual([]);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it('reports nothing on a fabric-mode exposition (recorded tool outputs, CA ports, a saturated counter, a degraded link)', async () => {
    const command = parseCommandLine([
      '--path.sysfs',
      ZOO,
      '--config.file',
      path.join(FIXTURES, 'config/fabric.yml'),
      '--fabric.hca-ports',
    ]);
    if (command.action !== 'run') throw new Error('unexpected');
    const exporter = new Exporter({
      settings: command.settings,
      logger: pino({ level: 'silent' }),
      runners: { module: 'not-installed', fabric: new ReplayRunner<FabricCommand>('fabric', ['healthy']) },
    });
    let text: string;
    try {
      await exporter.collectOnce();
      await exporter.collectFabricOnce();
      text = (await exporter.app.inject({ url: '/metrics' })).body;
    } finally {
      await exporter.stop();
    }
    expect(text).toContain('infiniband_fabric_port_pma_saturated{');
    expect(text).toMatch(/infiniband_fabric_port_link_degraded\{[^}]*reason="width"\} 1/);
    expect(text).toContain('infiniband_fabric_subnet_manager_info{');
    expect(text).toContain('infiniband_port_info{');
    expect(promtoolFindings(text)).toEqual([]);
  });

  it('promtool is the real thing', () => {
    expect(execFileSync(tools.paths.promtool!, ['--version'], { encoding: 'utf8' })).toMatch(/promtool/);
  });
});
