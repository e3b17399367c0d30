// Reading one sysfs attribute safely: only a regular file, never blocking (O_NONBLOCK), at most
// one page, with one buffer for every read. SysfsFiles (sysfs-files.ts) keeps files open and
// decides when to trust them; this is the read itself and its errors.
import { closeSync, constants, fstatSync, readFileSync, readvSync } from 'node:fs';
/** Sysfs attributes are at most one page (4 KiB here); anything larger is not a sysfs attribute. */
export const MAX_ATTRIBUTE_BYTES = 8191;

// One buffer for every read: reads are synchronous, so only one is ever in use. One byte more
// than the limit tells "too large" apart from "exactly at the limit".
const READ_BUFFER = Buffer.allocUnsafeSlow(MAX_ATTRIBUTE_BYTES + 1);
const READ_BUFFERS = [READ_BUFFER];
export const NO_THROW_IF_ABSENT = { throwIfNoEntry: false } as const;

/**
 * pread of the read buffer at offset 0, as a preadv of one buffer: readSync validates five
 * arguments through wrappers that each allocate, readvSync two (0.4 us and about 300 bytes less
 * per file, on the 736 files of an 8-device host at every reading).
 */
function readAtStart(fd: number): number {
  return readvSync(fd, READ_BUFFERS, 0);
}

// O_NONBLOCK makes open() of a FIFO return at once instead of waiting for a writer.
export const OPEN_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY;

/** A directory changed more recently than this may change again within the same timestamp. */
export const RECENT_CHANGE_MS = 2_000;

export type ReadFailure = { kind: 'missing'; message: string } | { kind: 'error'; message: string };

export type ReadResult = { ok: true; text: string } | { ok: false; failure: ReadFailure };

function describeType(stats: {
  isDirectory(): boolean;
  isFIFO(): boolean;
  isSocket(): boolean;
  isCharacterDevice(): boolean;
  isBlockDevice(): boolean;
}): string {
  if (stats.isDirectory()) return 'a directory';
  if (stats.isFIFO()) return 'a FIFO';
  if (stats.isSocket()) return 'a socket';
  if (stats.isCharacterDevice()) return 'a character device';
  if (stats.isBlockDevice()) return 'a block device';
  return 'not a regular file';
}

export function errorCode(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null && 'code' in error ? String((error as { code: unknown }).code) : undefined;
}

function describeError(error: unknown): string {
  const code = errorCode(error);
  if (code === 'EINVAL') return 'the kernel refused the read (EINVAL)';
  if (code === 'EOPNOTSUPP' || code === 'ENOTSUP') return 'not supported by the driver (EOPNOTSUPP)';
  if (code === 'EACCES' || code === 'EPERM') return `permission denied (${code})`;
  if (code === 'ENXIO') return 'a socket or device node (ENXIO)';
  if (code === 'ENOTDIR') return 'not a directory (ENOTDIR)';
  if (code === 'EIO') return 'I/O error (EIO)';
  if (error instanceof Error) return error.message;
  return String(error);
}

// Only ENOENT means "absent". ENOTDIR (a file where a directory should be) is a broken tree.
function isMissing(error: unknown): boolean {
  return errorCode(error) === 'ENOENT';
}

/** The first `length` bytes of the read buffer as text, without one trailing newline. */
export function decode(length: number): string {
  const end = length > 0 && READ_BUFFER[length - 1] === 0x0a ? length - 1 : length;
  return READ_BUFFER.toString('utf8', 0, end);
}

const isSpace = (byte: number): boolean => byte === 0x20 || (byte >= 0x09 && byte <= 0x0d);

/**
 * The unsigned decimal of 1 to 19 digits (so below 2^64) the first `length` bytes hold, with ASCII
 * white space around it; undefined for anything else, which the caller parses from the text.
 */
export function parseDecimal(length: number): bigint | undefined {
  let start = 0;
  while (start < length && isSpace(READ_BUFFER[start]!)) start++;
  let end = start;
  let value = 0;
  while (end < length && READ_BUFFER[end]! >= 0x30 && READ_BUFFER[end]! <= 0x39) value = value * 10 + READ_BUFFER[end++]! - 0x30;
  const digits = end - start;
  for (let i = end; i < length; i++) if (!isSpace(READ_BUFFER[i]!)) return undefined;
  if (digits === 0 || digits > 19) return undefined;
  // Up to 15 digits the number is exact; beyond, the digits are parsed again as a bigint.
  return digits <= 15 ? BigInt(value) : BigInt(READ_BUFFER.toString('latin1', start, end));
}

export type ListResult = { ok: true; names: string[] } | { ok: false; failure: ReadFailure };

export function failed(error: unknown): { ok: false; failure: ReadFailure } {
  return { ok: false, failure: { kind: isMissing(error) ? 'missing' : 'error', message: describeError(error) } };
}

/** What an open file that did not read like an attribute is, when it is not a regular file. */
function notRegular(fd: number): string | undefined {
  try {
    const stats = fstatSync(fd);
    return stats.isFile() ? undefined : `${describeType(stats)}, not a regular file`;
  } catch {
    return undefined;
  }
}

export type BytesResult = { ok: true; length: number } | { ok: false; failure: ReadFailure };

/**
 * The soft limit on open files (Node.js raises it to the hard limit at start), from
 * /proc/self/limits; 1024 when it cannot be read.
 */
export function openFilesLimit(): number {
  try {
    const line = /^Max open files\s+(\S+)/m.exec(readFileSync('/proc/self/limits', 'latin1'));
    if (line?.[1] === 'unlimited') return 1 << 20;
    const limit = Number(line?.[1]);
    return Number.isSafeInteger(limit) && limit > 0 ? limit : 1024;
  } catch {
    return 1024;
  }
}

/** Read a file just opened, from offset 0, into the shared buffer. */
export function readOpenFile(fd: number): BytesResult {
  let length: number;
  try {
    // sysfs reports st_size 4096 whatever the content, and returns a whole attribute in one read;
    // a short read of a regular file is its end. A pread at offset 0 is refused by a FIFO or
    // socket (ESPIPE) without blocking or consuming what a writer put there, and by a directory
    // (EISDIR).
    length = readAtStart(fd);
  } catch (error) {
    const kind = notRegular(fd);
    return kind === undefined ? failed(error) : { ok: false, failure: { kind: 'error', message: kind } };
  }
  if (length > MAX_ATTRIBUTE_BYTES) {
    return { ok: false, failure: { kind: 'error', message: `larger than ${MAX_ATTRIBUTE_BYTES} bytes: not a sysfs attribute` } };
  }
  if (length === 0) {
    const kind = notRegular(fd);
    if (kind !== undefined) return { ok: false, failure: { kind: 'error', message: kind } };
  }
  return { ok: true, length };
}

/**
 * The length read from a kept file, again from offset 0, where sysfs formats the attribute afresh
 * however often the file was read. It was a regular file when it was opened, so an empty read is
 * empty content; -1 when the read failed or was too large: the caller then reads it by its path.
 */
export function readKeptFile(fd: number): number {
  try {
    const length = readAtStart(fd);
    return length > MAX_ATTRIBUTE_BYTES ? -1 : length;
  } catch {
    return -1;
  }
}

export function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // nothing left to release
  }
}

/** Reads attribute files and lists directories below one root (`--path.sysfs`). */
