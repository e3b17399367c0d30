// The collection loop over a changing tree: state changes counted, vanished ports gone, snapshot
// replaced whole, self metrics kept.
import { readdirSync } from 'node:fs';
import { rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RecurringErrors } from '../../src/log/recurring-errors.js';
import { renderSnapshot } from '../../src/metrics/render.js';
import { NO_DEVICE_FILTER } from '../../src/sources/device-filter.js';
import { SysfsFiles } from '../../src/sources/sysfs-files.js';
import { Collection, IDENTITY_MAX_AGE_MS } from '../../src/collection/collection.js';
import { logLines } from '../support/log-lines.js';
import { copyTree, ZOO, type TempTree } from '../support/trees.js';
import { rm } from 'node:fs/promises';

let tree: TempTree;
beforeEach(async () => {
  tree = await copyTree(ZOO);
});
afterEach(async () => {
  await tree.remove();
});

function collection(now = () => 1_700_000_000_000, logger = pino({ level: 'silent' })): Collection {
  return new Collection({
    files: new SysfsFiles(tree.root),
    devices: NO_DEVICE_FILTER,
    expectations: [{ device: 'mlx5_3', port: 1, width: 4, speed: 'NDR' }],
    logger,
    errors: new RecurringErrors(logger),
    collectors: ['sysfs', 'ipoib'],
    commands: [],
    now,
  });
}

const build = { version: 'test', revision: 'test', nodejsVersion: 'v0' };
const stateFile = (device: string) => path.join(tree.root, 'class/infiniband', device, 'ports/1/state');

describe('Collection', () => {
  it('counts logical state changes between cycles and replaces the snapshot whole', async () => {
    const c = collection();
    await c.collectHost();
    const first = c.snapshot!;
    expect(first.totals.stateChanges.get('mlx5_2/1')).toBe(0);

    await writeFile(stateFile('mlx5_2'), '3: ARMED\n');
    await c.collectHost();
    await writeFile(stateFile('mlx5_2'), '4: ACTIVE\n');
    await c.collectHost();
    await c.collectHost();
    const last = c.snapshot!;
    expect(last).not.toBe(first);
    expect(last.totals.stateChanges.get('mlx5_2/1')).toBe(2);
    expect(last.totals.stateChanges.get('mlx5_0/1')).toBe(0);
    // The earlier snapshot is immutable data: it still says what it said.
    expect(first.totals.stateChanges.get('mlx5_2/1')).toBe(0);
    expect(first.devices.find((d) => d.name === 'mlx5_2')!.ports[0]!.state?.name).toBe('INIT');
    expect(await renderSnapshot(last, build, { portStateSeries: false })).toContain('infiniband_port_state_changes_total{device="mlx5_2",port="1"} 2');
  });

  it('drops the series of a port that vanished', async () => {
    const c = collection();
    await c.collectHost();
    expect(await renderSnapshot(c.snapshot!, build, { portStateSeries: false })).toContain('device="mlx5_7"');
    await rm(path.join(tree.root, 'class/infiniband/mlx5_7'), { recursive: true });
    await c.collectHost();
    const text = await renderSnapshot(c.snapshot!, build, { portStateSeries: false });
    expect(text).not.toContain('device="mlx5_7"');
    expect(c.snapshot!.totals.stateChanges.has('mlx5_7/1')).toBe(false);
  });

  it('counts read errors per collector and reports success and timing', async () => {
    let now = 1_700_000_000_000;
    const c = collection(() => now);
    await writeFile(stateFile('mlx5_0'), 'garbage\n');
    await c.collectHost();
    now += 10_000;
    await c.collectHost();
    const snapshot = c.snapshot!;
    expect(snapshot.totals.readErrors.get('sysfs')).toBe(2);
    expect(snapshot.totals.readErrors.get('ipoib')).toBe(0);
    const sysfs = snapshot.reports.find((r) => r.collector === 'sysfs')!;
    expect(sysfs.success).toBe(true);
    expect(sysfs.finishedAt).toBe(1_700_000_010);
    expect(sysfs.durationSeconds).toBeGreaterThan(0);
  });

  it('marks a cut-off cycle failed and keeps the time of the last finished one', async () => {
    const c = collection();
    await c.collectHost();
    c.recordOverrun(['sysfs', 'ipoib'], 10_000);
    const reports = c.snapshot!.reports;
    expect(reports.map((r) => [r.collector, r.success, r.finishedAt])).toEqual([
      ['sysfs', false, 1_700_000_000],
      ['ipoib', false, 1_700_000_000],
    ]);
    expect(c.snapshot!.totals.readErrors.get('sysfs')).toBe(1);
  });

  it('discards the results of a cycle whose deadline passed', async () => {
    const c = collection();
    await c.collectHost();
    const before = c.snapshot;
    const controller = new AbortController();
    controller.abort();
    await writeFile(stateFile('mlx5_2'), '4: ACTIVE\n');
    await c.collectHost(controller.signal);
    expect(c.snapshot).toBe(before);
  });

  it('fails the collector when the class directory cannot be listed', async () => {
    const c = collection();
    await rm(path.join(tree.root, 'class/infiniband'), { recursive: true });
    await writeFile(path.join(tree.root, 'class/infiniband'), 'not a directory');
    await c.collectHost();
    const sysfs = c.snapshot!.reports.find((r) => r.collector === 'sysfs')!;
    expect(sysfs.success).toBe(false);
    expect(sysfs.errors[0]!.message).toMatch(/cannot list/);
  });
});

