// A tool's output taken line by line as it arrives: the same lines as the whole text split at its
// newlines, however the output is cut into chunks, and handed over in time slices.
import { describe, expect, it } from 'vitest';
import { OutputLines, parseWhole } from '../../src/sources/output-lines.js';
import { countTurns } from '../support/event-loop-turns.js';

/** Every line OutputLines hands over for `chunks`, written one after the other. */
async function linesOf(chunks: readonly (Buffer | string)[]): Promise<string[]> {
  const lines: string[] = [];
  const output = new OutputLines((line) => lines.push(line));
  for (const chunk of chunks) output.write(chunk);
  await output.end();
  return lines;
}

/** `bytes` cut at each of `cuts` (byte offsets). */
function cut(bytes: Buffer, cuts: readonly number[]): Buffer[] {
  const at = [0, ...cuts.filter((c) => c > 0 && c < bytes.length).sort((a, b) => a - b), bytes.length];
  return at.slice(1).map((end, i) => bytes.subarray(at[i], end));
}

const TEXT =
  'Switch\t36 "S-0002c90200410000"\t\t# "MF0;spine-1:SX6036/U1" base port 0 lid 2 lmc 0\n[1]\t"S-…"[4]\n\nnœud «é» ✓\nlast line without newline';

describe('OutputLines', () => {
  it('hands over the lines of text.split, however the bytes are cut, multi-byte characters included', async () => {
    const bytes = Buffer.from(TEXT, 'utf8');
    const expected = TEXT.split('\n');
    expect(await linesOf([bytes])).toEqual(expected);
    for (let at = 1; at < bytes.length; at++) expect(await linesOf(cut(bytes, [at])), `cut at byte ${at}`).toEqual(expected);
    expect(
      await linesOf(
        cut(
          bytes,
          Array.from({ length: bytes.length }, (_, i) => i),
        ),
      ),
    ).toEqual(expected);
    expect(await linesOf([`${TEXT}\n`])).toEqual([...expected, '']);
    expect(await linesOf([])).toEqual(['']);
  });

  it('parses a whole text as the chunks would be: parseWhole', () => {
    const lines: string[] = [];
    expect(parseWhole(TEXT, { push: (line) => lines.push(line), end: () => lines.length })).toBe(TEXT.split('\n').length);
    expect(lines).toEqual(TEXT.split('\n'));
  });

  it('hands a large output over in slices: the event loop turns many times meanwhile', async () => {
    const text = Array.from({ length: 100_000 }, (_, i) => `   GUID 0x0002c90200410000 port ${i % 64}: [PortXmitData == ${i}]`).join('\n');
    const turns = countTurns();
    let handed = 0;
    // A parser that takes at least 1 ms per 1 000 lines: at least 100 ms in all, ten slices or more.
    const output = new OutputLines(() => {
      handed += 1;
      if (handed % 1000 === 0) for (const until = performance.now() + 1; performance.now() < until; );
    });
    output.write(text);
    await output.end();
    expect(turns.stop()).toBeGreaterThanOrEqual(5);
    expect(handed).toBe(100_000);
  });

  it('hands nothing over after discard', async () => {
    const lines: string[] = [];
    const output = new OutputLines((line) => lines.push(line));
    output.discard();
    output.write('a\nb\n');
    await output.end();
    expect(lines).toEqual([]);
    expect(output.backlog).toBe(0);
  });
});
