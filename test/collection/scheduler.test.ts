// The host collectors over a changing tree, as one program runs them: state changes counted,
// vanished ports gone, the snapshot replaced whole, the exporter's own metrics kept, a cycle past
// its deadline cut off.
import { readdirSync } from 'node:fs';
import { rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { defineCollector, type Collector } from '../../src/collection/collector.js';
import { Collectors } from '../../src/collection/scheduler.js';
import { HOST_READING, SYSFS_FILES } from '../../src/collectors/host/host-reading.js';
import { IPOIB } from '../../src/collectors/host/ipoib.js';
import { IDENTITY_MAX_AGE_MS } from '../../src/collectors/host/host-reading.js';
import { SYSFS } from '../../src/collectors/host/sysfs/index.js';
import type { Snapshot } from '../../src/model/snapshot.js';
import { SysfsFiles } from '../../src/sources/sysfs-files.js';
import { settingsFromFlags } from '../support/exporter.js';
import { hostCollectors, renderExposition } from '../support/exposition.js';
import { logLines } from '../support/log-lines.js';
import { copyTree, ZOO, type TempTree } from '../support/trees.js';

let tree: TempTree;
let flags: string[];
beforeEach(async () => {
  tree = await copyTree(ZOO);
  const config = path.join(tree.root, '..', 'expectations.yml');
  await writeFile(config, 'expectations:\n  - {device: mlx5_3, port: 1, width: 4, speed: NDR}\n');
  // No kernel log is followed: this machine's is readable or not depending on who runs the tests.
  flags = ['--path.sysfs', tree.root, '--config.file', config, '--no-collector.diag', '--path.kmsg', '/dev/null'];
});
afterEach(async () => {
  await tree.remove();
});

function collectors(now = () => 1_700_000_000_000, logger = pino({ level: 'silent' })): Collectors {
  return hostCollectors(settingsFromFlags(flags), { now, logger });
}

const read = (c: Collectors): Promise<void> => c.runCycle(HOST_READING);
const text = (snapshot: Snapshot): string => renderExposition(snapshot, settingsFromFlags(flags));
const stateChanges = (snapshot: Snapshot, key: string): number | undefined => SYSFS.of(snapshot)!.stateChanges.get(key);
const stateFile = (device: string) => path.join(tree.root, 'class/infiniband', device, 'ports/1/state');

describe('the host collectors', () => {
  it('count logical state changes between readings and replace the snapshot whole', async () => {
    const c = collectors();
    await read(c);
    const first = c.snapshot!;
    expect(stateChanges(first, 'mlx5_2/1')).toBe(0);

    await writeFile(stateFile('mlx5_2'), '3: ARMED\n');
    await read(c);
    await writeFile(stateFile('mlx5_2'), '4: ACTIVE\n');
    await read(c);
    await read(c);
    const last = c.snapshot!;
    expect(last).not.toBe(first);
    expect(stateChanges(last, 'mlx5_2/1')).toBe(2);
    expect(stateChanges(last, 'mlx5_0/1')).toBe(0);
    // The earlier snapshot is immutable data: it still says what it said.
    expect(stateChanges(first, 'mlx5_2/1')).toBe(0);
    expect(first.devices.find((d) => d.name === 'mlx5_2')!.ports[0]!.state?.name).toBe('INIT');
    expect(text(last)).toContain('infiniband_port_state_changes_total{device="mlx5_2",port="1"} 2');
    // The config file's expectation is the sysfs collector's.
    expect(SYSFS.of(last)!.configured.get('mlx5_3/1')).toEqual({ width: 4, speed: 'NDR', source: 'config' });
  });

  it('drop the series of a port that vanished', async () => {
    const c = collectors();
    await read(c);
    expect(text(c.snapshot!)).toContain('device="mlx5_7"');
    await rm(path.join(tree.root, 'class/infiniband/mlx5_7'), { recursive: true });
    await read(c);
    expect(text(c.snapshot!)).not.toContain('device="mlx5_7"');
    expect(SYSFS.of(c.snapshot!)!.stateChanges.has('mlx5_7/1')).toBe(false);
  });

  it('count read errors per collector and report success and timing', async () => {
    let now = 1_700_000_000_000;
    const c = collectors(() => now);
    await writeFile(stateFile('mlx5_0'), 'garbage\n');
    await read(c);
    now += 10_000;
    await read(c);
    const snapshot = c.snapshot!;
    expect(snapshot.totals.readErrors.get(SYSFS.name)).toBe(2);
    expect(snapshot.totals.readErrors.get(IPOIB.name)).toBe(0);
    const sysfs = snapshot.reports.find((r) => r.collector === SYSFS.name)!;
    expect(sysfs.success).toBe(true);
    expect(sysfs.finishedAt).toBe(1_700_000_010);
    expect(sysfs.durationSeconds).toBeGreaterThan(0);
    // In the registry's order, whatever order they ended in.
    expect(snapshot.reports.map((r) => r.collector)).toEqual(['sysfs', 'ipoib', 'tso', 'pcie', 'host_jobs', 'kernel']);
  });

  it('fail the sysfs collector when the class directory cannot be listed', async () => {
    const c = collectors();
    await rm(path.join(tree.root, 'class/infiniband'), { recursive: true });
    await writeFile(path.join(tree.root, 'class/infiniband'), 'not a directory');
    await read(c);
    const sysfs = c.snapshot!.reports.find((r) => r.collector === SYSFS.name)!;
    expect(sysfs.success).toBe(false);
    expect(sysfs.errors[0]!.message).toMatch(/cannot list/);
  });
});

describe('a cycle past its deadline', () => {
  // A collector of the host reading that, once told to, waits until its cycle is cut off.
  let stall = false;
  const stuck: Collector<string> = defineCollector<string>({
    name: 'stuck',
    checks: 'nothing',
    flags: [],
    scope: 'host',
    schedule: { cycle: HOST_READING },
    onOverrun: 'keep',
    setUp: () => ({
      read: (_snapshot, signal) =>
        stall
          ? new Promise((resolve) => signal.addEventListener('abort', () => resolve({ part: 'too late' })))
          : Promise.resolve({ part: 'in time' }),
    }),
    failure: { consequence: 'nothing', meaning: 'nothing', cause: 'nothing' },
  });

  it('is cut off: each of its collectors failed, nothing it read is published, the age stays that of the last cycle', async () => {
    let now = 1_700_000_000_000;
    const settings = settingsFromFlags([...flags, '--collection.interval', '200ms']);
    const c = new Collectors([SYSFS, IPOIB, stuck], { settings, logger: pino({ level: 'silent' }), mode: 'serve', now: () => now });
    try {
      stall = false;
      await read(c);
      const before = c.snapshot!;
      stall = true;
      now += 10_000;
      await writeFile(stateFile('mlx5_2'), '4: ACTIVE\n');
      await read(c);
      const after = c.snapshot!;
      expect(after.reports.map((r) => [r.collector, r.success, r.finishedAt])).toEqual([
        ['sysfs', false, 1_700_000_000],
        ['ipoib', false, 1_700_000_000],
        ['stuck', false, 1_700_000_000],
      ]);
      expect(after.reports[0]!.errors[0]!.message).toMatch(/did not finish within its deadline of 200 ms; cut off/);
      expect(after.totals.readErrors.get(SYSFS.name)).toBe(1);
      // What the cut-off cycle read is dropped: the parts are the last cycle's.
      expect(stuck.of(after)).toBe('in time');
      expect(after.devices).toBe(before.devices);
      expect(SYSFS.of(after)).toBe(SYSFS.of(before));
    } finally {
      stall = false;
      await c.stop();
    }
  });
});

describe('between full readings', () => {
  it('port states are sampled every interval, so a flap between two scrapes is counted', async () => {
    const c = collectors();
    await read(c);
    await writeFile(stateFile('mlx5_0'), '1: DOWN\n');
    await c.sampleNow();
    await writeFile(stateFile('mlx5_0'), '4: ACTIVE\n');
    await c.sampleNow();
    // The served snapshot is outdated by the change: the next wish for fresh data reads the host again.
    expect(stateChanges(c.snapshot!, 'mlx5_0/1')).toBe(0);
    await c.fresh();
    expect(stateChanges(c.snapshot!, 'mlx5_0/1')).toBe(2);
    expect(c.snapshot!.devices.find((d) => d.name === 'mlx5_0')!.ports[0]!.state?.name).toBe('ACTIVE');
  });

  it('a sample that finds a device gone outdates the snapshot; one that finds nothing new does not', async () => {
    let now = 1_700_000_000_000;
    const c = collectors(() => now);
    await read(c);
    const first = c.snapshot;
    now += 6_000;
    await c.sampleNow();
    expect(c.lastReadingAt()).toBe(now);
    await c.fresh();
    expect(c.snapshot).toBe(first);
    await rm(path.join(tree.root, 'class/infiniband/mlx5_7'), { recursive: true });
    now += 1_000;
    await c.sampleNow();
    await c.fresh();
    expect(c.snapshot).not.toBe(first);
    expect(c.snapshot!.devices.map((d) => d.name)).not.toContain('mlx5_7');
  });

  it('identity files are read again after IDENTITY_MAX_AGE_MS or a state change, not at every reading', async () => {
    let now = 1_700_000_000_000;
    const c = collectors(() => now);
    const description = () => c.snapshot!.devices.find((d) => d.name === 'mlx5_0')!.nodeDesc;
    await read(c);
    const before = description();
    await writeFile(path.join(tree.root, 'class/infiniband/mlx5_0/node_desc'), 'renamed host\n');
    now += 10_000;
    await read(c);
    expect(description()).toBe(before);
    now += IDENTITY_MAX_AGE_MS;
    await read(c);
    expect(description()).toBe('renamed host');

    // A port that changes state has its device's identity read again at the next reading.
    await writeFile(path.join(tree.root, 'class/infiniband/mlx5_0/node_desc'), 'renamed again\n');
    await writeFile(stateFile('mlx5_0'), '1: DOWN\n');
    await c.sampleNow();
    await read(c);
    expect(description()).toBe('renamed again');
  });
});

describe('with files kept open', () => {
  it('keeps the files read at every reading, sees changes, and closes the files of what went away', async () => {
    // The copy's directories were made just now; a clock a minute ahead makes them quiet.
    const files = new SysfsFiles(tree.root, { keepOpen: true, now: () => Date.now() + 60_000 });
    const kept = new Collectors([SYSFS, IPOIB], {
      settings: settingsFromFlags(flags),
      logger: pino({ level: 'silent' }),
      mode: 'serve',
      provided: new Map([[SYSFS_FILES, files]]),
    });
    try {
      await read(kept);
      const all = files.keptFiles;
      expect(all).toBeGreaterThan(100);
      await read(kept);
      expect(files.keptFiles).toBe(all);

      // Written in place: read through the kept descriptor.
      await writeFile(path.join(tree.root, 'class/infiniband/mlx5_0/ports/1/counters/symbol_error'), '4242\n');
      await read(kept);
      expect(text(kept.snapshot!)).toContain('infiniband_port_symbol_errors_total{device="mlx5_0",port="1"} 4242');

      const mlx5_1 = readdirSync(path.join(tree.root, 'class/infiniband/mlx5_1/ports/1/counters')).length;
      await rm(path.join(tree.root, 'class/infiniband/mlx5_1'), { recursive: true });
      await rm(path.join(tree.root, 'class/net/ib1'), { recursive: true });
      await read(kept);
      expect(kept.snapshot!.devices.map((device) => device.name)).not.toContain('mlx5_1');
      expect(IPOIB.of(kept.snapshot!)!.map((iface) => iface.name)).not.toContain('ib1');
      expect(files.keptFiles).toBeLessThan(all - mlx5_1);
    } finally {
      await kept.stop();
    }
    expect(files.keptFiles).toBe(0);
  });
});

describe('the host collectors, in the log', () => {
  const device = (name: string) => path.join(tree.root, 'class/infiniband', name);
  const parked = (name: string) => path.join(tree.root, `parked-${name}`);

  it('say once when a device disappears or appears after start, whichever reading or sample sees it first', async () => {
    const { logger, lines, messages } = logLines('info');
    const c = collectors(undefined, logger);
    await read(c);
    expect(messages()).toEqual(['found 13 InfiniBand devices']);
    await rename(device('mlx5_7'), parked('mlx5_7'));
    await c.sampleNow();
    await read(c);
    await c.sampleNow();
    await rename(parked('mlx5_7'), device('mlx5_7'));
    await rename(device('mlx5_6'), parked('mlx5_6'));
    await read(c);
    await read(c);
    expect(messages().slice(1)).toEqual([
      'InfiniBand device disappeared: mlx5_7',
      'InfiniBand device appeared: mlx5_7',
      'InfiniBand device disappeared: mlx5_6',
    ]);
    expect(lines[1]).toMatchObject({ level: 40, devices: ['mlx5_7'] });
    expect(lines[2]).toMatchObject({ level: 30, devices: ['mlx5_7'] });
  });

  it('never say "works again" of a device that was unplugged; say it when the device is back and reads well', async () => {
    const { logger, messages } = logLines('info');
    const c = collectors(undefined, logger);
    await writeFile(stateFile('mlx5_7'), 'garbage\n');
    await read(c);
    await rename(device('mlx5_7'), parked('mlx5_7'));
    await read(c);
    await read(c);
    expect(messages()).toEqual([
      'found 13 InfiniBand devices',
      'read failed; repeats of this error are summarised hourly',
      'InfiniBand device disappeared: mlx5_7',
    ]);
    await rename(parked('mlx5_7'), device('mlx5_7'));
    await writeFile(stateFile('mlx5_7'), '4: ACTIVE\n');
    await read(c);
    expect(messages().slice(3)).toEqual(['InfiniBand device appeared: mlx5_7', 'read works again']);
  });
});