describe('Collection, between full readings', () => {
  it('samples port states every interval, so a flap between two scrapes is counted', async () => {
    const c = collection();
    await c.collectHost();
    expect(c.hostFresh(10_000)).toBe(true);
    await writeFile(stateFile('mlx5_0'), '1: DOWN\n');
    c.sampleStates();
    await writeFile(stateFile('mlx5_0'), '4: ACTIVE\n');
    c.sampleStates();
    // The served snapshot is outdated by the change: the next scrape reads the host again.
    expect(c.hostFresh(10_000)).toBe(false);
    expect(c.snapshot!.totals.stateChanges.get('mlx5_0/1')).toBe(0);
    await c.collectHost();
    expect(c.snapshot!.totals.stateChanges.get('mlx5_0/1')).toBe(2);
    expect(c.snapshot!.devices.find((d) => d.name === 'mlx5_0')!.ports[0]!.state?.name).toBe('ACTIVE');
  });

  it('a sample that finds a device gone or new outdates the snapshot; one that finds nothing new does not', async () => {
    let now = 1_700_000_000_000;
    const c = collection(() => now);
    await c.collectHost();
    now += 6_000;
    c.sampleStates();
    expect(c.hostFresh(10_000)).toBe(true);
    expect(c.lastReadingAt).toBe(now);
    await rm(path.join(tree.root, 'class/infiniband/mlx5_7'), { recursive: true });
    now += 1_000;
    c.sampleStates();
    expect(c.hostFresh(10_000)).toBe(false);
    now += 10_000;
    expect(c.hostFresh(10_000)).toBe(false);
  });

  it('reads identity files again after IDENTITY_MAX_AGE_MS or a state change, not at every reading', async () => {
    let now = 1_700_000_000_000;
    const c = collection(() => now);
    const description = () => c.snapshot!.devices.find((d) => d.name === 'mlx5_0')!.nodeDesc;
    await c.collectHost();
    const before = description();
    await writeFile(path.join(tree.root, 'class/infiniband/mlx5_0/node_desc'), 'renamed host\n');
    now += 10_000;
    await c.collectHost();
    expect(description()).toBe(before);
    now += IDENTITY_MAX_AGE_MS;
    await c.collectHost();
    expect(description()).toBe('renamed host');

    // A port that changes state has its device's identity read again at the next reading.
    await writeFile(path.join(tree.root, 'class/infiniband/mlx5_0/node_desc'), 'renamed again\n');
    await writeFile(stateFile('mlx5_0'), '1: DOWN\n');
    c.sampleStates();
    await c.collectHost();
    expect(description()).toBe('renamed again');
  });
});

