// Follows the kernel log from the moment it is opened: /dev/kmsg, where each read() returns one
// record and EAGAIN says there is no more (the descriptor is non-blocking), or a plain file of the
// same records (tests, a log shipped elsewhere), read from its end on as it grows and opened again
// when it is rotated (another file at its path, or truncated). Nothing waits and nothing wakes up:
// `drain` reads what came since the last call, and the collector calls it once per reading. Memory
// is bounded whatever the log holds: a record is cut at KERNEL_LOG.maxBytes, a drain reads at most
// MAX_DRAIN_BYTES (the rest waits for the next), and only the unfinished last line is kept between.
import { closeSync, fstatSync, readSync, statSync } from 'node:fs';
import { KERNEL_LOG, openFollowedFile } from '../../files/bounded-file.js';
import { addContinuation, parseKmsgHeaderLine, type KmsgRecord } from './kernel-message.js';

/** At most this much of a plain file is read per drain; a burst larger than that is read over several. */
export const MAX_DRAIN_BYTES = 4 * 1024 * 1024;
const CHUNK_BYTES = 64 * 1024;
const NEWLINE = 0x0a;

export interface DrainCounts {
  /** Lines that were no record (no `prio,seq,usec,flags;` header): skipped. */
  unparsed: number;
  /** Records the kernel overwrote before they were read (EPIPE on /dev/kmsg). */
  lost: number;
  /** Records longer than KERNEL_LOG.maxBytes, cut there. */
  truncated: number;
}

export class KmsgFollower {
  private fd: number;
  private ino: number;
  /** /dev/kmsg (records with the kernel's clock), not a plain file. */
  readonly device: boolean;
  private offset: number;
  private carry: Buffer[] = [];
  private carryBytes = 0;
  private cut = false;
  private pending: KmsgRecord | undefined;
  private closed = false;
  private readonly buffer = Buffer.allocUnsafe(Math.max(CHUNK_BYTES, KERNEL_LOG.maxBytes));

  /**
   * Opens `file` (a FileRefused when it is no regular file or character device, or cannot be read).
   * `fromStart`: read what it already holds too (`check`'s one reading); else only what comes after.
   */
  constructor(
    private readonly file: string,
    fromStart = false,
  ) {
    const { fd, stats } = openFollowedFile(file, KERNEL_LOG);
    this.fd = fd;
    this.ino = stats.ino;
    this.device = stats.isCharacterDevice();
    // From the start of a plain file: its last MAX_DRAIN_BYTES, the newest records.
    this.offset = this.device ? 0 : fromStart ? Math.max(0, stats.size - MAX_DRAIN_BYTES) : stats.size;
    // /dev/kmsg cannot seek from Node.js: the backlog is read once and dropped.
    if (this.device && !fromStart) this.drain(() => undefined);
  }

  /** Hands every whole record that came since the last drain to `onRecord`, in order. */
  drain(onRecord: (record: KmsgRecord) => void): DrainCounts {
    const counts: DrainCounts = { unparsed: 0, lost: 0, truncated: 0 };
    if (this.device) this.drainDevice(onRecord, counts);
    else this.drainFile(onRecord, counts);
    if (this.pending) onRecord(this.pending);
    this.pending = undefined;
    return counts;
  }

  /** Closes the descriptor, once (a program stopped twice closes nothing twice). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    closeSync(this.fd);
  }

  private drainDevice(onRecord: (record: KmsgRecord) => void, counts: DrainCounts): void {
    for (;;) {
      let read: number;
      try {
        read = readSync(this.fd, this.buffer, 0, KERNEL_LOG.maxBytes, null);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === 'EAGAIN') return;
        // The ring buffer wrapped past the next record: the read goes on from the oldest one left.
        if (code === 'EPIPE') {
          counts.lost += 1;
          continue;
        }
        throw error;
      }
      if (read === 0) return;
      this.takeBytes(this.buffer.subarray(0, read), onRecord, counts);
      // Each read() is one whole record: its last line ends it.
      if (this.carryBytes > 0 || this.cut) this.endLine(onRecord, counts);
    }
  }

  private drainFile(onRecord: (record: KmsgRecord) => void, counts: DrainCounts): void {
    this.followRotation();
    let budget = MAX_DRAIN_BYTES;
    while (budget > 0) {
      const read = readSync(this.fd, this.buffer, 0, Math.min(this.buffer.length, budget), this.offset);
      if (read === 0) return;
      this.offset += read;
      budget -= read;
      this.takeBytes(this.buffer.subarray(0, read), onRecord, counts);
    }
  }

  /** Another file at the path (rotated), or this one truncated: read it from its start. */
  private followRotation(): void {
    let current: number;
    try {
      current = statSync(this.file).ino;
    } catch {
      // Moved away and not created again yet: what was written to the old file is still read.
      return;
    }
    if (current !== this.ino) {
      try {
        const { fd, stats } = openFollowedFile(this.file, KERNEL_LOG);
        if (!stats.isFile()) {
          closeSync(fd);
          return;
        }
        closeSync(this.fd);
        this.fd = fd;
        this.ino = stats.ino;
        this.offset = 0;
        this.carry = [];
        this.carryBytes = 0;
        this.cut = false;
      } catch {
        return;
      }
    } else if (fstatSync(this.fd).size < this.offset) {
      this.offset = 0;
    }
  }

  private takeBytes(bytes: Buffer, onRecord: (record: KmsgRecord) => void, counts: DrainCounts): void {
    let start = 0;
    while (start < bytes.length) {
      const end = bytes.indexOf(NEWLINE, start);
      const stop = end === -1 ? bytes.length : end;
      this.keep(bytes.subarray(start, stop));
      if (end === -1) return;
      this.endLine(onRecord, counts);
      start = end + 1;
    }
  }

  /** Keeps a line's bytes up to the record limit; the rest of a longer line is dropped. */
  private keep(part: Buffer): void {
    const room = KERNEL_LOG.maxBytes - this.carryBytes;
    if (part.length > room) this.cut = true;
    const kept = part.subarray(0, Math.max(0, room));
    if (kept.length === 0) return;
    // Copied: the read buffer is used again.
    this.carry.push(Buffer.from(kept));
    this.carryBytes += kept.length;
  }

  private endLine(onRecord: (record: KmsgRecord) => void, counts: DrainCounts): void {
    const line = Buffer.concat(this.carry, this.carryBytes).toString('utf8');
    if (this.cut) counts.truncated += 1;
    this.carry = [];
    this.carryBytes = 0;
    this.cut = false;
    if (line.startsWith(' ')) {
      if (this.pending) addContinuation(this.pending, line);
      return;
    }
    if (this.pending) onRecord(this.pending);
    this.pending = parseKmsgHeaderLine(line);
    if (!this.pending && line.length > 0) counts.unparsed += 1;
  }
}
