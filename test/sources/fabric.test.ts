// The fabric-mode parsers on outputs recorded from the real tools (see recordings.ts), plus the
// hand-written variants real fabrics print and the simulator does not (FDR10, routers, XDR…).
import { describe, expect, it } from 'vitest';
import { CacheFormatError, parseDiscoveryCache, pruneDiscoveryCache } from '../../src/sources/fabric/discovery-cache.js';
import { parseIblinkinfo } from '../../src/sources/fabric/iblinkinfo.js';
import { parseIbnetdiscover, reportedDuplicateGuids } from '../../src/sources/fabric/ibnetdiscover.js';
import { parseIbqueryerrors } from '../../src/sources/fabric/ibqueryerrors.js';
import { parseNodeNameMap } from '../../src/config/node-name-map.js';
import { parsePerfqueryLoop } from '../../src/sources/fabric/perfquery-counters.js';
import { parseMemberCounts, parseMulticastGroups, parseSmInfoRecords } from '../../src/sources/fabric/saquery.js';
import { HOST11, HOST12, LEAF1, LEAF2, LEAF3, SPINE1, SPINE2, recordedCache, stdout } from '../support/fabric-recordings.js';
import { recording as recorded } from '../support/replay.js';

describe('ibnetdiscover', () => {
  const topology = parseIbnetdiscover(stdout('healthy', 'ibnetdiscover'));

  it('finds every node of the recorded fat tree with its type, description, ports, LID and IDs', () => {
    expect(topology.unparsed.count).toBe(0);
    expect(topology.nodes.filter((node) => node.type === 'switch')).toHaveLength(5);
    expect(topology.nodes.filter((node) => node.type === 'ca')).toHaveLength(9);
    expect(topology.nodes.find((node) => node.guid === SPINE1)).toEqual({
      guid: SPINE1,
      type: 'switch',
      description: 'MF0;spine-1:SX6036/U1',
      portCount: 4,
      portGuid: SPINE1,
      lid: 2,
      vendorId: 0x2c9,
      deviceId: 0xc738,
    });
    expect(topology.nodes.find((node) => node.guid === HOST11)).toEqual({
      guid: HOST11,
      type: 'ca',
      description: 'node11 HCA-1',
      portCount: 1,
      portGuid: undefined,
      lid: undefined,
      vendorId: 0x2c9,
      deviceId: 0x1003,
    });
  });

  it('lists every cable from both ends, with CA port GUIDs and LIDs, the line and the rate it trained at', () => {
    expect(topology.ports).toHaveLength(2 * (6 + 9));
    expect(topology.ports).toContainEqual({
      nodeGuid: SPINE1,
      port: 1,
      portGuid: undefined,
      lid: undefined,
      peer: { nodeGuid: LEAF1, type: 'switch', port: 4, portGuid: undefined },
      line: 42,
      width: 1,
      speed: 'QDR',
    });
    expect(topology.ports).toContainEqual({
      nodeGuid: LEAF1,
      port: 1,
      portGuid: undefined,
      lid: undefined,
      peer: { nodeGuid: HOST11, type: 'ca', port: 1, portGuid: '0x0002c90300a10011' },
      line: 22,
      width: 4,
      speed: 'QDR',
    });
    expect(topology.ports).toContainEqual({
      nodeGuid: HOST11,
      port: 1,
      portGuid: '0x0002c90300a10011',
      lid: 1,
      peer: { nodeGuid: LEAF1, type: 'switch', port: 1, portGuid: undefined },
      line: expect.any(Number),
      width: 4,
      speed: 'QDR',
    });
  });

  it('after a host cable was pulled the host is gone and the switch lists one cable fewer', () => {
    const pulled = parseIbnetdiscover(stdout('pulled', 'ibnetdiscover'));
    expect(pulled.nodes.map((node) => node.guid)).not.toContain(HOST12);
    expect(pulled.ports.filter((port) => port.nodeGuid === LEAF1).map((port) => port.port)).toEqual([1, 3, 4, 5]);
  });

  it.each([
    [
      'a router record',
      'rtguid=0x2c9000000000a\nRt\t2 "R-0002c9000000000a"\t\t# "gw-1"\n[1](2c9000000000b) \t"S-0002c90200410000"[4]\t\t# lid 20 lmc 0 "sw" lid 2 4xEDR\n',
      { nodes: 1, ports: 1, unparsed: 0 },
    ],
    [
      'an enhanced port 0 and external port numbers',
      'switchguid=0x1(1)\nSwitch\t36 "S-0000000000000001"\t\t# "core" enhanced port 0 lid 7 lmc 0\n[1][ext 1]\t"S-0000000000000002"[3][ext 3]\t\t# "edge" lid 9 4xHDR\n',
      { nodes: 1, ports: 1, unparsed: 0 },
    ],
    [
      'a description with quotes and hashes',
      'caguid=0x3\nCa\t1 "H-0000000000000003"\t\t# "node "7" # rack 2"\n',
      { nodes: 1, ports: 0, unparsed: 0 },
    ],
    ['a chassis line (with -g)', '\nChassis 1 (guid 0x2c902004a0f0f)\n', { nodes: 0, ports: 0, unparsed: 0 }],
    ['garbage between records', 'vendid=0x2c9\nthis is not ibnetdiscover\n\x00\x01binary\n', { nodes: 0, ports: 0, unparsed: 2 }],
    ['a port line outside any record', '[1]\t"S-0000000000000002"[3]\t\t# "edge" lid 9 4xHDR\n', { nodes: 0, ports: 0, unparsed: 1 }],
    ['a truncated node line', 'Switch\t36 "S-00000000\n', { nodes: 0, ports: 0, unparsed: 1 }],
  ])('%s', (_name, text, expected) => {
    const parsed = parseIbnetdiscover(text);
    expect({ nodes: parsed.nodes.length, ports: parsed.ports.length, unparsed: parsed.unparsed.count }).toEqual(expected);
  });

  it('a GUID two devices share: libibnetdisc says so on stderr, and the text shows only one of them', () => {
    const duplicate = recorded('fabric', 'duplicate-guid', 'ibnetdiscover');
    expect(reportedDuplicateGuids(duplicate.stderr)).toEqual(['0x0002c90300a10011']);
    expect(reportedDuplicateGuids(recorded('fabric', 'healthy', 'ibnetdiscover').stderr)).toEqual([]);
    const text = parseIbnetdiscover(duplicate.stdout);
    expect(text.unparsed.count).toBe(0);
    expect(text.nodes.filter((node) => node.type === 'ca')).toHaveLength(8);
  });

  it('reads a description with quotes to its end', () => {
    expect(parseIbnetdiscover('caguid=0x3\nCa\t1 "H-0000000000000003"\t\t# "node "7" # rack 2"\n').nodes[0]!.description).toBe(
      'node "7" # rack 2',
    );
  });
});

