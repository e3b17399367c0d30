// What a parser keeps of the lines it did not understand: their count and the first few, shortened.
import { describe, expect, it } from 'vitest';
import { UNPARSED_EXAMPLE_CHARS, UNPARSED_EXAMPLES, UnparsedLines, unparsedExample } from '../../src/sources/unparsed-lines.js';

describe('UnparsedLines', () => {
  it('counts every line and keeps the first five, each cut to 200 characters', () => {
    const unparsed = new UnparsedLines();
    for (let i = 0; i < 100_000; i++) unparsed.add(`${i} ${'z'.repeat(i % 2 === 0 ? 10 : 1000)}`);
    expect(unparsed.count).toBe(100_000);
    expect(UNPARSED_EXAMPLES).toBe(5);
    expect(unparsed.examples.map((line) => line.length)).toEqual([12, UNPARSED_EXAMPLE_CHARS, 12, UNPARSED_EXAMPLE_CHARS, 12]);
    expect(unparsed.examples[1]).toBe(unparsedExample(`1 ${'z'.repeat(1000)}`));
  });

  it('starts from lines given at once, as if added one by one', () => {
    expect(new UnparsedLines(['a', 'b'])).toMatchObject({ count: 2, examples: ['a', 'b'] });
    expect(new UnparsedLines()).toMatchObject({ count: 0, examples: [] });
  });
});
