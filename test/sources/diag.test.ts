// The diag parsers on outputs recorded from the real tools (infiniband-diags 44 on ibsim).
import { describe, expect, it } from 'vitest';
import { iberror, parseMadDump } from '../../src/sources/diag/mad-dump.js';
import { countersFromPerfquery, missingCounters, parsePerfquery } from '../../src/sources/diag/perfquery.js';
import { isSubnetManagerUnreachable, parseSminfo } from '../../src/sources/diag/sminfo.js';
import { bestCommonEnabled, parseNodeDescription, parseNodeInfo, parsePortInfo, type PortInfo } from '../../src/sources/diag/smpquery.js';
import { recording } from '../support/replay.js';

const stdout = (scenario: string, stem: string): string => recording('diag', scenario, stem).stdout;

describe('sminfo', () => {
  it.each([
    ['sm-master', 'sminfo', { lid: 1, guid: '0x0002c90200400000', activityCount: 64, priority: 10, state: 'MASTER' }],
    ['two-sms', 'sminfo-master', { lid: 1, guid: '0x0002c90200400000', activityCount: 104, priority: 10, state: 'MASTER' }],
    ['two-sms', 'sminfo-local', { lid: 4, guid: '0x0002c90300a1b3d1', activityCount: 39, priority: 5, state: 'STANDBY' }],
  ])('%s/%s', (scenario, stem, expected) => {
    expect(parseSminfo(stdout(scenario, stem))).toEqual(expected);
  });

  it.each([
    ['sminfo: sm lid 1 sm guid 0x100001, activity count 89 priority 0 state 3 SMINFO_MASTER\n', 'MASTER'],
    ['sminfo: sm lid 7 sm guid 0x100001, activity count 0 priority 15 state 1 SMINFO_DISCOVER\n', 'DISCOVERING'],
    ['sminfo: sm lid 7 sm guid 0x100001, activity count 0 priority 15 state 0 SMINFO_NOTACT\n', 'NOTACTIVE'],
    ['sminfo: sm lid 7 sm guid 0x100001, activity count 0 priority 15 state 9 ???\n', undefined],
  ])('state of %j', (text, state) => {
    expect(parseSminfo(text)?.state).toBe(state);
  });

  it('tells "no SM answered" from other failures', () => {
    for (const [scenario, stem] of [
      ['no-sm', 'sminfo'],
      ['sm-killed', 'sminfo'],
      ['errors', 'sminfo-unreachable-lid'],
    ] as const) {
      const { stdout: out, exitCode } = recording('diag', scenario, stem);
      expect(out).toBe('sminfo: iberror: failed: query\n');
      expect(isSubnetManagerUnreachable(out, exitCode)).toBe(true);
      expect(parseSminfo(out)).toBeUndefined();
    }
    const usage = recording('diag', 'errors', 'sminfo-usage');
    expect(usage.exitCode).toBe(2);
    expect(isSubnetManagerUnreachable(usage.stdout, usage.exitCode)).toBe(false);
  });
});

describe('iberror texts (facts §8)', () => {
  it.each([
    ['no-sm', 'local-perfquery', 255, 'classportinfo query'],
    ['errors', 'perfquery-unreachable-lid', 255, 'classportinfo query'],
    ['errors', 'perfquery-bad-port', 255, 'perfquery'],
    ['errors', 'perfquery-x-bad-port', 255, 'perfextquery'],
    ['errors', 'perfquery-bad-ca', 255, "Failed to open 'mlx5_9' port '1'"],
    ['errors', 'smpquery-bad-port', 255, "Failed to open 'ibsim0' port '2'"],
    ['errors', 'perfquery-usage', 2, undefined],
    ['errors', 'smpquery-usage', 2, undefined],
  ])('%s/%s: exit %d, %s', (scenario, stem, exitCode, message) => {
    const recorded = recording('diag', scenario, stem);
    expect(recorded.exitCode).toBe(exitCode);
    expect(iberror(recorded.stdout)).toBe(message);
    expect(parsePerfquery(recorded.stdout)).toBeUndefined();
  });

  it('keeps the MAD failure detail on stderr', () => {
    expect(recording('diag', 'sm-killed', 'sminfo').stderr).toMatch(/^ibwarn: \[\d+\] mad_rpc: _do_madrpc failed; dport \(Lid 1\)$/m);
    expect(recording('diag', 'errors', 'perfquery-usage').stderr).toMatch(/^perfquery: unrecognized option '--bogus'$/m);
  });
});

