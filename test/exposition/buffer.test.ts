// The buffer a part is written into, streaming its text to a sink in chunks: a chunk the sink gave
// back is written into again, one it keeps is never touched.
import { describe, expect, it } from 'vitest';
import { ExpositionBuffer } from '../../src/exposition/buffer.js';

describe('an exposition buffer streaming to a sink', () => {
  it('writes on into a chunk the sink released, and into a new one while the sink holds them all', () => {
    const out = new ExpositionBuffer(8192);
    const handed: { chunk: Buffer; text: string; release: () => void }[] = [];
    out.streamTo((chunk, release) => handed.push({ chunk, text: chunk.toString(), release }));
    const line = `${'x'.repeat(1023)}\n`;
    let lines = 0;
    while (handed.length < 2) {
      out.write(line);
      lines++;
    }
    // Two chunks handed on, neither given back yet: no memory shared.
    expect(handed[0]!.chunk.buffer === handed[1]!.chunk.buffer).toBe(false);
    handed[0]!.release();
    // The chunk being written when it was given back is finished first; the one after it reuses it.
    while (handed.length < 4) {
      out.write(line);
      lines++;
    }
    expect(handed[2]!.chunk.buffer === handed[0]!.chunk.buffer).toBe(false);
    expect(handed[3]!.chunk.buffer === handed[0]!.chunk.buffer).toBe(true);
    // What the sink still holds (the second and third chunks) was never written over.
    expect(handed[1]!.chunk.toString()).toBe(handed[1]!.text);
    expect(handed[2]!.chunk.toString()).toBe(handed[2]!.text);
    expect(
      handed
        .slice(1)
        .map((h) => h.text)
        .join('') + out.drain().toString(),
    ).toBe(line.repeat(lines).slice(handed[0]!.text.length));
  });
});
