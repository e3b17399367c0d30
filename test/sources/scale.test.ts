// A 64-device host is read whole; the cycle time is printed for the record (never asserted: the
// benchmark compares it with a read-only baseline in the same process).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NO_DEVICE_FILTER } from '../../src/sources/device-filter.js';
import { readInfinibandClass } from '../../src/sources/infiniband.js';
import { readIpoib } from '../../src/sources/ipoib.js';
import { SysfsFiles } from '../../src/sources/sysfs-files.js';
import { generateTree } from '../../synthetic/generate-tree.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'ibx-scale-'));
  await generateTree(dir, 64, 2);
}, 120_000);
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('64-device host', () => {
  it('reads every device, port, counter and interface', async () => {
    const files = new SysfsFiles(dir);
    const times: number[] = [];
    let devices = 0;
    let ports = 0;
    let interfaces = 0;
    for (let round = 0; round < 5; round++) {
      const start = performance.now();
      const reading = await readInfinibandClass(files, NO_DEVICE_FILTER);
      const ipoib = await readIpoib(files, reading.devices);
      times.push(performance.now() - start);
      expect(reading.errors).toEqual([]);
      devices = reading.devices.length;
      ports = reading.devices.reduce((sum, d) => sum + d.ports.length, 0);
      interfaces = ipoib.interfaces.filter((i) => i.device !== undefined).length;
      expect(reading.devices.every((d) => d.ports.every((p) => p.counters.length === 21 && p.hwCounters.size === 19))).toBe(true);
    }
    expect([devices, ports, interfaces]).toEqual([64, 128, 128]);
    const sorted = [...times].sort((a, b) => a - b);
    process.stdout.write(
      `64 devices / 128 ports: cycle median ${sorted[2]!.toFixed(0)} ms (min ${sorted[0]!.toFixed(0)}, max ${sorted[4]!.toFixed(0)})\n`,
    );
  });
});
