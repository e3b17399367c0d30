// The exposition text is written directly from the snapshot's samples (src/metrics/render.ts);
// prom-client is the oracle: for the same samples, a fresh prom-client registry must render exactly
// the same bytes — escaping, number formatting, label order, layout.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { buildInfo } from '../../src/build-info.js';
import { parseCommandLine } from '../../src/config/settings.js';
import { Exporter } from '../../src/exporter.js';
import { METRIC_ORDER, collectSamples, renderSnapshot, type Samples } from '../../src/metrics/render.js';
import type { Snapshot } from '../../src/snapshot/types.js';
import { ReplayRunner } from '../diag/replay.js';
import { promClientText as promClientOracle } from '../support/prom-client-oracle.js';
import { exporterFromFlags } from '../support/exporter.js';
import { copyTree, DGX, NO_INFINIBAND, SIMULATED_HOST, writeTree, ZOO, ZOO_CONFIG } from '../support/trees.js';

const promClientText = (samples: Samples): Promise<string> => promClientOracle(samples, METRIC_ORDER);

async function snapshotOf(exporter: Exporter, withDiag = false): Promise<Snapshot> {
  try {
    await exporter.collectOnce();
    if (withDiag) await exporter.collectDiagOnce();
    return exporter.collection.snapshot!;
  } finally {
    await exporter.stop();
  }
}

async function expectSameAsPromClient(snapshot: Snapshot, portStateSeries = false): Promise<string> {
  const build = buildInfo();
  const text = renderSnapshot(snapshot, build, { portStateSeries });
  expect(text).toBe(await promClientText(collectSamples(snapshot, build, { portStateSeries })));
  // Rendering the same snapshot again gives the same text (label texts are cached across renders).
  expect(renderSnapshot(snapshot, build, { portStateSeries })).toBe(text);
  return text;
}

describe('exposition text against prom-client', () => {
  it.each([
    ['zoo', ['--path.sysfs', ZOO, '--config.file', ZOO_CONFIG], false],
    ['zoo with the one-hot state series', ['--path.sysfs', ZOO, '--config.file', ZOO_CONFIG], true],
    ['dgx', ['--path.sysfs', DGX, '--no-collector.diag'], false],
    ['no InfiniBand', ['--path.sysfs', NO_INFINIBAND, '--no-collector.diag'], false],
  ] as const)('is identical on the %s host', async (_name, flags, portStateSeries) => {
    const text = await expectSameAsPromClient(await snapshotOf(exporterFromFlags([...flags])), portStateSeries);
    expect(text).toContain('infiniband_exporter_build_info{');
  });

  it('is identical with quotes, backslashes, newlines and invalid UTF-8 in label values', async () => {
    const tree = await copyTree(ZOO);
    try {
      const ib = (relative: string) => path.join(tree.root, 'class/infiniband', relative);
      await writeFile(ib('mlx5_4/node_desc'), Buffer.concat([Buffer.from('rack "7" \\ row\nb\tc '), Buffer.from([0xff, 0xfe, 0x0a])]));
      await writeFile(ib('mlx5_5/fw_ver'), '1.2.3\n# HELP injected\n');
      await writeFile(ib('mlx5_3/ports/1/lid'), 'garbage\n');
      const text = await expectSameAsPromClient(await snapshotOf(exporterFromFlags(['--path.sysfs', tree.root, '--no-collector.diag'])));
      expect(text).toContain('node_desc="rack \\"7\\" \\\\ row\\nb\tc \ufffd\ufffd"');
      expect(text).toContain('firmware_version="1.2.3\\n# HELP injected"');
    } finally {
      await tree.remove();
    }
  });

  it('is identical with the diag collector\'s peer, subnet manager and expectation series', async () => {
    const root = await mkdtemp(path.join(tmpdir(), 'ibx-oracle-'));
    try {
      await writeTree(root, SIMULATED_HOST);
      const command = parseCommandLine(['--path.sysfs', root, '--diag.timeout', '1s']);
      if (command.action !== 'run') throw new Error('unexpected');
      const exporter = new Exporter({ settings: command.settings, logger: pino({ level: 'silent' }), diagRunner: new ReplayRunner(['two-sms', 'sm-master']) });
      const text = await expectSameAsPromClient(await snapshotOf(exporter, true));
      expect(text).toContain('infiniband_subnet_manager_info{');
      expect(text).toContain('infiniband_port_peer_info{');
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
