// /metrics is assembled from parts, each cached on its own: its exposition text, and that text
// compressed once. A part is rendered again only when what it is made from changes (a
// collector's part of the snapshot, the reports, the process's own metrics once a second); a
// scrape only joins cached bytes. A metric family never spans two parts; parts are joined with the
// blank line that separates families within one.
//
// Compressed, a scrape is ONE gzip member, not a member per part: Prometheus's Go reader reads
// concatenated members, but curl (7.88: exit 23 after the first) and some browsers stop after the
// first. Each part is compressed as raw DEFLATE ending on a byte boundary without a final block
// (Z_SYNC_FLUSH), so parts compressed apart are one DEFLATE stream when put one after the other
// (RFC 1951, 3.2.3); a scrape adds the gzip header, an empty final block, and the CRC-32 of the
// whole text combined from the parts' own (RFC 1952; zlib's crc32_combine).
import { once } from 'node:events';
import { promisify } from 'node:util';
import { constants, crc32, createDeflateRaw, createInflateRaw, deflateRawSync, inflateRaw, inflateRawSync } from 'node:zlib';
import { nextTurn, sliceSpent, sliceStart, type Work } from '../event-loop/time-slices.js';
import { ExpositionBuffer } from '../exposition/buffer.js';

/**
 * A part's text compressed on its own: raw DEFLATE blocks, its CRC-32 and length. The blocks as
 * zlib handed them over, not joined: a fabric part's are megabytes (13.6 MiB at 122 880 switch
 * ports), which joined were a second copy and the first left for V8 to collect.
 */
export interface Deflated {
  blocks: readonly Buffer[];
  crc: number;
  length: number;
}

/**
 * Compressed at the fastest level: at 8 devices 0.3 ms for 8.4 KB against 0.8 ms for 7.3 KB at the
 * default level, and the CPU is what a compute node pays for. zlib hands back a view of its 16 KiB
 * output chunk; blocks much smaller than that are copied out, so that a cached part keeps its own
 * bytes and not the chunk.
 */
const DEFLATE_OPTIONS = { level: constants.Z_BEST_SPEED, finishFlush: constants.Z_SYNC_FLUSH };
/** Raw DEFLATE blocks that end on a byte boundary without a final block read back to their end. */
const INFLATE_OPTIONS = { finishFlush: constants.Z_SYNC_FLUSH };

/**
 * Blocks much smaller than the chunk they sit in, copied out into a buffer of their own size. Not
 * `Buffer.from`, which takes small copies from Buffer's shared pool (8 KiB on Node.js 20, 64 KiB
 * on 24) and would keep the pool alive instead of the chunk.
 */
function ownBytes(blocks: Buffer): Buffer {
  if (blocks.length >= blocks.buffer.byteLength / 2) return blocks;
  const own = Buffer.allocUnsafeSlow(blocks.length);
  blocks.copy(own);
  return own;
}

function deflate(text: Buffer): Deflated {
  return { blocks: [ownBytes(deflateRawSync(text, DEFLATE_OPTIONS))], crc: crc32(text), length: text.length };
}

/** Blocks as one buffer (a part read whole: a host's, of one block, or a small one). */
const joined = (blocks: readonly Buffer[]): Buffer => (blocks.length === 1 ? blocks[0]! : Buffer.concat(blocks));

const inflateRawAsync = promisify(inflateRaw) as (buffer: Buffer, options: typeof INFLATE_OPTIONS) => Promise<Buffer>;

/**
 * A render's text goes to zlib this many bytes at a time, as it is written: at 122 880 switch
 * ports the ports part is 100 MiB of text, which was held whole (in a buffer kept for the life of
 * the part, grown by doubling) only to be compressed to 4 MiB.
 */
const STREAM_CHUNK_BYTES = 1024 * 1024;

/**
 * Text compressed as it comes, by zlib's threads (the event loop only hands each chunk on and
 * takes its CRC-32, a fraction of a millisecond per MiB): raw DEFLATE ending on a byte boundary
 * without a final block, as `deflate` makes it.
 */
class DeflatingSink {
  private readonly deflater = createDeflateRaw({ ...DEFLATE_OPTIONS, chunkSize: 64 * 1024 });
  private readonly blocks: Buffer[] = [];
  private readonly ended: Promise<void>;
  private crc = 0;
  private length = 0;

  constructor() {
    this.deflater.on('data', (block: Buffer) => this.blocks.push(block));
    this.ended = new Promise((resolve, reject) => {
      this.deflater.once('end', resolve);
      this.deflater.on('error', reject);
    });
    // Handled here as well: an error before `end` is awaited is not an unhandled rejection.
    this.ended.catch(() => undefined);
  }

  /** Takes the chunk: it must not be written again until zlib has taken it up and `release` is called. */
  readonly write = (chunk: Buffer, release?: () => void): void => {
    this.crc = crc32(chunk, this.crc);
    this.length += chunk.length;
    // A write's callback comes once zlib has consumed the whole chunk (or failed).
    this.deflater.write(chunk, release && (() => release()));
  };

