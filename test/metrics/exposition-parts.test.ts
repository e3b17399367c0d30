// The parts /metrics is joined from: each part's text and gzip member made once, the host part
// written into one buffer kept from one snapshot to the next, and what each part keeps.
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import type { ExpositionBuffer } from '../../src/exposition/buffer.js';
import { EncodedPart, RenderedPart } from '../../src/metrics/exposition-parts.js';

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
    const a = part.of(first);
    expect(part.of(first)).toBe(a);
    const b = part.of(second);
    expect(rendered).toEqual(['first', 'second']);
    expect(buffers[1]).toBe(buffers[0]);
    // The second snapshot was written over the first's bytes; the first's member is its own.
    expect(gunzipSync(a.gzip).toString()).toBe(textOf(first));
    expect(gunzipSync(b.gzip).toString()).toBe(textOf(second));
    expect(rendered).toEqual(['first', 'second']);
  });

  it('is rendered again, once, into a buffer of its own when a client asks for the plain text', () => {
    const { part, buffers, rendered } = renderedPart();
    const first = { name: 'first', lines: 3000 };
    const a = part.of(first);
    part.of({ name: 'second', lines: 10 });
    expect(a.plain.toString()).toBe(textOf(first));
    expect(a.plain).toBe(a.plain);
    expect(rendered).toEqual(['first', 'second', 'first']);
    expect(buffers[2]).not.toBe(buffers[0]);
    // The kept buffer still holds the second snapshot's text.
    expect(buffers[0]!.view().toString()).toBe(textOf({ name: 'second', lines: 10 }));
  });

  it('keeps a gzip member of its own size, not zlib\'s 16 KiB output chunk', () => {
    const { part } = renderedPart();
    const member = part.of({ name: 'mid', lines: 1000 }).gzip;
    // Above Buffer's pool size: a buffer of its own.
    expect(member.length).toBeGreaterThan(4096);
    expect(member.length).toBeLessThan(16 * 1024);
    expect(member.buffer.byteLength).toBe(member.length);
  });
});

describe('a part from text', () => {
  it('encodes and compresses a string when first asked, each once', () => {
    const text = textOf({ name: 'own', lines: 50 });
    const part = new EncodedPart(text);
    expect(gunzipSync(part.gzip).toString()).toBe(text);
    expect(part.gzip).toBe(part.gzip);
    expect(part.plain.toString()).toBe(text);
    expect(part.plain).toBe(part.plain);
  });

  it('serves bytes as they are', () => {
    const bytes = Buffer.from(textOf({ name: 'fabric', lines: 20 }));
    const part = new EncodedPart(bytes);
    expect(part.plain).toBe(bytes);
    expect(gunzipSync(part.gzip).equals(bytes)).toBe(true);
  });
});
