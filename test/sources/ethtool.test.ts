// `ethtool -k` parsing on recorded outputs of every ethtool generation, the TSO erratum's device
// test, and the offload source through a runner (replayed outputs, then the real ethtool).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { hasTsoErratum } from '../../src/model/tso-erratum.js';
import { ExecaRunner, type CommandResult, type CommandRunner } from '../../src/sources/command-runner.js';
import {
  ETHTOOL_TIMEOUT_MS,
  parseOffloadFeatures,
  readTcpSegmentationOffload,
  tcpSegmentationOffload,
  type EthtoolCommand,
} from '../../src/sources/ethtool.js';
import { requireSystemTools } from '../support/system.js';

const FIXTURES = fileURLToPath(new URL('../fixtures/ethtool/', import.meta.url));
const fixture = (name: string): string => readFileSync(path.join(FIXTURES, name), 'utf8');

describe('parseOffloadFeatures and tcpSegmentationOffload', () => {
  it.each([
    ['ethtool-6.1-eth0.txt', { enabled: true, fixed: false }],
    ['ethtool-6.1-lo-tso-off.txt', { enabled: false, fixed: false }],
    ['ethtool-excerpt-tso-fixed-off.txt', { enabled: false, fixed: true }],
    ['ethtool-2.6-offload-parameters.txt', { enabled: true, fixed: false }],
    ['ethtool-2007-spaced-names.txt', { enabled: true, fixed: false }],
  ])('%s', (file, expected) => {
    const features = parseOffloadFeatures(fixture(file));
    expect(features).toBeDefined();
    expect(tcpSegmentationOffload(features!)).toEqual(expected);
  });

  it('reads sub-features, [fixed] and [requested on] markers', () => {
    const eth0 = parseOffloadFeatures(fixture('ethtool-6.1-eth0.txt'))!;
    expect(eth0.get('tx-tcp-ecn-segmentation')).toEqual({ enabled: false, fixed: true });
    expect(eth0.get('tx-tcp-mangleid-segmentation')).toEqual({ enabled: false, fixed: false });
    expect(eth0.get('large-receive-offload')).toEqual({ enabled: false, fixed: true });
    expect(eth0.has('features-for-eth0')).toBe(false);
    const excerpt = parseOffloadFeatures(fixture('ethtool-excerpt-tso-fixed-off.txt'))!;
    expect(excerpt.get('rx-checksumming')).toEqual({ enabled: false, fixed: false });
    // Old ethtool's spaced names become the dashed names of today's.
    expect(parseOffloadFeatures(fixture('ethtool-2007-spaced-names.txt'))!.get('scatter-gather')).toEqual({ enabled: true, fixed: false });
  });

  it('finds no feature in error texts', () => {
    expect(parseOffloadFeatures(fixture('ethtool-2005-not-supported.txt'))).toBeUndefined();
    expect(parseOffloadFeatures(fixture('ethtool-6.1-missing-interface.stderr'))).toBeUndefined();
    expect(parseOffloadFeatures('')).toBeUndefined();
  });
});

describe('hasTsoErratum', () => {
  it.each([
    // ConnectX DDR and QDR of revision A0, as mlx4 names them (hca_type = PCI device id in decimal).
    [{ name: 'mlx4_0', hcaType: 'MT25418', hwRev: 'a0' }, true],
    [{ name: 'mlx4_0', hcaType: 'MT26428', hwRev: 'a0' }, true],
    [{ name: 'ibp4s0', hcaType: 'MT26428', hwRev: 'A0' }, true],
    // hca_type absent (an old kernel): the kernel name tells mlx4.
    [{ name: 'mlx4_1', hcaType: undefined, hwRev: 'a0' }, true],
    // The ConnectX-2 of the same id is revision b0; ConnectX-3 revisions are 0 and 1.
    [{ name: 'mlx4_0', hcaType: 'MT26428', hwRev: 'b0' }, false],
    [{ name: 'mlx4_0', hcaType: 'MT4099', hwRev: '1' }, false],
    // mthca (InfiniHost III) prints its revision the same way but has no UD TSO.
    [{ name: 'mthca0', hcaType: 'MT25208', hwRev: 'a0' }, false],
    [{ name: 'mlx5_0', hcaType: 'MT4123', hwRev: '0' }, false],
    [{ name: 'mlx4_0', hcaType: 'MT26428', hwRev: undefined }, false],
  ])('%o → %s', (device, expected) => {
    expect(hasTsoErratum(device)).toBe(expected);
  });
});

