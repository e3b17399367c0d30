// What the pcie collector costs: its files change only when a link trains, so it reads them with
// the device's identity (when a device first appears, when one of its ports changes state, then
// every IDENTITY_MAX_AGE_MS), not at every host reading; counted here as reads of current_link_speed through the SysfsFiles the host
// collectors share, over many readings of the PCIe fixture host.
import path from 'node:path';
import { writeFile } from 'node:fs/promises';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Collectors } from '../../../src/collection/scheduler.js';
import { HOST_READING, SYSFS_FILES } from '../../../src/collectors/host/host-reading.js';
import { PCIE } from '../../../src/collectors/host/pcie.js';
import { IDENTITY_MAX_AGE_MS } from '../../../src/collectors/host/host-reading.js';
import { SYSFS } from '../../../src/collectors/host/sysfs/index.js';
import { SysfsFiles } from '../../../src/sources/sysfs-files.js';
import { settingsFromFlags } from '../../support/exporter.js';
import { renderExposition } from '../../support/exposition.js';
import { FIXTURES, copyTree, type TempTree } from '../../support/trees.js';

let tree: TempTree;
let files: SysfsFiles;
let now: number;
let collectors: Collectors;
let reads: string[];

beforeEach(async () => {
  tree = await copyTree(path.join(FIXTURES, 'sys/pcie'));
  files = new SysfsFiles(tree.root, { keepOpen: true });
  reads = [];
  const read = files.read.bind(files);
  vi.spyOn(files, 'read').mockImplementation((relative, keep) => {
    reads.push(relative);
    return read(relative, keep);
  });
  now = 1_700_000_000_000;
  collectors = new Collectors([SYSFS, PCIE], {
    settings: settingsFromFlags(['--path.sysfs', tree.root, '--no-collector.diag']),
    logger: pino({ level: 'silent' }),
    mode: 'serve',
    now: () => now,
    provided: new Map([[SYSFS_FILES, files]]),
  });
});
afterEach(async () => {
  await collectors.stop();
  files.close();
  await tree.remove();
});

/** `count` host readings, `stepMs` apart on the collectors' clock. */
async function readings(count: number, stepMs = 10_000): Promise<void> {
  for (let i = 0; i < count; i++) {
    await collectors.runCycle(HOST_READING);
    now += stepMs;
  }
}
const linkSpeedReads = (device?: string) =>
  reads.filter((relative) => relative.endsWith('/device/current_link_speed') && (device === undefined || relative.includes(`/${device}/`)));

describe('the pcie collector reads its files with the identity, not every reading', () => {
  it("reads each device's current_link_speed once over 29 readings of 10 s, and again after IDENTITY_MAX_AGE_MS", async () => {
    await readings(29);
    // Four devices, one of them (mlx5_3) without the file: one attempt each.
    expect(linkSpeedReads()).toHaveLength(4);
    expect(reads.filter((relative) => relative.includes('/device/')).length).toBeLessThanOrEqual(4 * 12);
    // The port's state, by contrast, is read at every reading.
    expect(reads.filter((relative) => relative.endsWith('mlx5_1/ports/1/state'))).toHaveLength(29);

    now += IDENTITY_MAX_AGE_MS;
    await readings(1);
    expect(linkSpeedReads()).toHaveLength(8);
  });

  it('serves the same PCIe series between two reads of the files, and what they say after the next one', async () => {
    const text = () =>
      renderExposition(collectors.snapshot!, settingsFromFlags(['--path.sysfs', tree.root, '--no-collector.diag']), [SYSFS, PCIE]);
    await readings(1);
    expect(text()).toContain('infiniband_device_pcie_link_width_lanes{device="mlx5_1"} 8\n');
    // Reseated: the link trains at x16. Not read before the identity is due again: still x8.
    await writeFile(path.join(tree.root, 'class/infiniband/mlx5_1/device/current_link_width'), '16\n');
    await readings(3);
    expect(text()).toContain('infiniband_device_pcie_link_width_lanes{device="mlx5_1"} 8\n');
    now += IDENTITY_MAX_AGE_MS;
    await readings(1);
    expect(text()).toContain('infiniband_device_pcie_link_width_lanes{device="mlx5_1"} 16\n');
    expect(text()).toContain('infiniband_device_pcie_link_degraded{device="mlx5_1",reason="width"} 0\n');
    expect(linkSpeedReads('mlx5_1')).toHaveLength(2);
  });

  it("reads a device's files again when one of its ports changes state: an adapter reset retrains its PCIe link too", async () => {
    const text = () =>
      renderExposition(collectors.snapshot!, settingsFromFlags(['--path.sysfs', tree.root, '--no-collector.diag']), [SYSFS, PCIE]);
    await readings(1);
    const state = path.join(tree.root, 'class/infiniband/mlx5_1/ports/1/state');
    // The adapter is reset: its port goes down, and its PCIe link comes back at x16.
    await writeFile(state, '1: DOWN\n');
    await writeFile(path.join(tree.root, 'class/infiniband/mlx5_1/device/current_link_width'), '16\n');
    await readings(1);
    expect(text()).toContain('infiniband_device_pcie_link_width_lanes{device="mlx5_1"} 16\n');
    expect(linkSpeedReads('mlx5_1')).toHaveLength(2);
    // The other adapters, whose ports did not change, were not read again.
    expect(linkSpeedReads('mlx5_0')).toHaveLength(1);
    await writeFile(state, '4: ACTIVE\n');
    await readings(2);
    expect(linkSpeedReads('mlx5_1')).toHaveLength(3);
  });
});
