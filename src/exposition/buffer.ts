// The exposition text format's writing: escaping as prom-client does it, and a buffer the text of
// a part is written into (each collector's families, the exporter's own).
import type { MetricSpec } from './metric-spec.js';

/** Backslash and newline escaped, as in HELP texts. */
export const escapeHelp = (text: string): string => (/[\\\n]/.test(text) ? text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n') : text);
/** Backslash, newline and double quote escaped, as in label values. */
export const escapeLabelValue = (text: string): string => (/[\\\n"]/.test(text) ? escapeHelp(text).replace(/"/g, '\\"') : text);

/**
 * Exposition bytes written straight into one buffer: fabric mode's ports part is 16 MiB at 1 900
 * nodes, and going through a string per line, then chunks, then one string of the whole allocated
 * about 100 MiB per render and kept a 16 MiB string alive beside the bytes. A part sized from its
 * previous render is normally allocated once; one kept and reset for every render (the host
 * part's) is allocated once for the life of the process.
 */
export class ExpositionBuffer {
  private bytes: Buffer;
  private used = 0;
  private families = 0;
  private sink: ((chunk: Buffer, release: () => void) => void) | undefined;
  /** Chunks the sink gave back, written into again: not a new megabyte from malloc for each. */
  private readonly spare: Buffer[] = [];

  constructor(sizeHint = 0) {
    // A buffer of its own (allocUnsafeSlow), never a slice of the shared pool that it would keep
    // alive: the pool is 64 KiB on Node.js 24, so even 8 KiB came from it there.
    this.bytes = Buffer.allocUnsafeSlow(Math.max(8192, sizeHint));
  }

  /**
   * Until `drain`, hand the text on in chunks of about the buffer's size instead of growing it: a
   * fabric's part (100 MiB at 122 880 switch ports) goes to its compressor as it is written and is
   * never held whole. A chunk handed on is the sink's until it calls `release`: the buffer writes
   * on in one given back, else a new one. A chunk given back is written into again, so that a
   * render takes a few chunks from malloc, not one per MiB of text (each freed only when V8
   * collected its buffer, they kept malloc's heap tens of MiB larger after every render).
   */
  streamTo(sink: (chunk: Buffer, release: () => void) => void): void {
    this.sink = sink;
  }

  /** The bytes not handed on yet to the sink, which is then forgotten. */
  drain(): Buffer {
    this.sink = undefined;
    return this.view();
  }

  write(text: string): void {
    // UTF-8 takes at most 3 bytes per UTF-16 unit.
    if (this.sink !== undefined && this.used > 0 && this.used + text.length * 3 > this.bytes.length) {
      const full = this.bytes;
      this.sink(full.subarray(0, this.used), () => this.spare.push(full));
      this.bytes = this.spare.pop() ?? Buffer.allocUnsafeSlow(full.length);
      this.used = 0;
    }
    if (this.used + text.length * 3 > this.bytes.length) {
      const grown = Buffer.allocUnsafeSlow(Math.max(2 * this.bytes.length, this.used + text.length * 3));
      this.bytes.copy(grown, 0, 0, this.used);
      this.bytes = grown;
    }
    this.used += this.bytes.write(text, this.used);
  }

  /** Empty again, keeping its bytes for the next text. */
  reset(): void {
    this.used = 0;
    this.families = 0;
  }

  /** The bytes written so far, not copied: valid until the next write after reset(). */
  view(): Buffer {
    return this.bytes.subarray(0, this.used);
  }

  /** A family's HELP and TYPE lines, after a blank line unless it is the part's first (as prom-client writes them). */
  header(spec: MetricSpec): void {
    this.write(`${this.families++ === 0 ? '' : '\n'}# HELP ${spec.name} ${escapeHelp(spec.help)}\n# TYPE ${spec.name} ${spec.type}\n`);
  }

  /** The bytes written; copied to their size when the buffer turned out much larger (a first render). */
  finish(): Buffer {
    return this.used < 0.9 * this.bytes.length ? Buffer.from(this.bytes.subarray(0, this.used)) : this.bytes.subarray(0, this.used);
  }
}
