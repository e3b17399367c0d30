// Shared generators for the property tests: any text at all, and text close to what the kernel and
// infiniband-diags print (real outputs with values, lines and characters replaced), because purely
// random strings rarely get past the first regular expression of a parser.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { FIXTURES } from '../support/trees.js';

// A fixed seed keeps the suite deterministic; FC_SEED explores other corners when asked to.
fc.configureGlobal({ seed: Number(process.env.FC_SEED ?? 7_2026), numRuns: Number(process.env.FC_RUNS ?? 300) });

/** Any text: printable ASCII, full Unicode (lone surrogates too) and control characters. */
export const anyText = fc.oneof(
  fc.string({ maxLength: 200 }),
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.string({ unit: fc.constantFrom('\n', '\r', '\t', ' ', ':', '.', '0', '9', 'x', 'X', '(', ')', '-', '\0'), maxLength: 80 }),
);

/** Numbers as text in every shape a broken file could hold them. */
export const numberish = fc.oneof(
  fc.nat().map(String),
  fc.bigInt({ min: 0n, max: 1n << 80n }).map(String),
  fc.integer({ min: -1_000_000, max: -1 }).map(String),
  fc.double().map(String),
  fc.constantFrom('NaN', 'Infinity', '-0', '0x', '0xffffffffffffffffffff', '1e400', '9'.repeat(400), '', ' ', '00000000000000000000000001'),
  fc.integer({ min: 0, max: 0xffffffff }).map((n) => `0x${n.toString(16)}`),
);

/** Mutate a known-good text: swap values after separators, drop, duplicate or splice lines. */
export function mutated(seeds: readonly string[]): fc.Arbitrary<string> {
  const edit = fc.oneof(
    fc.record({ kind: fc.constant('value' as const), line: fc.nat(), value: fc.oneof(numberish, anyText) }),
    fc.record({ kind: fc.constant('drop' as const), line: fc.nat() }),
    fc.record({ kind: fc.constant('duplicate' as const), line: fc.nat() }),
    fc.record({ kind: fc.constant('insert' as const), line: fc.nat(), value: anyText }),
    fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
  );
  return fc.tuple(fc.constantFrom(...seeds), fc.array(edit, { maxLength: 6 })).map(([seed, edits]) => {
    let lines = seed.split('\n');
    for (const e of edits) {
      const i = lines.length === 0 ? 0 : 'line' in e ? e.line % lines.length : 0;
      switch (e.kind) {
        case 'value': {
          const line = lines[i] ?? '';
          const cut = Math.max(line.lastIndexOf('.'), line.lastIndexOf(':'), line.lastIndexOf(' '));
          lines[i] = `${line.slice(0, cut + 1)}${e.value}`;
          break;
        }
        case 'drop':
          lines.splice(i, 1);
          break;
        case 'duplicate':
          lines.splice(i, 0, lines[i] ?? '');
          break;
        case 'insert':
          lines.splice(i, 0, e.value);
          break;
        case 'truncate': {
          const text = lines.join('\n');
          lines = text.slice(0, e.at % (text.length + 1)).split('\n');
          break;
        }
      }
    }
    return lines.join('\n');
  });
}

/** stdout of every recorded infiniband-diags command whose name starts with `prefix`. */
export function recordedOutputs(match: (file: string) => boolean): string[] {
  const root = path.join(FIXTURES, 'diag');
  const outputs: string[] = [];
  for (const scenario of readdirSync(root)) {
    for (const file of readdirSync(path.join(root, scenario))) {
      if (file.endsWith('.stdout') && match(file)) outputs.push(readFileSync(path.join(root, scenario, file), 'utf8'));
    }
  }
  if (outputs.length === 0) throw new Error('no recorded outputs matched');
  return outputs;
}

/** A finite, non-negative number, or undefined. */
export function isSaneNumber(value: unknown): boolean {
  return value === undefined || (typeof value === 'number' && Number.isFinite(value) && value >= 0);
}
