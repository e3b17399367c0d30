// Reading sysfs safely: only regular files, never blocking, bounded in size. A FIFO, socket,
// device node or directory where an attribute should be is an error for that file, not a hang.
import { closeSync, constants, fstatSync, openSync, read, type Dirent } from 'node:fs';
import { readdir, realpath } from 'node:fs/promises';
import path from 'node:path';

/** Sysfs attributes are at most one page (4 KiB here); anything larger is not a sysfs attribute. */
export const MAX_ATTRIBUTE_BYTES = 8191;

// Read buffers are reused: a fresh 8 KiB buffer per file made a 64-device cycle allocate 66 MB
// outside the heap, which the process kept as resident memory long after.
const READ_BUFFERS: Buffer[] = [];
const MAX_SPARE_BUFFERS = 256;

// O_NONBLOCK makes open() of a FIFO return at once instead of waiting for a writer.
const OPEN_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY;

export type ReadFailure =
  | { kind: 'missing'; message: string }
  | { kind: 'error'; message: string };

export type ReadResult = { ok: true; text: string } | { ok: false; failure: ReadFailure };

function describeType(stats: { isDirectory(): boolean; isFIFO(): boolean; isSocket(): boolean; isCharacterDevice(): boolean; isBlockDevice(): boolean }): string {
  if (stats.isDirectory()) return 'a directory';
  if (stats.isFIFO()) return 'a FIFO';
  if (stats.isSocket()) return 'a socket';
  if (stats.isCharacterDevice()) return 'a character device';
  if (stats.isBlockDevice()) return 'a block device';
  return 'not a regular file';
}

function errorCode(error: unknown): string | undefined {
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

/** Reads attribute files and lists directories below one root (`--path.sysfs`). */
export class SysfsFiles {
  readonly root: string;

  constructor(root: string) {
    this.root = root;
  }

  resolve(relative: string): string {
    return path.join(this.root, relative);
  }

  /**
   * Read one attribute file; the text keeps its content but loses one trailing newline.
   *
   * Only the read itself goes to the thread pool: that is where a driver may take its time (a PMA
   * counter is a query to the HCA). Opening a sysfs file (non-blocking, so a FIFO does not wait for
   * a writer), fstat and close are in-memory kernfs calls of a microsecond, and doing them inline
   * makes a cycle about three times faster than four thread-pool round trips per file.
   */
  async read(relative: string): Promise<ReadResult> {
    let fd: number;
    try {
      fd = openSync(this.resolve(relative), OPEN_FLAGS);
    } catch (error) {
      return { ok: false, failure: { kind: isMissing(error) ? 'missing' : 'error', message: describeError(error) } };
    }
    try {
      const stats = fstatSync(fd);
      if (!stats.isFile()) return { ok: false, failure: { kind: 'error', message: `${describeType(stats)}, not a regular file` } };
      // sysfs reports st_size 4096 whatever the content, and returns a whole attribute in one
      // read; a short read of a regular file is its end. One byte more than the limit tells
      // "too large" apart from "exactly at the limit".
      const buffer = READ_BUFFERS.pop() ?? Buffer.allocUnsafeSlow(MAX_ATTRIBUTE_BYTES + 1);
      let text: string;
      try {
        const length = await readAt0(fd, buffer);
        if (length > MAX_ATTRIBUTE_BYTES) {
          return { ok: false, failure: { kind: 'error', message: `larger than ${MAX_ATTRIBUTE_BYTES} bytes: not a sysfs attribute` } };
        }
        text = buffer.toString('utf8', 0, length);
      } finally {
        if (READ_BUFFERS.length < MAX_SPARE_BUFFERS) READ_BUFFERS.push(buffer);
      }
      return { ok: true, text: text.endsWith('\n') ? text.slice(0, -1) : text };
    } catch (error) {
      return { ok: false, failure: { kind: isMissing(error) ? 'missing' : 'error', message: describeError(error) } };
    } finally {
      try {
        closeSync(fd);
      } catch {
        // nothing left to release
      }
    }
  }

  /**
   * List a directory's entries, sorted. `missing` when it does not exist; entries that are not
   * directories or symlinks are left out when `directoriesOnly` is set.
   */
  async list(relative: string, options: { directoriesOnly?: boolean } = {}): Promise<{ ok: true; names: string[] } | { ok: false; failure: ReadFailure }> {
    let entries: Dirent[];
    try {
      entries = await readdir(this.resolve(relative), { withFileTypes: true });
    } catch (error) {
      return { ok: false, failure: { kind: isMissing(error) ? 'missing' : 'error', message: describeError(error) } };
    }
    const names = entries
      .filter((entry) => !options.directoriesOnly || entry.isDirectory() || entry.isSymbolicLink())
      .map((entry) => entry.name)
      .sort(compareNatural);
    return { ok: true, names };
  }

  /** The canonical path a symlink such as `class/net/ib0/device` points to, or undefined. */
  async target(relative: string): Promise<string | undefined> {
    try {
      return await realpath(this.resolve(relative));
    } catch {
      return undefined;
    }
  }
}

function readAt0(fd: number, buffer: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    read(fd, buffer, 0, buffer.length, 0, (error, bytesRead) => (error ? reject(error) : resolve(bytesRead)));
  });
}

// One collator for every comparison: localeCompare with options builds a new one per call, which
// made sorting directory listings a tenth of a collection cycle.
const NATURAL = new Intl.Collator('en', { numeric: true });

/** Order `mlx5_2` before `mlx5_10` and port `2` before `10`. */
export function compareNatural(a: string, b: string): number {
  return NATURAL.compare(a, b);
}