describe('perfquery', () => {
  it('reads the header and every counter of a basic query', () => {
    const reading = parsePerfquery(stdout('sm-master', 'peer-perfquery'))!;
    expect(reading).toMatchObject({ extended: false, lid: 1, port: 3, capabilityMask: 0x1300 });
    expect(reading.values.get('SymbolErrorCounter')).toBe(65535n);
    expect(reading.values.get('LinkErrorRecoveryCounter')).toBe(7n);
    expect(reading.values.get('PortXmitWait')).toBe(4242n);
  });

  it('exports error counters with their widths and flags saturation', () => {
    const counters = countersFromPerfquery(parsePerfquery(stdout('sm-master', 'peer-perfquery')), undefined);
    const byName = new Map(counters.map((c) => [c.name, c]));
    expect(byName.get('symbol_errors')).toEqual({ name: 'symbol_errors', value: 65535, saturated: true });
    expect(byName.get('link_error_recoveries')).toEqual({ name: 'link_error_recoveries', value: 7, saturated: false });
    expect(byName.get('transmit_wait')).toEqual({ name: 'transmit_wait', value: 4242, saturated: false });
    // 32-bit data counters of the basic query count 4-byte words.
    expect(byName.get('transmit_data_bytes')?.value).toBe(1224 * 4);
    expect(byName.has('unicast_transmit_packets')).toBe(false);
  });

  it('takes data and packet counters from -x (64-bit) and error counters from the basic query', () => {
    const basic = parsePerfquery(stdout('sm-master', 'local-perfquery'));
    const extended = parsePerfquery(stdout('sm-master', 'local-perfquery-x'))!;
    expect(extended).toMatchObject({ extended: true, lid: 4, port: 1, capabilityMask: 0x1200 });
    const byName = new Map(countersFromPerfquery(basic, extended).map((c) => [c.name, c]));
    expect(byName.get('link_downed')).toEqual({ name: 'link_downed', value: 255, saturated: true });
    expect(byName.get('receive_errors')).toEqual({ name: 'receive_errors', value: 12, saturated: false });
    expect(byName.get('transmit_data_bytes')).toEqual({ name: 'transmit_data_bytes', value: 1296 * 4, saturated: false });
    expect(byName.get('unicast_receive_packets')).toEqual({ name: 'unicast_receive_packets', value: 0, saturated: false });
    expect(byName.size).toBe(21);
  });

  it('leaves PortXmitWait out when the PMA does not implement it', () => {
    const text = stdout('sm-master', 'peer-perfquery').replace('CapMask: 0x1300', 'CapMask: 0x0300');
    const names = countersFromPerfquery(parsePerfquery(text), undefined).map((c) => c.name);
    expect(names).not.toContain('transmit_wait');
    expect(names).toContain('symbol_errors');
  });

  it('asks only for what sysfs lacks', () => {
    expect(missingCounters(new Set())).toEqual({ errors: true, traffic: true });
    const all = countersFromPerfquery(
      parsePerfquery(stdout('sm-master', 'local-perfquery')),
      parsePerfquery(stdout('sm-master', 'local-perfquery-x')),
    );
    expect(missingCounters(new Set(all.map((c) => c.name)))).toEqual({ errors: false, traffic: false });
    expect(missingCounters(new Set(all.filter((c) => !c.name.startsWith('unicast')).map((c) => c.name)))).toEqual({
      errors: false,
      traffic: true,
    });
  });
});

