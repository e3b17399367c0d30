// The fabric tools' parsers against free text where the tools print names: any host sets its own
// node description, so quotes, brackets, parentheses, `#` and the tools' own arrows may stand in
// every name. Lines are rendered the way the tools print them (test/support/fabric-text.ts) and
// must parse back to the fields they were rendered from; a name never moves a field.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseIblinkinfo, type LinkinfoPort } from '../../src/sources/fabric/iblinkinfo.js';
import { parseIbnetdiscover } from '../../src/sources/fabric/ibnetdiscover.js';
import { parseIbqueryerrors } from '../../src/sources/fabric/ibqueryerrors.js';
import { parseNodeDescription } from '../../src/sources/diag/smpquery.js';
import { parseLinkWidth, speedFromMadText } from '../../src/model/link-rate.js';
import { physicalStateFromMadText, portStateFromMadText } from '../../src/model/port-state.js';
import {
  cleanNodeDescription,
  ibnetdiscoverRecord,
  linkinfoLine,
  smpqueryNodeDescription,
  sweepHeader,
  type IbnetdiscoverNodeFields,
  type IbnetdiscoverType,
  type LinkinfoLineFields,
} from '../support/fabric-text.js';
import './arbitraries.js';

const printable = fc.integer({ min: 0x20, max: 0x7e }).map((code) => String.fromCharCode(code));
/** Pieces of the tools' own output, the likeliest to mislead a parser. */
const TOOL_PIECES = [
  '==(',
  ')==>',
  '"',
  '[',
  ']',
  '#',
  '(',
  ')',
  ' ',
  '/',
  '  ',
  '==(                Down/ Polling)==>',
  ' Active/  LinkUp',
  '      1    9[  ] ',
  '0x0002c90300a10011',
  '" (Could be 12X )',
  '           [  ] "" ( )',
  '"Port not available"',
  '" lid 3 4xQDR',
  '" base port 0 lid 1 lmc 0',
  '# lid 1 lmc 0 "',
  '"S-0002c90200410000"[3]',
  '" (scp)',
  ' [SymbolErrorCounter == 3]',
  'port 1:',
];
const piece = fc.oneof({ weight: 3, arbitrary: printable }, { weight: 2, arbitrary: fc.constantFrom(...TOOL_PIECES) });
/** A NodeDescription as the tools get it (64 printable bytes at most). */
const description = fc.array(piece, { maxLength: 40 }).map((pieces) => cleanNodeDescription(pieces.join('')));
/** A node-name-map name: the operator's text, any length. */
const mapName = fc.array(piece, { maxLength: 60 }).map((pieces) => pieces.join(''));
const name = fc.oneof({ weight: 3, arbitrary: description }, { weight: 1, arbitrary: mapName });

const guid = fc.bigInt({ min: 1n, max: (1n << 64n) - 1n });
const lid = fc.integer({ min: 0, max: 0xffff });
const portNumber = fc.integer({ min: 1, max: 254 });
const ext = fc.option(fc.integer({ min: 1, max: 99 }), { nil: undefined });

const WIDTHS = ['1X', '4X', '8X', '12X', '2X'];
const SPEEDS = [
  '2.5 Gbps',
  '5.0 Gbps',
  '10.0 Gbps',
  '10.0 Gbps (FDR10)',
  '14.0625 Gbps',
  '25.78125 Gbps',
  '53.125 Gbps',
  '106.25 Gbps',
  '212.5 Gbps',
];
const UP_STATES = ['Initialize', 'Armed', 'Active', '?(5)'];
const PHYSICAL_STATES = ['Sleep', 'Polling', 'Disabled', 'PortConfigurationTraining', 'LinkUp', 'LinkErrorRecovery', 'PhyTest'];
const WIDTH_HINTS = ['', 'Could be 4X', 'Could be 12X'];
const SPEED_HINTS = ['', 'Could be 53.125 Gbps', 'Could be FDR10', 'Could be FDR10 (Found link at QDR but expected speed is FDR10)'];

const link = fc.oneof(
  fc.record({
    width: fc.constantFrom(...WIDTHS),
    speed: fc.constantFrom(...SPEEDS),
    state: fc.constantFrom(...UP_STATES),
    physicalState: fc.constantFrom(...PHYSICAL_STATES),
  }),
  fc.record({ state: fc.constant('Down'), physicalState: fc.constantFrom(...PHYSICAL_STATES) }),
);
const remote = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      portGuid: guid,
      lid,
      port: portNumber,
      ext,
      name,
      widthHint: fc.constantFrom(...WIDTH_HINTS),
      speedHint: fc.constantFrom(...SPEED_HINTS),
    }),
  },
  { weight: 1, arbitrary: fc.constantFrom('no link' as const, 'not available' as const) },
);
const linkinfoFields: fc.Arbitrary<LinkinfoLineFields> = fc.record({ portGuid: guid, name, lid, port: portNumber, ext, link, remote });

