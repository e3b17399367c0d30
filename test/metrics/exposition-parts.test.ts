// The parts /metrics is joined from: each part's text and compressed blocks made once, each
// collector's part written into one buffer kept from one snapshot to the next, what each part
// keeps, and one gzip member of them all.
import { crc32, gunzipSync, inflateRawSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import type { ExpositionBuffer } from '../../src/exposition/buffer.js';
import { EncodedPart, RenderedPart, crc32Combine, joinParts } from '../../src/metrics/exposition-parts.js';
import { countTurns } from '../support/event-loop-turns.js';

/** A part's compressed text, inflated on its own. */
const inflated = (part: EncodedPart): string => inflateRawSync(Buffer.concat(part.deflated.blocks), { finishFlush: 2 }).toString();
const gunzipped = (parts: EncodedPart[]): string => {
  const body = joinParts(parts, true);
  return gunzipSync(Buffer.isBuffer(body) ? body : Buffer.concat(body as Buffer[])).toString();
};

interface Source {
  name: string;
  lines: number;
}

/** Lines of numbers that compress to a few KiB, not to nothing. */
function textOf(source: Source): string {
  let text = `# HELP ${source.name} A part.\n# TYPE ${source.name} gauge\n`;
  let seed = source.lines;
  for (let i = 0; i < source.lines; i++) {
    seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
    text += `${source.name}{port="${i}"} ${seed}\n`;
  }
  return text;
}

function renderedPart() {
  const buffers: ExpositionBuffer[] = [];
  const rendered: string[] = [];
  const part = new RenderedPart<Source>((source, out) => {
    buffers.push(out);
    rendered.push(source.name);
    out.write(textOf(source));
  });
  return { part, buffers, rendered };
}

describe('a part rendered from a snapshot', () => {
  it('is written once per snapshot into one kept buffer and compressed at once', () => {
    const { part, buffers, rendered } = renderedPart();
    const first = { name: 'first', lines: 3000 };
    const second = { name: 'second', lines: 2000 };
    const a = part.of(first, [first])!;
    expect(part.of(first, [first])!).toBe(a);
    const b = part.of(second, [second])!;
    expect(rendered).toEqual(['first', 'second']);
    expect(buffers[1]).toBe(buffers[0]);
    // The second snapshot was written over the first's bytes; the first's member is its own.
    expect(inflated(a!)).toBe(textOf(first));
    expect(inflated(b!)).toBe(textOf(second));
    expect(gunzipped([a!, b!])).toBe(`${textOf(first)}\n${textOf(second)}`);
    expect(rendered).toEqual(['first', 'second']);
  });

  it('has its plain text inflated from the compressed one, once, when a client asks for it: not rendered again', async () => {
    const { part, buffers, rendered } = renderedPart();
    const first = { name: 'first', lines: 3000 };
    const a = part.of(first, [first])!;
    const b = part.of({ name: 'second', lines: 10 }, [{ name: 'second', lines: 10 }])!;
    expect(a.plain.toString()).toBe(textOf(first));
    expect(a.plain).toBe(a.plain);
    // Off the event loop, by zlib's threads: the same text.
    await b.loadPlain();
    expect(b.plain.toString()).toBe(textOf({ name: 'second', lines: 10 }));
    expect(rendered).toEqual(['first', 'second']);
    // The kept buffer still holds the second snapshot's text.
    expect(buffers[0]!.view().toString()).toBe(textOf({ name: 'second', lines: 10 }));
  });

  it('is rendered in time slices and compressed aside when asked with render(): the same bytes, the event loop turning meanwhile', async () => {
    const rendered: string[] = [];
    const part = new RenderedPart<Source>(
      (source, out) => out.write(textOf(source)),
      function* (source, out) {
        rendered.push(source.name);
        const text = textOf(source).split('\n');
        for (let i = 0; i < text.length; i++) {
          out.write(i === text.length - 1 ? text[i]! : `${text[i]}\n`);
          // About 5 µs a line: 40 000 lines, 200 ms or more.
          const until = process.hrtime.bigint() + 5000n;
          while (process.hrtime.bigint() < until);
          if (i % 256 === 255) yield;
        }
      },
    );
    const big = { name: 'big', lines: 40_000 };
    const turns = countTurns();
    // Asked twice while under way (a scrape during the render after a publish): rendered once.
    const [a, again] = await Promise.all([part.render(big, [big]), part.render(big, [big])]);
    expect(turns.stop()).toBeGreaterThanOrEqual(5);
    expect(again).toBe(a);
    expect(rendered).toEqual(['big']);
    expect(inflated(a!)).toBe(textOf(big));
    expect(a!.deflated.crc).toBe(crc32(textOf(big)));
    expect(a!.deflated.length).toBe(Buffer.byteLength(textOf(big)));
    expect(await part.render(big, [big])).toBe(a);
    // A new source while one renders: they run one after the other into the one buffer, each its own text.
    const small = { name: 'small', lines: 100 };
    const [b, c] = await Promise.all([part.render(big, [big, 1]), part.render(small, [small])]);
    expect(inflated(b!)).toBe(textOf(big));
    expect(inflated(c!)).toBe(textOf(small));
    expect(await part.render(small, [small])).toBe(c);
    expect(gunzipped([a!, c!])).toBe(`${textOf(big)}\n${textOf(small)}`);
  });

  it('hands a render of several MiB to zlib a chunk at a time as it is written, and gives its plain text back in pieces, not kept', async () => {
    const chunks: number[] = [];
    const part = new RenderedPart<Source>(
      (source, out) => out.write(textOf(source)),
      function* (source, out) {
        const text = textOf(source).split('\n');
        for (let i = 0; i < text.length; i++) {
          out.write(i === text.length - 1 ? text[i]! : `${text[i]}\n`);
          if (i % 4096 === 4095) {
            chunks.push(out.view().length);
            yield;
          }
        }
      },
    );
    const big = { name: 'streamed', lines: 150_000 };
    const text = Buffer.from(textOf(big));
    expect(text.length).toBeGreaterThan(4 * 1024 * 1024);
    const a = (await part.render(big, [big]))!;
    // The buffer never held more than about a chunk (1 MiB) of the text.
    expect(Math.max(...chunks)).toBeLessThanOrEqual(1024 * 1024);
    expect(inflated(a).length).toBe(text.length);
    expect(inflated(a) === text.toString()).toBe(true);
    expect(a.deflated.crc).toBe(crc32(text));
    expect(a.plainLength).toBe(text.length);
    const pieces: Buffer[] = [];
    for await (const piece of a.plainPieces()) pieces.push(piece);
    expect(pieces.length).toBeGreaterThan(1);
    expect(Buffer.concat(pieces).equals(text)).toBe(true);
    // An empty render is no part.
    const empty = new RenderedPart<Source>(() => undefined);
    expect(await empty.render(big, [big])).toBeUndefined();
  });

  it("keeps compressed blocks of their own size, not zlib's 16 KiB output chunk", () => {
    const { part } = renderedPart();
    const blocks = part.of({ name: 'mid', lines: 1000 }, [{ name: 'mid', lines: 1000 }])!.deflated.blocks;
    expect(blocks).toHaveLength(1);
    const member = blocks[0]!;
    // A buffer of its own, neither zlib's chunk nor Buffer's shared pool (8 KiB on Node.js 20, 64 KiB on 24).
    expect(member.length).toBeGreaterThan(4096);
    expect(member.length).toBeLessThan(16 * 1024);
    expect(member.buffer.byteLength).toBe(member.length);
  });
});

describe('a part from text', () => {
  it('encodes and compresses a string when first asked, each once', () => {
    const text = textOf({ name: 'own', lines: 50 });
    const part = new EncodedPart(text);
    expect(gunzipped([part])).toBe(text);
    expect(part.deflated).toBe(part.deflated);
    expect(part.plain.toString()).toBe(text);
    expect(part.plain).toBe(part.plain);
  });

  it('serves bytes as they are', () => {
    const bytes = Buffer.from(textOf({ name: 'fabric', lines: 20 }));
    const part = new EncodedPart(bytes);
    expect(part.plain).toBe(bytes);
    expect(gunzipped([part])).toBe(bytes.toString());
  });
});

describe('one gzip member of several parts', () => {
  it("has the CRC-32 of the whole text, combined from the parts' own", () => {
    const texts = ['', 'a', textOf({ name: 'x', lines: 300 }), '\n', textOf({ name: 'y', lines: 7 })].map((text) => Buffer.from(text));
    let combined = 0;
    for (const text of texts) combined = crc32Combine(combined, crc32(text), text.length);
    expect(combined).toBe(crc32(Buffer.concat(texts)));
  });

  it('reads whole with any gzip reader: one member, parts apart by a blank line', () => {
    const parts = ['first', 'second', 'third'].map((name, i) => new EncodedPart(textOf({ name, lines: 100 * (i + 1) })));
    const body = joinParts(parts, true) as Buffer;
    expect(gunzipped(parts)).toBe(parts.map((part) => part.plain.toString()).join('\n'));
    // One member: the gzip magic once, at the start.
    expect(body.subarray(0, 2)).toEqual(Buffer.from([0x1f, 0x8b]));
    expect(body.indexOf(Buffer.from([0x1f, 0x8b, 0x08]), 1)).toBe(-1);
    expect(gunzipped([])).toBe('');
  });
});