  /**
   * Resolves once zlib has less than a few chunks still to compress: a render waits on it between
   * slices, so that on a busy machine the text rendered ahead of zlib's threads is not held instead.
   */
  caughtUp(): Promise<void> {
    if (this.deflater.writableLength <= 4 * STREAM_CHUNK_BYTES) return Promise.resolve();
    return Promise.race([once(this.deflater, 'drain').then(() => undefined), this.ended]);
  }

  /** The whole text compressed, after its last bytes; undefined when it had none. */
  async end(last: Buffer): Promise<Deflated | undefined> {
    if (last.length > 0) this.write(last);
    if (this.length === 0) {
      this.deflater.destroy();
      return undefined;
    }
    this.deflater.end();
    await this.ended;
    return { blocks: this.blocks, crc: this.crc, length: this.length };
  }
}

/**
 * The exposition text of one part, plain and compressed, each made once when first asked for.
 * A part made from its compressed text alone (RenderedPart) has its plain text inflated from it.
 */
export class EncodedPart {
  private plainBytes: Buffer | undefined;

  constructor(
    private readonly text: string | Buffer | undefined,
    private compressed?: Deflated,
  ) {
    if (Buffer.isBuffer(text)) this.plainBytes = text;
  }

  get plain(): Buffer {
    this.plainBytes ??=
      this.text === undefined ? inflateRawSync(joined(this.compressed!.blocks), INFLATE_OPTIONS) : Buffer.from(this.text as string);
    return this.plainBytes;
  }

  /** Make the plain text ready without holding the event loop (a fabric's part is tens of MB): inflated by zlib's threads. */
  async loadPlain(): Promise<void> {
    if (this.plainBytes === undefined && this.text === undefined)
      this.plainBytes = await inflateRawAsync(joined(this.compressed!.blocks), INFLATE_OPTIONS);
  }

  /** The plain text's length in bytes, without making it. */
  get plainLength(): number {
    return this.plainBytes?.length ?? this.compressed?.length ?? this.plain.length;
  }

  /**
   * The plain text in pieces: the text itself when it is at hand, else inflated from the compressed
   * one as the reader takes it, by zlib's threads, and not kept (a fabric's part is 100 MiB plain).
   */
  async *plainPieces(): AsyncGenerator<Buffer> {
    if (this.plainBytes !== undefined || this.text !== undefined) {
      yield this.plain;
      return;
    }
    const inflater = createInflateRaw(INFLATE_OPTIONS);
    for (const block of this.compressed!.blocks) inflater.write(block);
    inflater.end();
    yield* inflater;
  }

  get deflated(): Deflated {
    this.compressed ??= deflate(this.plain);
    return this.compressed;
  }
}

const sameInputs = (a: readonly unknown[], b: readonly unknown[]): boolean =>
  a.length === b.length && a.every((input, i) => input === b[i]);

/**
 * A part rendered from its inputs (a collector's part of the snapshot and the parts it also reads),
 * once for each change of any of them (compared by identity), and compressed at once, so a
 * snapshot keeps only its compressed text, what Prometheus asks for: a snapshot lives one
 * collection interval, long enough for V8 to move what it holds to the old generation, where the
 * memory of a plain text allocated per snapshot (86 KB at 8 devices) stayed until the next full
 * collection, tens of readings later (docs/benchmarks.md, "Memory over time"). A client that asks
 * for the plain text has it inflated from the compressed one.
 *
 * `of` renders at once, when first asked for (a host's parts: milliseconds), into one buffer kept
 * for the life of the part; `render` in time slices (a fabric's: seconds of work at 120 000
 * ports), its text handed to zlib's threads a chunk at a time as it is written and never held
 * whole, one render at a time, a render asked for again while under way shared.
 */
export class RenderedPart<Source> {
  private cached: { inputs: readonly unknown[]; part: EncodedPart | undefined } | undefined;
  private rendering: { inputs: readonly unknown[]; done: Promise<EncodedPart | undefined> } | undefined;
  private kept: ExpositionBuffer | undefined;

  constructor(
    private readonly write: (source: Source, out: ExpositionBuffer) => void,
    private readonly steps?: (source: Source, out: ExpositionBuffer) => Work<void>,
  ) {}

  /** The part for `source`, rendered again when `inputs` (what it is made of) changed; undefined when it has no series. */
  of(source: Source, inputs: readonly unknown[]): EncodedPart | undefined {
    if (!this.cached || !sameInputs(this.cached.inputs, inputs)) {
      this.kept ??= new ExpositionBuffer();
      const out = this.kept;
      out.reset();
      this.write(source, out);
      this.cached = { inputs, part: out.view().length === 0 ? undefined : new EncodedPart(undefined, deflate(out.view())) };
    }
    return this.cached.part;
  }