const guidText = (value: bigint): string => `0x${value.toString(16).padStart(16, '0')}`;

/** What iblinkinfo's parser must read from a line rendered from `fields`. */
function expectedPort(fields: LinkinfoLineFields): LinkinfoPort {
  const { link: l, remote: r } = fields;
  return {
    portGuid: guidText(fields.portGuid),
    lid: fields.lid,
    port: fields.port,
    state: portStateFromMadText(l.state)!,
    physicalState: physicalStateFromMadText(l.physicalState)!,
    width: l.width === undefined ? undefined : parseLinkWidth(Number(l.width.slice(0, -1))),
    speed: l.speed === undefined ? undefined : speedFromMadText(l.speed),
    peer: typeof r === 'string' ? undefined : { portGuid: guidText(r.portGuid), port: r.port },
  };
}

describe('iblinkinfo --line', () => {
  it('reads every field back whatever the names hold', () => {
    fc.assert(
      fc.property(linkinfoFields, (fields) => {
        const { ports, unparsed } = parseIblinkinfo(`${linkinfoLine(fields)}\n`);
        expect(unparsed.count).toBe(0);
        expect(ports).toEqual([expectedPort(fields)]);
      }),
    );
  });

  it('reads the true fields when a description holds pieces of another line of the tool', () => {
    // A decoy line's text, cut to what a NodeDescription holds, put where a description is printed.
    const forged = fc.tuple(linkinfoFields, linkinfoFields, fc.nat(), fc.nat(), fc.boolean()).map(([truth, decoy, from, length, local]) => {
      const text = linkinfoLine(decoy);
      const start = from % text.length;
      const forgery = cleanNodeDescription(text.slice(start, start + (length % 65)));
      const fields: LinkinfoLineFields =
        local || typeof truth.remote === 'string' ? { ...truth, name: forgery } : { ...truth, remote: { ...truth.remote, name: forgery } };
      return fields;
    });
    fc.assert(
      fc.property(forged, (fields) => {
        const { ports, unparsed } = parseIblinkinfo(linkinfoLine(fields));
        expect(unparsed.count).toBe(0);
        expect(ports).toEqual([expectedPort(fields)]);
      }),
    );
  });

  it('never reads a forged line out of node-name-map names: the true fields, or the line is not understood', () => {
    // Map names have no length limit: both names may hold a whole forged middle.
    const forged = fc.tuple(linkinfoFields, linkinfoFields, fc.string({ maxLength: 3, unit: printable })).map(([truth, decoy, pad]) => {
      const text = linkinfoLine(decoy);
      const middle = text.slice(text.indexOf('"', 50) + 1);
      return { ...truth, name: `${pad}${middle}${pad}` };
    });
    fc.assert(
      fc.property(forged, (fields) => {
        const { ports, unparsed } = parseIblinkinfo(linkinfoLine(fields));
        if (ports.length === 0) expect(unparsed.count).toBe(1);
        else expect(ports).toEqual([expectedPort(fields)]);
      }),
    );
  });
});

const nodeType = fc.constantFrom<IbnetdiscoverType>('switch', 'ca', 'router');
const IBNETDISCOVER_WIDTHS: Record<string, number | undefined> = { '1x': 1, '4x': 4, '8x': 8, '12x': 12, '2x': 2, '??': undefined };
const IBNETDISCOVER_SPEEDS = ['SDR', 'DDR', 'QDR', 'FDR10', 'FDR', 'EDR', 'HDR', 'NDR', 'XDR', '???'];

const ibnetdiscoverNode: fc.Arbitrary<IbnetdiscoverNodeFields> = fc
  .record({
    type: nodeType,
    guid,
    portGuid: guid,
    portCount: fc.integer({ min: 1, max: 64 }),
    name,
    lid: fc.integer({ min: 1, max: 49151 }),
    vendorId: fc.integer({ min: 0, max: 0xffffff }),
    deviceId: fc.integer({ min: 0, max: 0xffff }),
    ports: fc.array(
      fc.record({
        port: portNumber,
        portGuid: guid,
        lid: fc.integer({ min: 1, max: 49151 }),
        remote: fc.record({
          type: nodeType,
          nodeGuid: guid,
          port: portNumber,
          portGuid: guid,
          lid: fc.integer({ min: 1, max: 49151 }),
          name,
        }),
        width: fc.constantFrom(...Object.keys(IBNETDISCOVER_WIDTHS)),
        speed: fc.constantFrom(...IBNETDISCOVER_SPEEDS),
      }),
      { maxLength: 4 },
    ),
  })
  // A switch's ports carry no GUID or LID of their own on the port lines.
  .map((node) => (node.type === 'switch' ? { ...node, ports: node.ports.map(({ portGuid: _g, lid: _l, ...port }) => port) } : node));

