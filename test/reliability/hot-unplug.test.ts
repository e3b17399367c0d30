// Devices unplugged and plugged back while cycles run. A cycle that meets a vanishing device
// finishes, the text it renders is complete, the device's series go with the device, and it comes
// back as a new device (its state-change count starts again at 0).
import { renameSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Collectors } from '../../src/collection/scheduler.js';
import { HOST_READING } from '../../src/collectors/host/host-reading.js';
import type { ReadResult } from '../../src/sources/sysfs-attribute.js';
import { SysfsFiles } from '../../src/sources/sysfs-files.js';
import { settingsFromFlags } from '../support/exporter.js';
import { hostCollectors, renderExposition } from '../support/exposition.js';
import { generateTree } from '../../synthetic/generate-tree.js';
import { parseExposition } from './support.js';

/** SysfsFiles that runs a hook before every read: the test unplugs devices at exact points. */
class HookedFiles extends SysfsFiles {
  beforeRead: ((relative: string) => void) | undefined;

  override read(relative: string): ReadResult {
    this.beforeRead?.(relative);
    return super.read(relative);
  }

  /** One file at a time, so that the hook runs before each. */
  override readDecimals(...[directory, names, keep, values, others]: Parameters<SysfsFiles['readDecimals']>): void {
    names.forEach((name, index) => {
      this.beforeRead?.(`${directory}/${name}`);
      const value: (bigint | undefined)[] = [];
      const other: { index: number; result: ReadResult }[] = [];
      super.readDecimals(directory, [name], keep, value, other);
      values[index] = value[0];
      for (const { result } of other) others.push({ index, result });
    });
  }
}

let dir: string;
let root: string;
let files: HookedFiles;
let collection: Collectors;

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'ibx-unplug-'));
  root = path.join(dir, 'sys');
  await generateTree(root, 6, 2);
  files = new HookedFiles(root);
  collection = hostCollectors(settingsFromFlags(['--path.sysfs', root]), { files });
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const parked = (name: string) => path.join(dir, `parked-${name}`);
const device = (name: string) => path.join(root, 'class/infiniband', name);
// generateTree gives device d the interfaces ib(2d) and ib(2d+1).
const interfacesOf = (d: number) => [`ib${2 * d}`, `ib${2 * d + 1}`];

// Synchronous, as the reads they interrupt are.
function unplug(d: number): void {
  renameSync(device(`mlx5_${d}`), parked(`mlx5_${d}`));
  for (const name of interfacesOf(d)) renameSync(path.join(root, 'class/net', name), parked(name));
}

function plugBack(d: number): void {
  renameSync(parked(`mlx5_${d}`), device(`mlx5_${d}`));
  for (const name of interfacesOf(d)) renameSync(parked(name), path.join(root, 'class/net', name));
}

async function cycle(): Promise<Map<string, number>> {
  await collection.runCycle(HOST_READING);
  const text = renderExposition(collection.snapshot!, settingsFromFlags(['--path.sysfs', root]));
  return parseExposition(text);
}

const seriesOf = (series: Map<string, number>, name: string) =>
  [...series.keys()].filter((key) => key.includes(`device="${name}"`) || key.includes(`interface="${name}"`));

describe('hot-unplug', () => {
  it.each([
    ['its first attribute', 'class/infiniband/mlx5_2/node_type'],
    ['its port list was read: in the middle of its ports', 'class/infiniband/mlx5_2/ports/2/state'],
    ['one of its last counters', 'class/infiniband/mlx5_2/ports/2/hw_counters/rx_write_requests'],
  ])('a device unplugged while the cycle reads %s is dropped whole, then comes back new', async (_when, trigger) => {
    await writeFile(path.join(device('mlx5_2'), 'ports/1/state'), '1: DOWN\n');
    await cycle();
    await writeFile(path.join(device('mlx5_2'), 'ports/1/state'), '4: ACTIVE\n');
    const before = await cycle();
    expect(before.get('infiniband_port_state_changes_total{device="mlx5_2",port="1"}')).toBe(1);

    let unplugged = false;
    files.beforeRead = (relative) => {
      if (!unplugged && relative === trigger) {
        unplugged = true;
        unplug(2);
      }
    };
    const during = await cycle();
    expect(unplugged).toBe(true);
    // Nothing half-read of the vanished device; the others are whole, and no error was counted.
    expect(seriesOf(during, 'mlx5_2')).toEqual([]);
    expect(during.get('infiniband_exporter_collector_success{collector="sysfs"}')).toBe(1);
    expect(during.get('infiniband_exporter_read_errors_total{collector="sysfs"}')).toBe(0);
    for (const d of [0, 1, 3, 4, 5]) expect(seriesOf(during, `mlx5_${d}`).length, `mlx5_${d}`).toBe(seriesOf(before, `mlx5_${d}`).length);

    files.beforeRead = undefined;
    const gone = await cycle();
    expect(seriesOf(gone, 'mlx5_2')).toEqual([]);
    for (const name of interfacesOf(2)) expect(seriesOf(gone, name)).toEqual([]);

    plugBack(2);
    const back = await cycle();
    expect(seriesOf(back, 'mlx5_2')).toEqual(seriesOf(before, 'mlx5_2'));
    expect(back.get('infiniband_port_state_changes_total{device="mlx5_2",port="1"}')).toBe(0);
    expect(back.get('infiniband_ipoib_carrier{interface="ib4"}')).toBe(1);
  });

  it('devices flapping in and out on every cycle never break a cycle or the text', async () => {
    const present = [true, true, true, true, true, true];
    let reads = 0;
    let toggles = 0;
    files.beforeRead = () => {
      reads += 1;
      // Every 97th read toggles one device (a fixed sequence: the test is deterministic).
      if (reads % 97 !== 0) return;
      const d = (reads / 97) % 6;
      if (present[d]) unplug(d);
      else plugBack(d);
      present[d] = !present[d];
      toggles += 1;
    };
    for (let round = 0; round < 12; round++) {
      const series = await cycle();
      expect(series.get('infiniband_exporter_collector_success{collector="sysfs"}')).toBe(1);
      expect(series.get('infiniband_exporter_read_errors_total{collector="sysfs"}')).toBe(0);
      // A device in the text is there whole: both ports with every PMA counter.
      for (let d = 0; d < 6; d++) {
        const found = seriesOf(series, `mlx5_${d}`).filter((key) => key.startsWith('infiniband_port_symbol_errors_total'));
        expect([0, 2], `round ${round} mlx5_${d}`).toContain(found.length);
      }
    }
    expect(toggles).toBeGreaterThanOrEqual(5);
  });
});