describe('ibnetdiscover cache', () => {
  const cache = parseDiscoveryCache(recordedCache());

  it('reads every node and port record of the recorded cache, down switch ports included', () => {
    expect(cache.fromNodeGuid).toBe('0x0002c90300a20020');
    expect(cache.nodes).toHaveLength(14);
    expect(cache.nodes.find((node) => node.guid === LEAF3)).toMatchObject({ type: 'switch', portCount: 8, lid: 6 });
    // 5 switches with their port 0 and every external port, 9 CA ports.
    expect(cache.ports).toHaveLength(5 + 4 + 4 + 8 + 8 + 8 + 9);
    expect(cache.ports.find((port) => port.nodeGuid === LEAF3 && port.port === 8)).toMatchObject({ peer: undefined });
  });

  it('decodes the enabled widths and speeds: 1X only on both ends of the degraded ISL, 1X or 4X elsewhere', () => {
    const enabled = (guid: string, port: number) => cache.ports.find((p) => p.nodeGuid === guid && p.port === port)?.enabled;
    expect(enabled(SPINE1, 1)).toEqual({ widthEnabled: [1], speedEnabled: ['SDR', 'DDR', 'QDR'] });
    expect(enabled(LEAF1, 4)).toEqual({ widthEnabled: [1], speedEnabled: ['SDR', 'DDR', 'QDR'] });
    expect(enabled(SPINE2, 1)).toEqual({ widthEnabled: [1, 4], speedEnabled: ['SDR', 'DDR', 'QDR'] });
    expect(cache.ports.find((p) => p.nodeGuid === SPINE1 && p.port === 1)?.peer).toEqual({ guid: LEAF1, port: 4 });
  });

  it('decodes extended and XDR speeds from raw PortInfo bytes', () => {
    const bytes = recordedCache().slice();
    const port = cache.ports.find((p) => p.nodeGuid === SPINE2 && p.port === 1)!;
    const info = port.start + 13;
    bytes[info + 63] = 0b00110; // LinkSpeedExtEnabled: EDR, HDR
    bytes[info + 56] = 0b001; // LinkSpeedExtEnabled2: XDR
    bytes[info + 29] = 0b10010; // LinkWidthEnabled: 4X, 2X
    expect(parseDiscoveryCache(bytes).ports.find((p) => p.nodeGuid === SPINE2 && p.port === 1)?.enabled).toEqual({
      widthEnabled: [4, 2],
      speedEnabled: ['SDR', 'DDR', 'QDR', 'EDR', 'HDR', 'XDR'],
    });
    bytes[info + 63] = 30; // "Extended link speeds disabled"
    expect(parseDiscoveryCache(bytes).ports.find((p) => p.nodeGuid === SPINE2 && p.port === 1)?.enabled?.speedEnabled).toEqual([
      'SDR',
      'DDR',
      'QDR',
      'XDR',
    ]);
  });

  it.each([
    ['an empty file', new Uint8Array(0), /truncated at byte 0/],
    ['another file', new TextEncoder().encode('#\n# Topology file: generated on Mon Nov 23\n'), /not an ibnetdiscover cache \(magic/],
    [
      'a future version',
      (() => {
        const b = recordedCache().slice();
        b[4] = 2;
        return b;
      })(),
      /unknown ibnetdiscover cache version 2/,
    ],
    ['a truncated file', recordedCache().slice(0, 5000), /truncated at byte/],
    ['trailing bytes', new Uint8Array([...recordedCache(), 0]), /1 bytes after the last port record/],
  ])('rejects %s with a reason', (_name, bytes, reason) => {
    expect(() => parseDiscoveryCache(bytes)).toThrow(CacheFormatError);
    expect(() => parseDiscoveryCache(bytes)).toThrow(reason);
  });

  it('prunes to the kept nodes (and the node discovery started from), cutting cables to the others', () => {
    const pruned = parseDiscoveryCache(pruneDiscoveryCache(recordedCache(), cache, (node) => node.guid === SPINE1 || node.guid === LEAF1));
    expect(pruned.nodes.map((node) => node.guid).sort()).toEqual([SPINE1, LEAF1, cache.fromNodeGuid].sort());
    expect(pruned.ports.find((p) => p.nodeGuid === SPINE1 && p.port === 1)?.peer).toEqual({ guid: LEAF1, port: 4 });
    expect(pruned.ports.find((p) => p.nodeGuid === SPINE1 && p.port === 2)?.peer).toBeUndefined();
    expect(pruned.ports.every((port) => [SPINE1, LEAF1, cache.fromNodeGuid].includes(port.nodeGuid))).toBe(true);
  });

  it('prunes from the nodes alone, the ports read from the bytes: the same records as the parse keeps', () => {
    const pruned = pruneDiscoveryCache(recordedCache(), { nodes: cache.nodes }, (node) => node.guid === LEAF1);
    const kept = [LEAF1, cache.fromNodeGuid];
    expect(parseDiscoveryCache(pruned).ports.map((p) => `${p.nodeGuid}/${p.port}`)).toEqual(
      cache.ports.filter((p) => kept.includes(p.nodeGuid)).map((p) => `${p.nodeGuid}/${p.port}`),
    );
  });

  it('refuses bytes that are not those the nodes were parsed from', () => {
    const longer = new Uint8Array([...recordedCache(), 0]);
    expect(() => pruneDiscoveryCache(longer, cache, () => true)).toThrow(CacheFormatError);
  });
});

describe('iblinkinfo --line', () => {
  it('reads every switch port of the recorded fabric, down ports included', () => {
    const { ports, unparsed } = parseIblinkinfo(stdout('healthy', 'iblinkinfo-switches'));
    expect(unparsed.count).toBe(0);
    expect(ports).toHaveLength(4 + 4 + 8 + 8 + 8);
    expect(ports.find((p) => p.portGuid === SPINE1 && p.port === 1)).toEqual({
      portGuid: SPINE1,
      lid: 2,
      port: 1,
      state: { id: 4, name: 'ACTIVE' },
      physicalState: { id: 5, name: 'LinkUp' },
      width: 1,
      speed: 'QDR',
      peer: { portGuid: LEAF1, port: 4 },
    });
    expect(ports.find((p) => p.portGuid === LEAF1 && p.port === 1)?.peer).toEqual({ portGuid: '0x0002c90300a10011', port: 1 });
    expect(ports.find((p) => p.portGuid === LEAF3 && p.port === 8)).toEqual({
      portGuid: LEAF3,
      lid: 6,
      port: 8,
      state: { id: 1, name: 'DOWN' },
      physicalState: { id: 2, name: 'Polling' },
      width: undefined,
      speed: undefined,
      peer: undefined,
    });
  });

  it("shows pulled cables as Down/Polling on both switch ends of an ISL and on the host cable's switch port", () => {
    const { ports } = parseIblinkinfo(stdout('pulled', 'iblinkinfo-switches'));
    for (const [guid, port] of [
      [LEAF1, 2],
      [LEAF3, 5],
      [SPINE2, 3],
    ] as const) {
      expect(ports.find((p) => p.portGuid === guid && p.port === port)).toMatchObject({
        state: { id: 1 },
        physicalState: { id: 2 },
        peer: undefined,
      });
    }
  });

  it('reads CA ports when run without --switches-only', () => {
    const { ports, unparsed } = parseIblinkinfo(stdout('healthy', 'iblinkinfo-all'));
    expect(unparsed.count).toBe(0);
    expect(ports.find((p) => p.portGuid === '0x0002c90300a10011')).toMatchObject({
      lid: 1,
      port: 1,
      width: 4,
      speed: 'QDR',
      peer: { portGuid: LEAF1, port: 1 },
    });
  });

  const line = (link: string, remote = '0x0002c90300a10011      1    1[  ] "node11 HCA-1" ( )') =>
    `0x0002c90200510000 "          MF0;leaf-1:SX6036/U1"      4    1[  ] ==(${link})==>  ${remote}`;
  it.each([
    ['FDR10', line(' 4X  10.0 Gbps (FDR10) Active/  LinkUp'), { width: 4, speed: 'FDR10', state: { id: 4, name: 'ACTIVE' } }],
    ['EDR', line(' 4X      25.78125 Gbps Active/  LinkUp'), { width: 4, speed: 'EDR' }],
    ['NDR on 2X', line(' 2X        106.25 Gbps Active/  LinkUp'), { width: 2, speed: 'NDR' }],
    [
      'INIT with LinkUp (no SM)',
      line(' 4X          10.0 Gbps Initialize/  LinkUp'),
      { state: { id: 2, name: 'INIT' }, physicalState: { id: 5, name: 'LinkUp' } },
    ],
    ['Armed', line(' 4X          10.0 Gbps  Armed/  LinkUp'), { state: { id: 3, name: 'ARMED' } }],
    [
      'a disabled port',
      line('                Down/Disabled', '           [  ] "" ( )'),
      { state: { id: 1 }, physicalState: { id: 3, name: 'Disabled' }, width: undefined },
    ],
    ['an unnamed state number', line(' 4X          10.0 Gbps   ?(5)/  LinkUp'), { state: { id: 5, name: 'ACTIVE_DEFER' } }],
    ['an unknown speed', line(` 4X ${'999.0 Gbps'.padStart(18)} Active/  LinkUp`), { width: 4, speed: undefined }],
    ['"Port not available"', line(' 4X          10.0 Gbps Active/  LinkUp', '    "Port not available"'), { peer: undefined }],
    [
      'a name with quotes',
      `0x0002c90200510000 "${'rack "7" sw'.padStart(30)}"      4    1[  ] ==( 4X          10.0 Gbps Active/  LinkUp)==>  0x0002c90300a10011      1    1[  ] "node "11"" ( )`,
      { peer: { portGuid: '0x0002c90300a10011', port: 1 } },
    ],
  ])('reads %s', (_name, text, expected) => {
    const { ports, unparsed } = parseIblinkinfo(text);
    expect(unparsed.count).toBe(0);
    expect(ports[0]).toMatchObject(expected);
  });

  it.each([
    [
      'the non-line format',
      'Switch: 0x0002c90200510000 leaf-1:\n           4    1[  ] ==( 4X 10.0 Gbps Active/  LinkUp)==>  1 1[  ] "x" ( )',
    ],
    ['an unknown state', line(' 4X          10.0 Gbps Sleeping/  LinkUp')],
    ['a cut line', line(' 4X          10.0 Gbps Active/  LinkUp').slice(0, 90)],
    ['an unknown remote part', line(' 4X          10.0 Gbps Active/  LinkUp', 'somewhere')],
  ])('counts %s as unparsed and skips it', (_name, text) => {
    const { ports, unparsed } = parseIblinkinfo(text);
    expect(ports).toEqual([]);
    expect(unparsed.count).toBeGreaterThan(0);
  });
});

describe('ibqueryerrors', () => {
  it('errors sweep: only ports with a non-zero counter, with their values; the all-ports line is not a port', () => {
    const sweep = parseIbqueryerrors(recorded('fabric', 'healthy', 'errors-switches').stdout, '');
    expect(sweep).toMatchObject({ complete: true, failures: [], unparsed: { count: 0 } });
    expect(sweep.ports.map((p) => [p.guid, p.port])).toEqual([
      [SPINE1, 2],
      [LEAF2, 1],
    ]);
    expect(Object.fromEntries(sweep.ports[0]!.values)).toEqual({
      SymbolErrorCounter: { value: 65535n, suffixed: false },
      LinkDownedCounter: { value: 3n, suffixed: false },
    });
    expect(sweep.ports[1]!.values.get('PortXmitWait')).toEqual({ value: 123456n, suffixed: false });
  });

  it('counters sweep: the eight extended data and packet counters of every switch port', () => {
    const sweep = parseIbqueryerrors(recorded('fabric', 'healthy', 'counters-switches').stdout, '');
    expect(sweep).toMatchObject({ complete: true, failures: [], unparsed: { count: 0 } });
    expect(sweep.ports).toHaveLength(32);
    expect([...sweep.ports.find((p) => p.guid === LEAF3 && p.port === 1)!.values.keys()]).toEqual([
      'PortXmitData',
      'PortRcvData',
      'PortXmitPkts',
      'PortRcvPkts',
      'PortUnicastXmitPkts',
      'PortUnicastRcvPkts',
      'PortMulticastXmitPkts',
      'PortMulticastRcvPkts',
    ]);
  });

  it('counters sweep with CAs: CA ports under their node GUID', () => {
    const sweep = parseIbqueryerrors(recorded('fabric', 'healthy', 'counters-all').stdout, '');
    expect(sweep.ports.find((p) => p.guid === HOST11)?.port).toBe(1);
  });

  it('failed queries: every warning with the LID and port it went to', () => {
    const errors = recorded('fabric', 'pma-failure', 'errors-switches');
    const sweep = parseIbqueryerrors(errors.stdout, errors.stderr);
    expect(sweep.complete).toBe(true);
    expect(sweep.ports).toEqual([]);
    expect(sweep.failures).toHaveLength(3 * 1 + 8 + 8 + 4);
    expect(sweep.failures).toContainEqual({ lid: 2, port: 0, message: 'classportinfo query failed on MF0;spine-1:SX6036/U1' });
    expect(sweep.failures).toContainEqual({ lid: 4, port: 3, message: 'IB_GSI_PORT_COUNTERS query failed on MF0;leaf-1:SX6036/U1' });
    const counters = recorded('fabric', 'pma-failure', 'counters-switches');
    const data = parseIbqueryerrors(counters.stdout, counters.stderr);
    expect(data.ports.map((p) => p.guid)).not.toContain(SPINE1);
    expect(data.ports.filter((p) => p.guid === SPINE2)).toHaveLength(4);
  });

  it('a run without its summary is incomplete', () => {
    const text = recorded('fabric', 'healthy', 'counters-switches').stdout;
    expect(parseIbqueryerrors(text.slice(0, text.indexOf('## Summary')), '').complete).toBe(false);
  });

  it.each([
    [
      '64-bit error counters (CapMask2 0x2) with their suffix',
      'Errors for 0x1 "sw"\n   GUID 0x1 port 3: [SymbolErrorCounter == 70000 (68.359K)]\n',
      { SymbolErrorCounter: { value: 70000n, suffixed: true } },
    ],
    [
      'a CA header without GUID',
      'Errors for "node1 HCA-1"\n   GUID 0x2c90300a10011 port 1: [PortRcvErrors == 2]\n',
      { PortRcvErrors: { value: 2n, suffixed: false } },
    ],
    [
      'a port line with link info',
      'Errors for 0x1 "sw"\n   GUID 0x1 port 3: [VL15Dropped == 1]\n       Link info:      2   3[  ] ==( 4X 10.0 Gbps Active/  LinkUp)==>  0x01 5 4[  ] "x" ( )\n',
      { VL15Dropped: { value: 1n, suffixed: false } },
    ],
  ])('reads %s', (_name, text, values) => {
    const sweep = parseIbqueryerrors(text, '');
    expect(sweep.unparsed.count).toBe(0);
    expect(Object.fromEntries(sweep.ports[0]!.values)).toEqual(values);
  });

  it('counts garbage as unparsed and skips it', () => {
    const sweep = parseIbqueryerrors(
      'Errors for 0x1 "sw"\n   GUID 0x1 port 3: [SymbolErrorCounter == 1]\nSegmentation fault\n   GUID zz port 1:\n',
      '',
    );
    expect(sweep.ports).toHaveLength(1);
    expect(sweep.unparsed).toMatchObject({ count: 2, examples: ['Segmentation fault', '   GUID zz port 1:'] });
  });
});

describe('perfquery -l (counters switch by switch)', () => {
  it('one reading per port block, basic and extended', () => {
    const basic = parsePerfqueryLoop(stdout('per-switch', 'spine-1-basic'));
    expect(basic.unparsed.count).toBe(0);
    expect([...basic.readings.keys()]).toEqual([1, 2, 3, 4]);
    expect(basic.readings.get(2)).toMatchObject({ extended: false, lid: 2, port: 2, capabilityMask: 0x1300 });
    expect(basic.readings.get(2)!.values.get('SymbolErrorCounter')).toBe(65535n);
    const extended = parsePerfqueryLoop(stdout('per-switch', 'leaf-1-extended'));
    expect([...extended.readings.keys()]).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(extended.readings.get(1)).toMatchObject({ extended: true, lid: 4, port: 1 });
  });

  it('keeps the ports printed before perfquery stopped at one it could not query', () => {
    const partial = parsePerfqueryLoop(recorded('fabric', 'per-switch', 'bad-port').stdout);
    expect([...partial.readings.keys()]).toEqual([1, 2, 3, 4]);
    expect(partial.unparsed.count).toBe(0);
    expect(parsePerfqueryLoop('# Port counters: Lid x\ngarbage\n').unparsed).toMatchObject({
      count: 1,
      examples: ['# Port counters: Lid x'],
    });
  });
});

describe('saquery', () => {
  it('SMIR: both subnet managers with GUID, LID, priority, state and activity', () => {
    const { subnetManagers, unparsed } = parseSmInfoRecords(stdout('healthy', 'smir'));
    expect(unparsed.count).toBe(0);
    expect(subnetManagers).toEqual([
      { guid: '0x0002c90300a10011', lid: 1, priority: 5, state: 'MASTER', activityCount: expect.any(Number) },
      // opensm's record of the other SM keeps the state of its first contact (it became STANDBY
      // since): the collector asks each SM itself with sminfo.
      { guid: '0x0002c90300a30031', lid: 14, priority: 5, state: 'DISCOVERING', activityCount: expect.any(Number) },
    ]);
  });

  it('-g: the IPoIB broadcast group opensm creates, 2048-byte MTU and 10 Gb/s', () => {
    const { groups, unparsed } = parseMulticastGroups(stdout('healthy', 'groups'));
    expect(unparsed.count).toBe(0);
    expect(groups).toEqual([{ mgid: 'ff12:401b:ffff::ffff:ffff', pkey: '0xffff', mtuBytes: 2048, rateGbps: 10, members: undefined }]);
  });

  it('-m: the record of a group nobody joined (PortGid ::) is no member', () => {
    expect(parseMemberCounts(stdout('healthy', 'members')).members).toEqual(new Map([['ff12:401b:ffff::ffff:ffff', 0]]));
    const joined =
      'MCMemberRecord member dump:\n\t\tMGID....................ff12:401b:ffff::1\n\t\tPortGid.................fe80::2:c903:a1:11\n'.repeat(
        2,
      );
    expect(parseMemberCounts(joined).members).toEqual(new Map([['ff12:401b:ffff::1', 2]]));
  });

  it.each([
    [
      'an SM record without a GUID',
      parseSmInfoRecords('SMInfoRecord dump:\n\t\tLID...................1\n\t\tSMState...............3\n').unparsed,
    ],
    [
      'a group with a bad MGID',
      parseMulticastGroups('MCMemberRecord group dump:\n\t\tMGID....................<gone>\n\t\tpkey....................0xFFFF\n').unparsed,
    ],
    ['text outside records', parseSmInfoRecords('Query SA failed: Connection timed out\n').unparsed],
  ])('counts %s as unparsed', (_name, unparsed) => {
    expect(unparsed.count).toBe(1);
  });
});

describe('node-name-map', () => {
  it.each([
    ['0x0002c90200410000 "spine-1"', '0x0002c90200410000', 'spine-1'],
    ['0x2c90200410000 "spine 1" # the first spine', '0x0002c90200410000', 'spine 1'],
    ['  0x2c90200410000\tleaf-1 # no quotes', '0x0002c90200410000', 'leaf-1'],
    ['783960384798720 "decimal"', '0x0002c90200410000', 'decimal'],
    ['026220100020200000 "octal"', '0x0002c90200410000', 'octal'],
  ])('%s', (line, guid, name) => {
    expect(parseNodeNameMap(line)).toEqual({ names: new Map([[guid, name]]), errors: [] });
  });

  it('skips comments and blank lines, keeps the first name of a GUID, reports bad lines with their number', () => {
    const map = parseNodeNameMap('# switches\n\n0x1 "a"\n0x1 "b"\nspine-1 0x2\n0x3\n0xzz "c"\n');
    expect(map.names).toEqual(new Map([['0x0000000000000001', 'a']]));
    expect(map.errors).toEqual([
      { line: 5, text: 'spine-1 0x2' },
      { line: 7, text: '0xzz "c"' },
    ]);
  });
});
