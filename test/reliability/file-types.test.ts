// Attribute files that turn into FIFOs (one with a writer holding it open) or directories, and
// directories that turn into files, between cycles: each is a read error of that item, the cycle
// neither blocks nor fails, and everything is read again once the files are regular again.
import { execFileSync } from 'node:child_process';
import { open, mkdir, mkdtemp, rename, rm, writeFile, type FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { IDENTITY_MAX_AGE_MS } from '../../src/collectors/host/host-reading.js';
import type { Exporter } from '../../src/commands/serve/exporter.js';
import { exporterFromFlags } from '../support/exporter.js';
import { generateTree } from '../../synthetic/generate-tree.js';
import { parseExposition } from './support.js';

let dir: string;
let root: string;
let exporter: Exporter;
let writer: FileHandle | undefined;
// Identity files (node_guid among them) are read again every IDENTITY_MAX_AGE_MS, not every
// reading: each scrape here comes that much later, so that every odd file is met in every round.
let clock = Date.now();

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'ibx-filetypes-'));
  root = path.join(dir, 'sys');
  await generateTree(root, 3, 2);
  exporter = exporterFromFlags(['--path.sysfs', root, '--no-collector.diag', '--web.disable-exporter-metrics'], () => clock);
});
afterEach(async () => {
  await writer?.close();
  writer = undefined;
  await exporter.stop();
  await rm(dir, { recursive: true, force: true });
});

const ib = (relative: string) => path.join(root, 'class/infiniband', relative);

async function scrape(): Promise<Map<string, number>> {
  clock += IDENTITY_MAX_AGE_MS;
  await exporter.collectOnce();
  const response = await exporter.app.inject({ url: '/metrics' });
  expect(response.statusCode).toBe(200);
  return parseExposition(response.body);
}

/** Move a file or directory aside and put something else in its place; returns the undo. */
async function replace(file: string, make: (file: string) => Promise<void>): Promise<() => Promise<void>> {
  const aside = `${file}.aside`;
  await rename(file, aside);
  await make(file);
  return async () => {
    await rm(file, { recursive: true, force: true });
    await rename(aside, file);
  };
}

const fifo = async (file: string) => {
  execFileSync('mkfifo', [file]);
};
const directory = async (file: string) => {
  await mkdir(file);
  await writeFile(path.join(file, 'inside'), '1\n');
};
const regularFile = async (file: string) => {
  await writeFile(file, '1\n');
};

const sysfsErrors = (series: Map<string, number>) => series.get('infiniband_exporter_read_errors_total{collector="sysfs"}');
const ipoibErrors = (series: Map<string, number>) => series.get('infiniband_exporter_read_errors_total{collector="ipoib"}');

describe('files changing type between cycles', () => {
  it('each odd file is one read error of its own item, and all comes back when it is regular again', async () => {
    const before = await scrape();
    expect(sysfsErrors(before)).toBe(0);

    const undo = [
      await replace(ib('mlx5_0/ports/1/state'), fifo),
      await replace(ib('mlx5_0/ports/2/rate'), directory),
      await replace(ib('mlx5_1/ports/1/counters'), regularFile),
      await replace(ib('mlx5_1/ports/2/hw_counters/out_of_buffer'), directory),
      await replace(ib('mlx5_2/node_guid'), fifo),
      await replace(path.join(root, 'class/net/ib1/mtu'), fifo),
    ];
    // A FIFO with a writer attached: opening it for reading would not block, reading would.
    writer = await open(ib('mlx5_0/ports/1/state'), 'r+');
    await writer.write('4: ACTIVE\n');

    for (const round of [1, 2]) {
      const broken = await scrape();
      expect(broken.get('infiniband_exporter_collector_success{collector="sysfs"}')).toBe(1);
      expect(broken.get('infiniband_exporter_collector_success{collector="ipoib"}')).toBe(1);
      expect(sysfsErrors(broken)).toBe(5 * round);
      expect(ipoibErrors(broken)).toBe(1 * round);
      expect(broken.has('infiniband_port_state_id{device="mlx5_0",port="1"}')).toBe(false);
      expect(broken.has('infiniband_port_link_width_lanes{device="mlx5_0",port="2"}')).toBe(false);
      expect(broken.has('infiniband_port_symbol_errors_total{device="mlx5_1",port="1"}')).toBe(false);
      expect(broken.has('infiniband_port_hw_stat_total{device="mlx5_1",port="2",counter="out_of_buffer"}')).toBe(false);
      expect(broken.has('infiniband_ipoib_mtu_bytes{interface="ib1"}')).toBe(false);
      // Everything else on the same ports is still read.
      expect(broken.get('infiniband_port_physical_state_id{device="mlx5_0",port="1"}')).toBe(5);
      expect(broken.get('infiniband_port_state_id{device="mlx5_0",port="2"}')).toBe(4);
      expect(broken.has('infiniband_port_hw_stat_total{device="mlx5_1",port="2",counter="out_of_sequence"}')).toBe(true);
      expect(broken.get('infiniband_ipoib_carrier{interface="ib1"}')).toBe(1);
      expect([...broken.keys()].filter((key) => key.startsWith('infiniband_device_info{device="mlx5_2"'))).toHaveLength(1);
    }

    await writer.close();
    writer = undefined;
    for (const restore of undo) await restore();
    const after = await scrape();
    expect(sysfsErrors(after)).toBe(10);
    const current = [...before.keys()].filter((key) => !key.startsWith('infiniband_exporter_'));
    expect(current.filter((key) => !after.has(key))).toEqual([]);
  });

  it('a device directory that turns into a file is no device and counts as errors, and comes back', async () => {
    const before = await scrape();
    const undo = await replace(ib('mlx5_1'), regularFile);
    const broken = await scrape();
    expect(broken.get('infiniband_exporter_collector_success{collector="sysfs"}')).toBe(1);
    expect(sysfsErrors(broken)).toBeGreaterThan(0);
    expect([...broken.keys()].filter((key) => key.includes('device="mlx5_1"'))).toEqual([]);
    expect([...broken.keys()].filter((key) => key.includes('device="mlx5_0"')).length).toBe(
      [...before.keys()].filter((key) => key.includes('device="mlx5_0"')).length,
    );
    await undo();
    const after = await scrape();
    expect([...after.keys()].filter((key) => key.includes('device="mlx5_1"'))).toEqual(
      [...before.keys()].filter((key) => key.includes('device="mlx5_1"')),
    );
  });
});