describe('Collection with files kept open', () => {
  it('keeps the files read at every reading, sees changes, and closes the files of what went away', async () => {
    const logger = pino({ level: 'silent' });
    // The copy's directories were made just now; a clock a minute ahead makes them quiet.
    const files = new SysfsFiles(tree.root, { keepOpen: true, now: () => Date.now() + 60_000 });
    const kept = new Collection({ files, devices: NO_DEVICE_FILTER, expectations: [], logger, errors: new RecurringErrors(logger), collectors: ['sysfs', 'ipoib'], commands: [] });
    try {
      await kept.collectHost();
      const all = files.keptFiles;
      expect(all).toBeGreaterThan(100);
      await kept.collectHost();
      expect(files.keptFiles).toBe(all);

      // Written in place: read through the kept descriptor.
      await writeFile(path.join(tree.root, 'class/infiniband/mlx5_0/ports/1/counters/symbol_error'), '4242\n');
      await kept.collectHost();
      const text = renderSnapshot(kept.snapshot!, build, { portStateSeries: false });
      expect(text).toContain('infiniband_port_symbol_errors_total{device="mlx5_0",port="1"} 4242');

      const mlx5_1 = readdirSync(path.join(tree.root, 'class/infiniband/mlx5_1/ports/1/counters')).length;
      await rm(path.join(tree.root, 'class/infiniband/mlx5_1'), { recursive: true });
      await rm(path.join(tree.root, 'class/net/ib1'), { recursive: true });
      await kept.collectHost();
      expect(kept.snapshot!.devices.map((device) => device.name)).not.toContain('mlx5_1');
      expect(kept.snapshot!.ipoib.map((iface) => iface.name)).not.toContain('ib1');
      expect(files.keptFiles).toBeLessThan(all - mlx5_1);
    } finally {
      kept.close();
    }
    expect(files.keptFiles).toBe(0);
  });
});

describe('Collection, in the log', () => {
  const device = (name: string) => path.join(tree.root, 'class/infiniband', name);
  const parked = (name: string) => path.join(tree.root, `parked-${name}`);

  it('says once when a device disappears or appears after start, whichever reading sees it first', async () => {
    const { logger, lines, messages } = logLines('info');
    const c = collection(undefined, logger);
    await c.collectHost();
    expect(messages()).toEqual(['found 13 InfiniBand device(s)']);
    await rename(device('mlx5_7'), parked('mlx5_7'));
    c.sampleStates();
    await c.collectHost();
    c.sampleStates();
    await rename(parked('mlx5_7'), device('mlx5_7'));
    await rename(device('mlx5_6'), parked('mlx5_6'));
    await c.collectHost();
    await c.collectHost();
    expect(messages().slice(1)).toEqual(['InfiniBand device disappeared: mlx5_7', 'InfiniBand device appeared: mlx5_7', 'InfiniBand device disappeared: mlx5_6']);
    expect(lines[1]).toMatchObject({ level: 40, devices: ['mlx5_7'] });
    expect(lines[2]).toMatchObject({ level: 30, devices: ['mlx5_7'] });
  });

  it('never says "works again" of a device that was unplugged; says it when the device is back and reads well', async () => {
    const { logger, messages } = logLines('info');
    const c = collection(undefined, logger);
    await writeFile(stateFile('mlx5_7'), 'garbage\n');
    await c.collectHost();
    await rename(device('mlx5_7'), parked('mlx5_7'));
    await c.collectHost();
    await c.collectHost();
    expect(messages()).toEqual(['found 13 InfiniBand device(s)', 'read failed; repeats of this error are summarised hourly', 'InfiniBand device disappeared: mlx5_7']);
    await rename(parked('mlx5_7'), device('mlx5_7'));
    await writeFile(stateFile('mlx5_7'), '4: ACTIVE\n');
    await c.collectHost();
    expect(messages().slice(3)).toEqual(['InfiniBand device appeared: mlx5_7', 'read works again']);
  });
});
