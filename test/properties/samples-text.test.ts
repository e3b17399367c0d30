// Samples.text writes the exposition itself (fabric mode renders 170 000 series with it): on any
// label values and numbers it must print exactly what prom-client's registry prints.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { MetricSpec } from '../../src/exposition/metric-spec.js';
import { Samples } from '../../src/exposition/samples.js';
import { promClientText } from '../support/prom-client-oracle.js';

const SPECS: MetricSpec[] = [
  {
    name: 'infiniband_fabric_node_info',
    type: 'gauge',
    labels: ['node_guid', 'node_desc'],
    help: 'A help with a \\ backslash,\na newline and "quotes".',
  },
  { name: 'infiniband_fabric_port_symbol_errors_total', type: 'counter', labels: ['node_guid', 'port'], help: 'Counts.' },
  { name: 'infiniband_fabric_duplicate_guids', type: 'gauge', labels: [], help: 'No labels.' },
];

const label = fc.oneof(fc.string({ maxLength: 40 }), fc.constantFrom('', '"', '\\', '\n', 'a"b\\c\nd', 'MF0;spine-1:SX6036/U1'));
// Non-negative: counters cannot go down (and every fabric value is a count, a state or a rate).
const value = fc.oneof(
  fc.nat(),
  fc.double({ min: 0, noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(0, 1, 65535, 2 ** 53, 1.25e9, 1e21, 5e-324),
);
const sample = fc.tuple(fc.integer({ min: 0, max: SPECS.length - 1 }), label, label, value);

async function both(samples: Samples): Promise<[string, string]> {
  return [samples.text(SPECS), await promClientText(samples, SPECS)];
}

describe('Samples.text', () => {
  it('prints what prom-client prints, for any labels and values', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(sample, { maxLength: 30 }), async (list) => {
        const samples = new Samples();
        const seen = new Set<string>();
        for (const [index, a, b, v] of list) {
          const spec = SPECS[index]!;
          const labels = Object.fromEntries(spec.labels.map((name, i) => [name, i === 0 ? a : b]));
          // A registry keeps one sample per label set (the last); text() has no such rule to copy.
          const key = `${index}\u0000${JSON.stringify(labels)}`;
          if (seen.has(key)) continue;
          seen.add(key);
          samples.add(spec, labels, v);
        }
        const [text, registry] = await both(samples);
        // An empty registry prints a lone newline; no text at all is the same exposition.
        expect(text).toBe(seen.size === 0 ? '' : registry);
      }),
      { numRuns: 300 },
    );
  });

  it('prints nothing for no samples, and leaves out families without one', async () => {
    expect(new Samples().text(SPECS)).toBe('');
    const samples = new Samples();
    samples.add(SPECS[2]!, {}, 3);
    samples.add(SPECS[1]!, { node_guid: '0x1', port: '2' }, undefined);
    const [text, registry] = await both(samples);
    expect(text).toBe(
      '# HELP infiniband_fabric_duplicate_guids No labels.\n# TYPE infiniband_fabric_duplicate_guids gauge\ninfiniband_fabric_duplicate_guids 3\n',
    );
    expect(text).toBe(registry);
  });
});
