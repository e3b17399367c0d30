// /metrics is assembled from parts, each cached on its own: its exposition text, encoded once, and
// that text as one gzip member, compressed once (the host snapshot's at once, the others the first
// time a scrape asks for gzip). A part is rendered again only when its source changes (the host
// snapshot, the process's own metrics once a second, ...). Concatenated gzip members are one valid
// gzip stream (RFC 1952, 2.2), which Prometheus's Go reader, curl and zlib read whole, so a scrape
// only joins cached bytes. A metric family never spans two parts.
import { constants, gzipSync } from 'node:zlib';
import { ExpositionBuffer } from '../exposition/buffer.js';

/**
 * One gzip member, at the fastest level: at 8 devices 0.3 ms for 8.4 KB against 0.8 ms for 7.3 KB
 * at the default level, and the CPU is what a compute node pays for. zlib hands back a view of its
 * 16 KiB output chunk; a member much smaller than that is copied out, so that a cached member
 * keeps its own bytes and not the chunk.
 */
function compress(text: string | Buffer): Buffer {
  const member = gzipSync(text, { level: constants.Z_BEST_SPEED });
  return member.length < member.buffer.byteLength / 2 ? Buffer.from(member) : member;
}

/**
 * The exposition text of one part, plain and as one gzip member, each made once when first asked
 * for. `text` is the text, or how to render it again (a part that was compressed from a buffer
 * reused since: see RenderedPart).
 */
export class EncodedPart {
  private plainBytes: Buffer | undefined;

  constructor(
    private readonly text: string | Buffer | (() => Buffer),
    private compressed?: Buffer,
  ) {
    if (Buffer.isBuffer(text)) this.plainBytes = text;
  }

  get plain(): Buffer {
    this.plainBytes ??= typeof this.text === 'function' ? this.text() : Buffer.from(this.text as string);
    return this.plainBytes;
  }

  get gzip(): Buffer {
    this.compressed ??= compress(typeof this.text === 'string' ? this.text : this.plain);
    return this.compressed;
  }
}

/**
 * A part rendered from a source value (a snapshot), once per distinct value, when first asked for.
 * It is written into one buffer kept for the life of the part and compressed from there at once,
 * so a snapshot keeps only its gzip member, what Prometheus asks for: a snapshot lives one
 * collection interval, long enough for V8 to move what it holds to the old generation, where the
 * memory of a plain text allocated per snapshot (86 KB at 8 devices) stayed until the next full
 * collection, tens of readings later (docs/benchmarks.md, "Memory over time"). A client that asks
 * for the plain text has the snapshot rendered again, once.
 */
export class RenderedPart<Source extends object> {
  private cached: { source: Source; part: EncodedPart } | undefined;
  private readonly out = new ExpositionBuffer();

  constructor(private readonly write: (source: Source, out: ExpositionBuffer) => void) {}

  of(source: Source): EncodedPart {
    if (this.cached?.source !== source) {
      this.out.reset();
      this.write(source, this.out);
      const again = (): Buffer => {
        const out = new ExpositionBuffer(this.out.view().length);
        this.write(source, out);
        return out.finish();
      };
      this.cached = { source, part: new EncodedPart(again, compress(this.out.view())) };
    }
    return this.cached.part;
  }
}

/**
 * A part read at most once per `maxAgeMs` and shared by the scrapes in between (the process's own
 * metrics: a second-old CPU or memory reading tells the same). A failed reading is not kept: the
 * next scrape reads again.
 */
export class TimedPart {
  private reading: { at: number; part: Promise<EncodedPart> } | undefined;

  constructor(
    private readonly read: () => Promise<string>,
    private readonly maxAgeMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  current(): Promise<EncodedPart> {
    const at = this.now();
    if (this.reading === undefined || at - this.reading.at >= this.maxAgeMs || at < this.reading.at) {
      const reading = { at, part: this.read().then((text) => new EncodedPart(text)) };
      reading.part.catch(() => {
        if (this.reading === reading) this.reading = undefined;
      });
      this.reading = reading;
    }
    return this.reading.part;
  }
}

/**
 * Bodies up to this size are joined into one buffer, kept while their parts stay the same; larger
 * ones (fabric mode: 16 MB at 1 900 nodes) are sent part by part, so that a process-metrics reading
 * once a second does not copy the whole exposition again.
 */
export const MAX_JOINED_BYTES = 1024 * 1024;

/** One body from parts: their plain texts, or their gzip members; one buffer, or a list when large. */
export function joinParts(parts: readonly EncodedPart[], gzip: boolean): Buffer | readonly Buffer[] {
  const buffers = parts.map((part) => (gzip ? part.gzip : part.plain));
  if (buffers.length === 1) return buffers[0]!;
  const size = buffers.reduce((sum, buffer) => sum + buffer.length, 0);
  return size > MAX_JOINED_BYTES ? buffers : Buffer.concat(buffers, size);
}