describe('smpquery', () => {
  it('reads the local PortInfo of a 1X QDR link', () => {
    expect(parsePortInfo(stdout('sm-master', 'local-portinfo'))).toEqual<PortInfo>({
      lid: 4,
      smLid: 1,
      capabilityMask: 0x50c048,
      linkState: 'Active',
      physicalState: 'LinkUp',
      widthSupported: [1, 4, 8, 12, 2],
      widthEnabled: [1],
      widthActive: 1,
      speedSupported: ['SDR', 'DDR', 'QDR'],
      speedEnabled: ['SDR', 'DDR', 'QDR'],
      speedActive: 'QDR',
    });
  });

  it('reads a port before any SM: Initialize, LID 0', () => {
    expect(parsePortInfo(stdout('no-sm', 'local-portinfo'))).toMatchObject({
      lid: 0,
      smLid: 0,
      linkState: 'Initialize',
      widthEnabled: [1, 4],
      widthActive: 4,
    });
  });

  it('reads the LID of a switch from its port 0, not from its external port', () => {
    expect(parsePortInfo(stdout('sm-master', 'peer-portinfo'))?.lid).toBe(0);
    expect(parsePortInfo(stdout('sm-master', 'peer-switch-portinfo'))?.lid).toBe(1);
  });

  it('reads extended speeds; an active extended speed wins over LinkSpeedActive', () => {
    const text = [
      '# Port info: Lid 2 port 1',
      'LinkWidthEnabled:................1X or 4X',
      'LinkWidthActive:.................4X',
      'LinkSpeedActive:.................10.0 Gbps',
      'LinkSpeedEnabled:................2.5 Gbps or 5.0 Gbps or 10.0 Gbps',
      'LinkSpeedExtActive:..............25.78125 Gbps',
      'LinkSpeedExtSupported:...........14.0625 Gbps or 25.78125 Gbps or 53.125 Gbps',
      'LinkSpeedExtEnabled:.............14.0625 Gbps or 25.78125 Gbps',
      '',
    ].join('\n');
    expect(parsePortInfo(text)).toMatchObject({
      speedActive: 'EDR',
      speedEnabled: ['SDR', 'DDR', 'QDR', 'FDR', 'EDR'],
      speedSupported: ['FDR', 'EDR', 'HDR'],
    });
  });

  it('reads the peer node through the direct route', () => {
    expect(parseNodeInfo(stdout('sm-master', 'peer-nodeinfo'))).toEqual({
      nodeType: 'Switch',
      nodeGuid: '0x0002c90200400000',
      portGuid: '0x0002c90200400000',
      localPort: 3,
      numberOfPorts: 8,
    });
    expect(parseNodeDescription(stdout('sm-master', 'peer-nodedesc'))).toBe('sw1 IS5030');
  });

  it('expects the best width and speed both ends have enabled', () => {
    const local = parsePortInfo(stdout('sm-master', 'local-portinfo'))!;
    const peer = parsePortInfo(stdout('sm-master', 'peer-portinfo'))!;
    expect(bestCommonEnabled(local, peer)).toEqual({ width: 1, speed: 'QDR' });
    const healthy = parsePortInfo(stdout('no-sm', 'local-portinfo'))!;
    expect(bestCommonEnabled(healthy, parsePortInfo(stdout('no-sm', 'peer-portinfo'))!)).toEqual({ width: 4, speed: 'QDR' });
    expect(
      bestCommonEnabled({ ...healthy, speedEnabled: ['SDR', 'FDR', 'EDR'] }, { ...healthy, speedEnabled: ['SDR', 'QDR', 'FDR'] }),
    ).toEqual({ width: 4, speed: 'FDR' });
    expect(bestCommonEnabled({ ...healthy, widthEnabled: [2] }, { ...healthy, widthEnabled: [1, 4] }).width).toBeUndefined();
  });

  it('parses libibmad dump lines and skips flag continuation lines', () => {
    const fields = parseMadDump(stdout('two-sms', 'local-portinfo'));
    expect(fields.get('CapMask')).toBe('0x50c04a');
    expect(fields.has('IsSM')).toBe(false);
  });
});
