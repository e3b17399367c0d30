// The kernel log: real lines of sick and healthy mlx5 adapters (test/fixtures/kmsg/) as /dev/kmsg
// records, what is counted of them, and the follower of a plain file (from its end on, rotation,
// records cut at their limit).
import { appendFileSync, mkdtempSync, renameSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { KERNEL_LOG } from '../../../src/files/bounded-file.js';
import { KmsgFollower } from '../../../src/sources/kmsg/follower.js';
import { classifyKernelMessage, parseKmsgHeaderLine, type KmsgRecord } from '../../../src/sources/kmsg/kernel-message.js';
import { fixtureRecords } from '../../support/kmsg-records.js';

function eventsOf(name: string) {
  return fixtureRecords(name).flatMap((text) => {
    const record = parseKmsgHeaderLine(text.trimEnd());
    expect(record, text).toBeDefined();
    const event = classifyKernelMessage(record!);
    return event ? [event] : [];
  });
}

describe('what counts in the kernel log', () => {
  it.each([
    ['health-compromised.log', [{ subject: { pci: '0000:5e:00.0' }, kind: 'health_compromised' }]],
    ['cmd-timeout.log', Array.from({ length: 3 }, () => ({ subject: { pci: '0000:61:00.0' }, kind: 'cmd_timeout' }))],
    ['harmless-probe-and-cable.log', []],
    ['harmless-memory-registration.log', []],
    ['harmless-probe-failure.log', []],
    [
      'events-source-format.log',
      ['fatal', 'module_error', 'pci_error', 'pci_error', 'pci_error', 'tx_timeout', 'link_down'].map((kind) => ({
        subject: { pci: '0000:3b:00.0' },
        kind,
      })),
    ],
  ])('%s', (name, expected) => {
    expect(eventsOf(name)).toEqual(expected);
  });

  it('names the device from DEVICE= of the record, and an InfiniBand device from its messages', () => {
    expect(
      classifyKernelMessage({
        message: "mlx5_core 0000:3b:00.0: poll_health:174: device's health compromised - reached miss count",
        device: '+pci:0000:3B:00.0',
      }),
    ).toEqual({ subject: { pci: '0000:3b:00.0' }, kind: 'health_compromised' });
    expect(
      classifyKernelMessage({
        message: 'infiniband mlx5_2: wait_func:1132:(pid 7): QUERY_VPORT_COUNTER(0x770) timeout. Will cause a leak of a command resource',
      }),
    ).toEqual({ subject: { device: 'mlx5_2' }, kind: 'cmd_timeout' });
    // Another driver's words are not an adapter's.
    expect(
      classifyKernelMessage({
        message: 'nvme 0000:01:00.0: PCIe Bus Error: severity=Uncorrectable (Fatal), type=Inaccessible, (Unregistered Agent ID)',
      }),
    ).toBeUndefined();
  });

  it('reads the header and the DEVICE= continuation of a record', () => {
    expect(parseKmsgHeaderLine('3,1234,5120331870,-,caller=T12;mlx5_core 0000:3b:00.0: x')).toEqual({
      sequence: 1234,
      usec: 5120331870,
      message: 'mlx5_core 0000:3b:00.0: x',
    });
    expect(parseKmsgHeaderLine('[ 1.2] mlx5_core 0000:3b:00.0: x')).toBeUndefined();
  });
});

describe('following a plain file', () => {
  const dirs: string[] = [];
  const followers: KmsgFollower[] = [];
  afterEach(() => {
    for (const follower of followers.splice(0)) follower.close();
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  function logFile(content: string): string {
    const dir = mkdtempSync(path.join(tmpdir(), 'ibx-kmsg-'));
    dirs.push(dir);
    const file = path.join(dir, 'kmsg');
    writeFileSync(file, content);
    return file;
  }
  function follow(
    file: string,
    fromStart = false,
  ): { follower: KmsgFollower; drain: () => { records: KmsgRecord[]; counts: ReturnType<KmsgFollower['drain']> } } {
    const follower = new KmsgFollower(file, fromStart);
    followers.push(follower);
    return {
      follower,
      drain: () => {
        const records: KmsgRecord[] = [];
        const counts = follower.drain((record) => records.push(record));
        return { records, counts };
      },
    };
  }

  it('starts at its end: what it held before is never read', () => {
    const file = logFile(fixtureRecords('health-compromised.log').join(''));
    const { drain } = follow(file);
    expect(drain().records).toEqual([]);
    appendFileSync(file, fixtureRecords('cmd-timeout.log', 100).join(''));
    const { records } = drain();
    expect(records).toHaveLength(8);
    expect(records[0]!.sequence).toBe(100);
    expect(drain().records).toEqual([]);
  });

  it('keeps a line written in two parts, and DEVICE= of the continuation lines', () => {
    const file = logFile('');
    const { drain } = follow(file);
    appendFileSync(file, "3,7,100,-;mlx5_core 0000:3b:00.0: poll_health:174: device's health ");
    expect(drain().records).toEqual([]);
    appendFileSync(file, 'compromised - reached miss count\n SUBSYSTEM=pci\n DEVICE=+pci:0000:3b:00.0\nnot a record\n');
    const { records, counts } = drain();
    expect(records).toEqual([
      {
        sequence: 7,
        usec: 100,
        message: "mlx5_core 0000:3b:00.0: poll_health:174: device's health compromised - reached miss count",
        device: '+pci:0000:3b:00.0',
      },
    ]);
    expect(counts.unparsed).toBe(1);
  });

  it('follows it through rotation (a new file at its path) and truncation', () => {
    const file = logFile('');
    const { drain } = follow(file);
    appendFileSync(file, fixtureRecords('cmd-timeout.log').join(''));
    expect(drain().records).toHaveLength(8);
    renameSync(file, `${file}.1`);
    appendFileSync(`${file}.1`, fixtureRecords('health-compromised.log', 50).slice(0, 1).join(''));
    writeFileSync(file, fixtureRecords('health-compromised.log', 60).slice(0, 2).join(''));
    // The rotated file's last line is lost only if it came after the rotation was seen; here the new file is read from its start.
    expect(drain().records.map((record) => record.sequence)).toEqual([60, 61]);
    truncateSync(file, 0);
    appendFileSync(file, fixtureRecords('health-compromised.log', 70).slice(0, 1).join(''));
    expect(drain().records.map((record) => record.sequence)).toEqual([70]);
  });

  it('cuts a record at its limit, whatever the line holds', () => {
    const file = logFile('');
    const { drain } = follow(file);
    appendFileSync(file, `3,1,1,-;${'x'.repeat(3 * 1024 * 1024)}\n3,2,2,-;mlx5_core 0000:3b:00.0 ib0: Link down\n`);
    const { records, counts } = drain();
    expect(records.map((record) => record.sequence)).toEqual([1, 2]);
    expect(records[0]!.message.length).toBeLessThanOrEqual(KERNEL_LOG.maxBytes);
    expect(counts.truncated).toBe(1);
  });

  it('check reads what the file holds', () => {
    const file = logFile(fixtureRecords('cmd-timeout.log').join(''));
    expect(follow(file, true).drain().records).toHaveLength(8);
  });

  it('refuses what is neither a file nor a character device', () => {
    const file = logFile('');
    expect(() => new KmsgFollower(path.dirname(file))).toThrow(/is a directory, not a regular file or a character device/);
  });
});
