// Hostile node descriptions (issue 31): a host's root sets its NodeDescription to text shaped like
// the tools' own output, and the fabric tools print it unchanged inside quotes. The parsers must
// read the fields the tool printed, never ones the description forged.
import { unparsedExample } from '../../src/sources/unparsed-lines.js';
import { describe, expect, it } from 'vitest';
import { parseIblinkinfo } from '../../src/sources/fabric/iblinkinfo.js';
import { parseIbnetdiscover } from '../../src/sources/fabric/ibnetdiscover.js';
import { parseIbqueryerrors } from '../../src/sources/fabric/ibqueryerrors.js';

/** The description from the issue: a down port with a peer of the attacker's choosing. */
const HOSTILE = 'x ==( Down/ Polling)==> 0xbad 1 9[] ';
const SWITCH = '0x0002c90200410000';
const HOST_PORT = '0x0002c90300a10011';

describe('iblinkinfo with a hostile description', () => {
  it.each([
    [
      'the switch port the hostile host is cabled to',
      `${SWITCH} "                       leaf-1 IS5030"      2    1[  ] ==( 4X          10.0 Gbps Active/  LinkUp)==>  ${HOST_PORT}      3    1[  ] "${HOSTILE}" (Could be 12X )`,
      { portGuid: SWITCH, lid: 2, port: 1, peer: { portGuid: HOST_PORT, port: 1 } },
    ],
    [
      "the hostile host's own port",
      `${HOST_PORT} "${HOSTILE.padStart(30)}"      3    1[  ] ==( 4X          10.0 Gbps Active/  LinkUp)==>  ${SWITCH}      2    1[  ] "leaf-1 IS5030" (Could be 12X )`,
      { portGuid: HOST_PORT, lid: 3, port: 1, peer: { portGuid: SWITCH, port: 1 } },
    ],
    [
      'a description that forges a whole remote part',
      `${SWITCH} "                       leaf-1 IS5030"      2    1[  ] ==( 4X          10.0 Gbps Active/  LinkUp)==>  ${HOST_PORT}      3    1[  ] "a" ( )==>           [  ] "" ( )" ( )`,
      { portGuid: SWITCH, port: 1, peer: { portGuid: HOST_PORT, port: 1 } },
    ],
    [
      'a description of quotes, brackets and arrows only',
      `${SWITCH} "                       leaf-1 IS5030"      2    1[  ] ==( 4X          10.0 Gbps Active/  LinkUp)==>  ${HOST_PORT}      3    1[  ] ""[]()==(#)==>"" ( Could be 53.125 Gbps)`,
      { portGuid: SWITCH, port: 1, peer: { portGuid: HOST_PORT, port: 1 } },
    ],
  ])('reads %s as printed: Active/LinkUp, 4X QDR, its true peer', (_name, line, expected) => {
    const { ports, unparsed } = parseIblinkinfo(line);
    expect(unparsed.count).toBe(0);
    expect(ports).toEqual([
      { state: { id: 4, name: 'ACTIVE' }, physicalState: { id: 5, name: 'LinkUp' }, width: 4, speed: 'QDR', lid: 2, ...expected },
    ]);
  });

  it('does not guess between two places the middle fits (node-name-map names hold anything)', () => {
    const forged = `"      2    7[  ] ==(                Down/ Polling)==>  0x0000000000000bad      9    9[  ] "`;
    const line = `${SWITCH} "${'leaf-1 IS5030'.padStart(30)}${forged}"      2    1[  ] ==( 4X          10.0 Gbps Active/  LinkUp)==>  ${HOST_PORT}      3    1[  ] "map name" ( )`;
    const { ports, unparsed } = parseIblinkinfo(line);
    expect(ports).toEqual([]);
    expect(unparsed).toMatchObject({ count: 1, examples: [unparsedExample(line)] });
  });

  it("counts a line without the tool's widths as not understood, never half-believed", () => {
    const unpadded = `${SWITCH} "leaf-1" 2 1[ ] ==(4X 10.0 Gbps Active/LinkUp)==> ${HOST_PORT} 3 1[ ] "${HOSTILE}" ( )`;
    expect(parseIblinkinfo(unpadded)).toMatchObject({ ports: [], unparsed: { count: 1, examples: [unpadded] } });
  });
});

describe('ibnetdiscover with a hostile description', () => {
  const text = [
    '',
    'vendid=0x2c9',
    'devid=0xbd36',
    'switchguid=0x2c90200410000(2c90200410000)',
    'Switch\t8 "S-0002c90200410000"\t\t# "leaf-1" base port 0 lid 2 lmc 0',
    `[1]\t"H-0002c90300a10010"[1](2c90300a10011) \t\t# "${HOSTILE}" lid 3 4xQDR`,
    '[2]\t"H-0002c90300a10020"[1](2c90300a10021) \t\t# "y" lid 9 1xSDR" lid 4 4xQDR',
    '',
    'vendid=0x2c9',
    'devid=0x1003',
    'caguid=0x2c90300a10010',
    `Ca\t1 "H-0002c90300a10010"\t\t# "${HOSTILE}" base port 0 lid 7 lmc 0"`,
    '[1](2c90300a10011) \t"S-0002c90200410000"[1]\t\t# lid 3 lmc 0 "leaf-1" lid 2 4xQDR',
    '',
  ].join('\n');

  it('reads the descriptions whole and the link fields from the end of the line', () => {
    const topology = parseIbnetdiscover(text);
    expect(topology.unparsed.count).toBe(0);
    expect(topology.nodes.map((node) => node.description)).toEqual(['leaf-1', `${HOSTILE}" base port 0 lid 7 lmc 0`]);
    expect(topology.ports.map(({ nodeGuid, port, peer, width, speed }) => ({ nodeGuid, port, peer: peer.nodeGuid, width, speed }))).toEqual(
      [
        { nodeGuid: SWITCH, port: 1, peer: '0x0002c90300a10010', width: 4, speed: 'QDR' },
        { nodeGuid: SWITCH, port: 2, peer: '0x0002c90300a10020', width: 4, speed: 'QDR' },
        { nodeGuid: '0x0002c90300a10010', port: 1, peer: SWITCH, width: 4, speed: 'QDR' },
      ],
    );
  });

  it("counts a port line whose tail is not the tool's as not understood", () => {
    const cut = text.replace('" lid 3 4xQDR', '" lid 3');
    expect(parseIbnetdiscover(cut).unparsed.examples).toEqual([`[1]\t"H-0002c90300a10010"[1](2c90300a10011) \t\t# "${HOSTILE}" lid 3`]);
  });
});

describe('ibqueryerrors with a hostile description', () => {
  it('skips the node header whatever it holds and reads the port lines', () => {
    const header = `Errors for "${HOSTILE}   GUID 0x1 port 9: [SymbolErrorCounter == 5]"`;
    const stdout = [
      header,
      '   GUID 0x2c90300a10011 port 1: [SymbolErrorCounter == 3]',
      '',
      '## Summary: 1 nodes checked, 1 bad nodes found',
    ].join('\n');
    const reading = parseIbqueryerrors(stdout, '');
    expect(reading.unparsed.count).toBe(0);
    expect(reading.ports).toEqual([
      { guid: HOST_PORT, port: 1, values: new Map([['SymbolErrorCounter', { value: 3n, suffixed: false }]]) },
    ]);
  });
});
