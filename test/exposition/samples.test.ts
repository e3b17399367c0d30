// The exposition text is written directly from the snapshot's samples (src/exposition/samples.ts,
// by each collector's metrics); prom-client is the oracle: for the same samples, a fresh prom-client
// registry must render exactly the same bytes — escaping, number formatting, label order, layout.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { describe, expect, it, vi } from 'vitest';
import type { Settings } from '../../src/config/flags.js';
import type { ExpositionBuffer } from '../../src/exposition/buffer.js';
import type { MetricSpec } from '../../src/exposition/metric-spec.js';
import { Samples } from '../../src/exposition/samples.js';
import { parseServeCommandLine as parseCommandLine } from '../../src/commands/serve/command-line.js';
import { Exporter } from '../../src/commands/serve/exporter.js';
import type { Snapshot } from '../../src/model/snapshot.js';
import { ReplayRunner } from '../support/replay.js';
import { promClientText as promClientOracle } from '../support/prom-client-oracle.js';
import { exporterFromFlags, settingsFromFlags } from '../support/exporter.js';
import { renderExposition } from '../support/exposition.js';
import { copyTree, DGX, NO_INFINIBAND, SIMULATED_HOST, writeTree, ZOO, ZOO_CONFIG } from '../support/trees.js';
import type { DiagCommand } from '../../src/sources/diag/local-ports.js';

async function snapshotOf(exporter: Exporter, withDiag = false): Promise<Snapshot> {
  try {
    await exporter.collectOnce();
    if (withDiag) await exporter.collectDiagOnce();
    return exporter.collectors.snapshot!;
  } finally {
    await exporter.stop();
  }
}

/**
 * Render the snapshot as the exporter does, and check that every set of samples a collector wrote
 * reads as prom-client writes the same samples.
 */
async function expectSameAsPromClient(snapshot: Snapshot, settings: Settings): Promise<string> {
  const written: { samples: Samples; order: readonly MetricSpec[]; text: string }[] = [];
  const writeTo = Samples.prototype.writeTo;
  const spy = vi.spyOn(Samples.prototype, 'writeTo').mockImplementation(function (
    this: Samples,
    order: readonly MetricSpec[],
    out: ExpositionBuffer,
  ) {
    const before = out.view().length;
    writeTo.call(this, order, out);
    written.push({ samples: this, order, text: out.view().subarray(before).toString('utf8') });
  });
  let text: string;
  try {
    text = renderExposition(snapshot, settings);
  } finally {
    spy.mockRestore();
  }
  expect(written.length).toBeGreaterThan(0);
  for (const { samples, order, text: part } of written) if (part !== '') expect(part).toBe(await promClientOracle(samples, order));
  // Rendering the same snapshot again gives the same text (label texts are cached across renders).
  expect(renderExposition(snapshot, settings)).toBe(text);
  return text;
}

describe('exposition text against prom-client', () => {
  it.each([
    ['zoo', ['--path.sysfs', ZOO, '--config.file', ZOO_CONFIG], false],
    ['zoo with the one-hot state series', ['--path.sysfs', ZOO, '--config.file', ZOO_CONFIG], true],
    ['dgx', ['--path.sysfs', DGX, '--no-collector.diag'], false],
    ['no InfiniBand', ['--path.sysfs', NO_INFINIBAND, '--no-collector.diag'], false],
  ] as const)('is identical on the %s host', async (_name, given, portStateSeries) => {
    const flags = [...given, ...(portStateSeries ? ['--metrics.port-state-series'] : [])];
    const text = await expectSameAsPromClient(await snapshotOf(exporterFromFlags(flags)), settingsFromFlags(flags));
    expect(text).toContain('infiniband_exporter_build_info{');
  });

  it('is identical with quotes, backslashes, newlines and invalid UTF-8 in label values', async () => {
    const tree = await copyTree(ZOO);
    try {
      const ib = (relative: string) => path.join(tree.root, 'class/infiniband', relative);
      await writeFile(ib('mlx5_4/node_desc'), Buffer.concat([Buffer.from('rack "7" \\ row\nb\tc '), Buffer.from([0xff, 0xfe, 0x0a])]));
      await writeFile(ib('mlx5_5/fw_ver'), '1.2.3\n# HELP injected\n');
      await writeFile(ib('mlx5_3/ports/1/lid'), 'garbage\n');
      const flags = ['--path.sysfs', tree.root, '--no-collector.diag'];
      const text = await expectSameAsPromClient(await snapshotOf(exporterFromFlags(flags)), settingsFromFlags(flags));
      expect(text).toContain('node_desc="rack \\"7\\" \\\\ row\\nb\tc \ufffd\ufffd"');
      expect(text).toContain('firmware_version="1.2.3\\n# HELP injected"');
    } finally {
      await tree.remove();
    }
  });

  it("is identical with the diag collector's peer, subnet manager and expectation series", async () => {
    const root = await mkdtemp(path.join(tmpdir(), 'ibx-oracle-'));
    try {
      await writeTree(root, SIMULATED_HOST);
      const command = parseCommandLine(['--path.sysfs', root, '--diag.timeout', '1s']);
      if (command.action !== 'run') throw new Error('unexpected');
      const exporter = new Exporter({
        settings: command.settings,
        logger: pino({ level: 'silent' }),
        runners: { module: 'not-installed', diag: new ReplayRunner<DiagCommand>('diag', ['two-sms', 'sm-master']) },
      });
      const text = await expectSameAsPromClient(await snapshotOf(exporter, true), command.settings);
      expect(text).toContain('infiniband_subnet_manager_info{');
      expect(text).toContain('infiniband_port_peer_info{');
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
