// Slurm hostlist expansion against names generated the other way round: random clusters of names
// (dashes, dots, zero padding, one or two numbered parts) written as hostlists the way Slurm
// compresses them, then expanded back.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { expandHostlist } from '../../src/sources/jobs/hostlist.js';

const word = fc.stringMatching(/^[a-z][a-z0-9.-]{0,6}[a-z.-]$/);
/** A numbered part: its members (distinct, sorted) and their padding width. */
const numbered = fc.record({
  width: fc.integer({ min: 0, max: 4 }),
  members: fc.uniqueArray(fc.nat({ max: 120 }), { minLength: 1, maxLength: 8 }).map((members) => members.sort((a, b) => a - b)),
});

const pad = (n: number, width: number) => String(n).padStart(width, '0');

/** Members written as Slurm does: consecutive runs as ranges, padded like the lower bound. */
function bracket(members: readonly number[], width: number): string {
  const runs: string[] = [];
  for (let i = 0; i < members.length; ) {
    let j = i;
    while (j + 1 < members.length && members[j + 1] === members[j]! + 1) j++;
    runs.push(i === j ? pad(members[i]!, width) : `${pad(members[i]!, width)}-${pad(members[j]!, width)}`);
    i = j + 1;
  }
  return `[${runs.join(',')}]`;
}

// Padding applies only where the lower bound has a leading zero; generate only such cases, as Slurm prints.
const consistent = numbered.filter(({ members, width }) => width === 0 || members.every((n) => pad(n, width).startsWith('0')));

const expression = fc.record({
  prefix: word,
  first: consistent,
  infix: fc.option(word, { nil: undefined }),
  second: fc.option(consistent, { nil: undefined }),
});

describe('Slurm hostlists', () => {
  it('expand to every name of every bracket group, in order', () => {
    fc.assert(
      fc.property(fc.array(expression, { minLength: 1, maxLength: 3 }), (expressions) => {
        const text = expressions
          .map(
            ({ prefix, first, infix, second }) =>
              `${prefix}${bracket(first.members, first.width)}${second ? `${infix ?? ''}${bracket(second.members, second.width)}` : ''}`,
          )
          .join(',');
        const expected = expressions.flatMap(({ prefix, first, infix, second }) =>
          first.members.flatMap((a) => {
            const head = `${prefix}${pad(a, first.width)}`;
            return second ? second.members.map((b) => `${head}${infix ?? ''}${pad(b, second.width)}`) : [head];
          }),
        );
        expect(expandHostlist(text)).toEqual({ hosts: [...new Set(expected)] });
      }),
    );
  });

  it('never throws on any text, and expands nothing it refuses', () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom(...'ab1-0,[]. 9'), maxLength: 30 }), (text) => {
        const result = expandHostlist(text);
        expect(result.error === undefined ? Array.isArray(result.hosts) : result.hosts === undefined).toBe(true);
      }),
    );
  });
});