  /** The same, rendered in time slices and compressed aside: the event loop is never held for long. */
  render(source: Source, inputs: readonly unknown[]): Promise<EncodedPart | undefined> {
    if (this.cached && sameInputs(this.cached.inputs, inputs)) return Promise.resolve(this.cached.part);
    if (this.rendering && sameInputs(this.rendering.inputs, inputs)) return this.rendering.done;
    const before = this.rendering?.done;
    const done = (async () => {
      // One render at a time, in the order asked.
      await before?.catch(() => undefined);
      const out = new ExpositionBuffer(STREAM_CHUNK_BYTES);
      const sink = new DeflatingSink();
      out.streamTo(sink.write);
      try {
        const work = this.steps ? this.steps(source, out) : atOnceAsWork(() => this.write(source, out));
        let started = sliceStart();
        while (!work.next().done) {
          if (!sliceSpent(started)) continue;
          await sink.caughtUp();
          await nextTurn();
          started = sliceStart();
        }
      } catch (error) {
        await sink.end(Buffer.alloc(0)).catch(() => undefined);
        throw error;
      }
      const compressed = await sink.end(out.drain());
      const part = compressed === undefined ? undefined : new EncodedPart(undefined, compressed);
      this.cached = { inputs, part };
      return part;
    })();
    const rendering = { inputs, done };
    this.rendering = rendering;
    const settled = (): void => {
      if (this.rendering === rendering) this.rendering = undefined;
    };
    done.then(settled, settled);
    return done;
  }
}

/** Work that does not pause: a part without `steps`. */
// biome-ignore lint/correctness/useYield: a part that never pauses is still Work, so callers run every part alike
function* atOnceAsWork(run: () => void): Work<void> {
  run();
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

/** What stands between two parts: the blank line that separates families, as within a part. */
const BETWEEN_PARTS = new EncodedPart('\n');

/** gzip's header: deflate, no name or time, fastest compression, OS unknown (RFC 1952, 2.3). */
const GZIP_HEADER = Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0xff]);
/** An empty final block of fixed codes: BFINAL 1, BTYPE 01, end-of-block (RFC 1951, 3.2.6). */
const FINAL_BLOCK = Buffer.from([0x03, 0x00]);

// CRC-32 of two texts put together, from each one's CRC and the second's length (zlib's
// crc32_combine: multiplication modulo the CRC polynomial, reflected).
const POLY = 0xedb88320;

function multiplyModP(a: number, b: number): number {
  let m = 0x80000000;
  let p = 0;
  for (;;) {
    if (a & m) {
      p ^= b;
      if ((a & (m - 1)) === 0) break;
    }
    m >>>= 1;
    b = b & 1 ? (b >>> 1) ^ POLY : b >>> 1;
  }
  return p >>> 0;
}

/** x^(2^k) modulo the polynomial, k = 0..31. */
const X2N: readonly number[] = (() => {
  const table = [0x40000000];
  for (let k = 1; k < 32; k++) table.push(multiplyModP(table[k - 1]!, table[k - 1]!));
  return table;
})();

/** x^(8 · bytes) modulo the polynomial. */
function shiftByBytes(bytes: number): number {
  let p = 0x80000000;
  let n = bytes;
  let k = 3;
  while (n > 0) {
    if (n % 2 === 1) p = multiplyModP(X2N[k & 31]!, p);
    n = Math.floor(n / 2);
    k += 1;
  }
  return p;
}

export function crc32Combine(first: number, second: number, secondLength: number): number {
  return (multiplyModP(shiftByBytes(secondLength), first) ^ second) >>> 0;
}

/** The parts, each after the blank line that separates it from the one before. */
function withSeparators(parts: readonly EncodedPart[]): EncodedPart[] {
  return parts.flatMap((part, i) => (i === 0 ? [part] : [BETWEEN_PARTS, part]));
}

/** The plain body of parts, in pieces as a reader takes them (a large body: see `joinParts`). */
export async function* plainBody(parts: readonly EncodedPart[]): AsyncGenerator<Buffer> {
  for (const part of withSeparators(parts)) yield* part.plainPieces();
}

/** The plain body's length in bytes. */
export function plainBodyLength(parts: readonly EncodedPart[]): number {
  return withSeparators(parts).reduce((sum, part) => sum + part.plainLength, 0);
}

/** One body from parts: their plain texts, or one gzip member of them; one buffer, or a list when large. */
export function joinParts(parts: readonly EncodedPart[], gzip: boolean): Buffer | readonly Buffer[] {
  const pieces = withSeparators(parts);
  let buffers: Buffer[];
  if (!gzip) {
    buffers = pieces.map((part) => part.plain);
  } else {
    let crc = 0;
    let length = 0;
    for (const { deflated } of pieces) {
      crc = crc32Combine(crc, deflated.crc, deflated.length);
      length += deflated.length;
    }
    const trailer = Buffer.alloc(8);
    trailer.writeUInt32LE(crc, 0);
    trailer.writeUInt32LE(length % 2 ** 32, 4);
    buffers = [GZIP_HEADER, ...pieces.flatMap((part) => part.deflated.blocks), FINAL_BLOCK, trailer];
  }
  if (buffers.length === 1) return buffers[0]!;
  const size = buffers.reduce((sum, buffer) => sum + buffer.length, 0);
  return size > MAX_JOINED_BYTES ? buffers : Buffer.concat(buffers, size);
}