/** Replays one recorded outcome per interface name. */
class RecordedEthtool implements CommandRunner<EthtoolCommand> {
  readonly calls: string[] = [];
  constructor(private readonly outcomes: Record<string, Partial<CommandResult<EthtoolCommand>>>) {}

  async run(command: EthtoolCommand, args: readonly string[]): Promise<CommandResult<EthtoolCommand>> {
    this.calls.push([command, ...args].join(' '));
    const outcome = this.outcomes[args[1]!] ?? {};
    return { command, args, outcome: 'exited', exitCode: 0, stdout: '', stderr: '', durationMs: 1, ...outcome };
  }
}

describe('readTcpSegmentationOffload', () => {
  it('reads each interface once and records failures against the ipoib collector', async () => {
    const runner = new RecordedEthtool({
      ib0: { stdout: fixture('ethtool-6.1-eth0.txt') },
      'ib0.8001': { stdout: fixture('ethtool-excerpt-tso-fixed-off.txt') },
      ib1: { exitCode: 1, stderr: fixture('ethtool-6.1-missing-interface.stderr') },
      ib2: { outcome: 'timeout', exitCode: undefined },
      ib3: { stdout: fixture('ethtool-2005-not-supported.txt') },
    });
    const { readings, errors } = await readTcpSegmentationOffload(runner, ['ib0', 'ib0.8001', 'ib1', 'ib2', 'ib3']);
    expect(runner.calls).toEqual(['ethtool -k ib0', 'ethtool -k ib0.8001', 'ethtool -k ib1', 'ethtool -k ib2', 'ethtool -k ib3']);
    expect(readings.get('ib0')).toEqual({ state: 'on', fixed: false });
    expect(readings.get('ib0.8001')).toEqual({ state: 'off', fixed: true });
    expect(readings.get('ib1')).toEqual({
      state: 'unknown',
      reason: 'ethtool -k ib1: exit code 1: netlink error: no device matches name (offset 24) | netlink error: No such device',
    });
    expect(readings.get('ib2')).toEqual({ state: 'unknown', reason: `ethtool -k ib2: killed after ${ETHTOOL_TIMEOUT_MS} ms time limit` });
    expect(readings.get('ib3')).toMatchObject({ state: 'unknown', reason: expect.stringContaining('no tcp-segmentation-offload line') });
    expect(errors.map((error) => error.item)).toEqual(['ethtool -k ib1', 'ethtool -k ib2', 'ethtool -k ib3']);
  });

  it('says ethtool is not installed when there is no runner', async () => {
    const { readings, errors } = await readTcpSegmentationOffload(undefined, ['ib0']);
    expect(readings.get('ib0')).toEqual({ state: 'unknown', reason: 'ethtool is not installed' });
    expect(errors).toEqual([]);
  });

  const { paths, skipReason } = requireSystemTools('real ethtool', { ethtool: 'ethtool' });
  it.skipIf(skipReason !== undefined)('runs the real ethtool through the command runner', async () => {
    const runner = new ExecaRunner<EthtoolCommand>({ paths: { ethtool: paths.ethtool! }, timeoutMs: ETHTOOL_TIMEOUT_MS, maxConcurrent: 1 });
    const { readings } = await readTcpSegmentationOffload(runner, ['lo', 'ibx-no-such-interface']);
    // Whatever the loopback's setting on this host, it is read as a state, not an error.
    expect(['on', 'off']).toContain(readings.get('lo')?.state);
    expect(readings.get('ibx-no-such-interface')).toMatchObject({
      state: 'unknown',
      reason: expect.stringMatching(/^ethtool -k ibx-no-such-interface: exit code \d+/),
    });
  });
});
