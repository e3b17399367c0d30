// The infiniband-diags output parsers on any text and on recorded outputs with values, lines and
// characters replaced: they never throw, and every number they hand on is finite and
// non-negative (PMA counters are unsigned; a NaN or -1 would become a sample).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { iberror, numberField, parseMadDump } from '../../src/sources/diag/mad-dump.js';
import { countersFromPerfquery, parsePerfquery } from '../../src/sources/diag/perfquery.js';
import { isSubnetManagerUnreachable, parseSminfo } from '../../src/sources/diag/sminfo.js';
import { bestCommonEnabled, parseNodeDescription, parseNodeInfo, parsePortInfo } from '../../src/sources/diag/smpquery.js';
import { SUBNET_MANAGER_STATES } from '../../src/model/host.js';
import { LINK_SPEEDS, LINK_WIDTHS } from '../../src/model/link-rate.js';
import { anyText, isSaneNumber, mutated, numberish, recordedOutputs } from './arbitraries.js';

const perfqueryOutputs = recordedOutputs((file) => file.includes('perfquery'));
const sminfoOutputs = recordedOutputs((file) => file.startsWith('sminfo'));
const smpqueryOutputs = recordedOutputs((file) => /portinfo|nodeinfo|nodedesc/.test(file));
const everyOutput = [...perfqueryOutputs, ...sminfoOutputs, ...smpqueryOutputs];

const hexDigits = fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: 1, maxLength: 300 });
// The header carries the LID, port and PMA capability mask; every field of it may be absurd.
const perfqueryHeader = fc
  .tuple(fc.boolean(), numberish, numberish, fc.oneof(hexDigits, anyText))
  .map(([extended, lid, port, mask]) => `# Port ${extended ? 'extended ' : ''}counters: Lid ${lid} port ${port} (CapMask: 0x${mask})`);
const perfqueryText = fc.oneof(
  anyText,
  mutated(perfqueryOutputs),
  fc.tuple(perfqueryHeader, mutated(perfqueryOutputs)).map(([header, body]) => `${header}\n${body.split('\n').slice(1).join('\n')}`),
);
const smpqueryText = fc.oneof(anyText, mutated(smpqueryOutputs));
const sminfoText = fc.oneof(
  anyText,
  mutated(sminfoOutputs),
  fc
    .tuple(numberish, fc.oneof(hexDigits, anyText), numberish, numberish, numberish)
    .map(
      ([lid, guid, activity, priority, state]) =>
        `sminfo: sm lid ${lid} sm guid 0x${guid}, activity count ${activity} priority ${priority} state ${state} SMINFO_MASTER\n`,
    ),
);

describe('MAD dumps', () => {
  it('never throw; number fields are finite and non-negative', () => {
    fc.assert(
      fc.property(fc.oneof(anyText, mutated(everyOutput)), (text) => {
        const fields = parseMadDump(text);
        for (const name of fields.keys()) expect(isSaneNumber(numberField(fields, name))).toBe(true);
        const error = iberror(text);
        expect(error === undefined || typeof error === 'string').toBe(true);
      }),
    );
  });
});

describe('perfquery', () => {
  it('counters from any pair of outputs are finite, non-negative and named once', () => {
    fc.assert(
      fc.property(perfqueryText, perfqueryText, (basicText, extendedText) => {
        const basic = parsePerfquery(basicText);
        const extended = parsePerfquery(extendedText);
        for (const reading of [basic, extended]) {
          if (!reading) continue;
          for (const n of [reading.lid, reading.port, reading.capabilityMask]) expect(isSaneNumber(n)).toBe(true);
          for (const value of reading.values.values()) expect(value >= 0n).toBe(true);
        }
        const counters = countersFromPerfquery(basic, extended);
        for (const counter of counters) expect(isSaneNumber(counter.value)).toBe(true);
        expect(new Set(counters.map((c) => c.name)).size).toBe(counters.length);
      }),
    );
  });
});

describe('sminfo', () => {
  it('gives a finite, non-negative LID, priority and activity count, a padded GUID and a known state', () => {
    fc.assert(
      fc.property(sminfoText, fc.option(fc.integer({ min: -1, max: 256 })), (text, exitCode) => {
        expect(typeof isSubnetManagerUnreachable(text, exitCode ?? undefined)).toBe('boolean');
        const info = parseSminfo(text);
        if (!info) return;
        for (const n of [info.lid, info.priority, info.activityCount]) expect(isSaneNumber(n)).toBe(true);
        expect(info.guid).toMatch(/^0x[0-9a-f]{16}$/);
        expect(info.state === undefined || SUBNET_MANAGER_STATES.includes(info.state)).toBe(true);
      }),
    );
  });
});

describe('smpquery', () => {
  it('PortInfo, NodeInfo and NodeDescription hold only known widths, speeds and sane numbers', () => {
    fc.assert(
      fc.property(smpqueryText, smpqueryText, (localText, peerText) => {
        const local = parsePortInfo(localText);
        const peer = parsePortInfo(peerText);
        for (const info of [local, peer]) {
          if (!info) continue;
          for (const n of [info.lid, info.smLid, info.capabilityMask]) expect(isSaneNumber(n)).toBe(true);
          for (const width of [...info.widthSupported, ...info.widthEnabled, ...(info.widthActive ? [info.widthActive] : [])])
            expect(LINK_WIDTHS).toContain(width);
          for (const speed of [...info.speedSupported, ...info.speedEnabled, ...(info.speedActive ? [info.speedActive] : [])])
            expect(LINK_SPEEDS).toContain(speed);
        }
        if (local && peer) {
          const best = bestCommonEnabled(local, peer);
          expect(best.width === undefined || (local.widthEnabled.includes(best.width) && peer.widthEnabled.includes(best.width))).toBe(
            true,
          );
          expect(best.speed === undefined || (local.speedEnabled.includes(best.speed) && peer.speedEnabled.includes(best.speed))).toBe(
            true,
          );
        }
        const node = parseNodeInfo(localText);
        if (node) {
          for (const n of [node.localPort, node.numberOfPorts]) expect(isSaneNumber(n)).toBe(true);
          for (const guid of [node.nodeGuid, node.portGuid]) expect(guid === undefined || /^0x[0-9a-f]{16}$/.test(guid)).toBe(true);
        }
        const description = parseNodeDescription(peerText);
        expect(description === undefined || typeof description === 'string').toBe(true);
      }),
    );
  });
});