describe('ibnetdiscover', () => {
  it('reads every node and port back whatever the names hold', () => {
    fc.assert(
      fc.property(fc.array(ibnetdiscoverNode, { minLength: 1, maxLength: 3 }), (nodes) => {
        const topology = parseIbnetdiscover(`#\n# Topology file: generated\n#\n${nodes.map(ibnetdiscoverRecord).join('')}`);
        expect(topology.unparsed.count).toBe(0);
        expect(
          topology.nodes.map((node) => ({
            guid: node.guid,
            type: node.type,
            description: node.description,
            portCount: node.portCount,
            lid: node.lid,
            portGuid: node.portGuid,
          })),
        ).toEqual(
          nodes.map((node) => ({
            guid: guidText(node.guid),
            type: node.type,
            description: node.name,
            portCount: node.portCount,
            lid: node.type === 'switch' ? node.lid : undefined,
            portGuid: node.type === 'switch' ? guidText(node.portGuid) : undefined,
          })),
        );
        expect(topology.ports.map(({ line: _line, ...port }) => port)).toEqual(
          nodes.flatMap((node) =>
            node.ports.map((port) => ({
              nodeGuid: guidText(node.guid),
              port: port.port,
              portGuid: port.portGuid === undefined ? undefined : guidText(port.portGuid),
              lid: port.lid,
              peer: {
                nodeGuid: guidText(port.remote.nodeGuid),
                type: port.remote.type,
                port: port.remote.port,
                portGuid: port.remote.type === 'switch' ? undefined : guidText(port.remote.portGuid!),
              },
              width: IBNETDISCOVER_WIDTHS[port.width],
              speed: port.speed === '???' ? undefined : port.speed,
            })),
          ),
        );
      }),
    );
  });
});

describe('ibqueryerrors', () => {
  it('reads every port line whatever the node headers hold', () => {
    const node = fc.record({
      guid,
      switch: fc.boolean(),
      name,
      ports: fc.array(fc.record({ guid, port: portNumber, symbolErrors: fc.bigInt({ min: 1n, max: 65535n }) }), { maxLength: 3 }),
    });
    fc.assert(
      fc.property(fc.constantFrom('errors' as const, 'counters' as const), fc.array(node, { maxLength: 4 }), (mode, nodes) => {
        const text = nodes
          .map((n) =>
            [
              sweepHeader(mode, n.switch || mode === 'counters' ? n.guid : undefined, n.name),
              ...n.ports.map((p) => `   GUID 0x${p.guid.toString(16)} port ${p.port}: [SymbolErrorCounter == ${p.symbolErrors}]`),
            ].join('\n'),
          )
          .join('\n');
        const reading = parseIbqueryerrors(`${text}\n\n## Summary: ${nodes.length} nodes checked, 0 bad nodes found\n`, '');
        expect(reading.unparsed.count).toBe(0);
        expect(reading.complete).toBe(true);
        expect(reading.ports).toEqual(
          nodes.flatMap((n) =>
            n.ports.map((p) => ({
              guid: guidText(p.guid),
              port: p.port,
              values: new Map([['SymbolErrorCounter', { value: p.symbolErrors, suffixed: false }]]),
            })),
          ),
        );
      }),
    );
  });
  it('reads every failed query from standard error whatever the node names hold', () => {
    const failure = fc.record({ name, lid: fc.integer({ min: 1, max: 49151 }), port: fc.integer({ min: 0, max: 255 }) });
    fc.assert(
      fc.property(fc.array(failure, { maxLength: 4 }), (failures) => {
        // IBWARN("%s query failed on %s, %s port %d", …) with portid2str's "Lid %u".
        const stderr = failures
          .map((f) => `ibwarn: [4242] print_errors: IB_GSI_PORT_COUNTERS query failed on ${f.name}, Lid ${f.lid} port ${f.port}\n`)
          .join('');
        const reading = parseIbqueryerrors('## Summary: 0 nodes checked, 0 bad nodes found\n', stderr);
        expect(reading.failures.map(({ lid, port }) => ({ lid, port }))).toEqual(failures.map(({ lid, port }) => ({ lid, port })));
      }),
    );
  });
});

describe('smpquery nodedesc', () => {
  it('reads the name back whole, dots, spaces and quotes included (but for leading dots the padding hides)', () => {
    fc.assert(
      fc.property(name, (text) => {
        const read = parseNodeDescription(`# Node Description: DR path slid 65535; dlid 65535; 0,1\n${smpqueryNodeDescription(text)}`);
        expect(read).toBe(text.length < 32 ? text.replace(/^\.+/, '') : text);
      }),
    );
  });
});
