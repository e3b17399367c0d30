// The one way the exporter reads a file a person points it at (the config file, the web config
// file and its certificates, the cabling plan, the node-name-map): a regular file of a bounded
// size, or an error that names the file and the reason. A FIFO in a file's place would block the
// event loop until a writer comes (forever, at start: a silent hang), a directory or a device is
// no file to parse, and a file far larger than any real one costs seconds and gigabytes to parse.
// The size is checked on the opened descriptor, and the reading stops past the limit, so a file
// swapped or grown between the check and the read is refused the same way.
import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';

/** What a file is for, and the largest such file taken (README "Files and their limits"). */
export interface FileKind {
  /** How messages name it: `config file`, `web config file`… */
  name: string;
  maxBytes: number;
}

const MiB = 1024 * 1024;

/** --config.file: a few hundred lines at most. */
export const CONFIG_FILE: FileKind = { name: 'config file', maxBytes: 1 * MiB };
/** --web.config.file: bcrypt users take about 80 bytes each, so 4 MiB is some 50 000 users. */
export const WEB_CONFIG_FILE: FileKind = { name: 'web config file', maxBytes: 4 * MiB };
/** The certificate, key and CA files the web config names: a CA bundle is a few hundred KiB. */
export const PEM_FILE: FileKind = { name: 'PEM file', maxBytes: 1 * MiB };
/** --fabric.topology-file: a saved ibnetdiscover of 120 000 switch ports is about 15 MB. */
export const CABLING_PLAN_FILE: FileKind = { name: 'cabling plan', maxBytes: 32 * MiB };
/** --fabric.state-dir's bad-links state: about 200 bytes per link judged bad, a few hundred links at most. */
export const VERDICT_STATE_FILE: FileKind = { name: 'bad-links state file', maxBytes: 16 * MiB };
/** --fabric.node-name-map: one short line per node. */
export const NODE_NAME_MAP_FILE: FileKind = { name: 'node-name-map', maxBytes: 16 * MiB };
/** --jobs.file: the running jobs, a few lines each; 10 000 jobs of hostlists are well under 16 MiB. */
export const JOBS_FILE: FileKind = { name: 'jobs file', maxBytes: 16 * MiB };
/** --path.kmsg, followed rather than read: the limit is one record's (the kernel's own is 8 KiB). */
export const KERNEL_LOG: FileKind = { name: 'kernel log', maxBytes: 8 * 1024 };

/** A file that was not read, with the reason in one phrase (`is a FIFO, not a regular file`). */
export class FileRefused extends Error {
  override readonly name = 'FileRefused';
  constructor(
    readonly file: string,
    readonly kind: FileKind,
    readonly reason: string,
  ) {
    super(`${kind.name} ${file}: ${reason}`);
  }
}

// O_NONBLOCK: open() of a FIFO returns at once instead of waiting for a writer.
const OPEN_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY;

function fileType(stats: Stats): string {
  if (stats.isDirectory()) return 'a directory';
  if (stats.isFIFO()) return 'a FIFO';
  if (stats.isSocket()) return 'a socket';
  if (stats.isCharacterDevice()) return 'a character device';
  if (stats.isBlockDevice()) return 'a block device';
  return 'not a regular file';
}

function sizeText(bytes: number): string {
  return bytes >= MiB ? `${(bytes / MiB).toFixed(1)} MiB` : `${bytes} bytes`;
}

/**
 * A file that is followed as it grows, a record at a time (the kernel log): a regular file or a
 * character device (/dev/kmsg), opened non-blocking; its descriptor and what fstat said. The
 * follower bounds each record by `kind.maxBytes` and never reads the whole file at once.
 */
export function openFollowedFile(file: string, kind: FileKind): { fd: number; stats: Stats } {
  let fd: number;
  try {
    fd = openSync(file, OPEN_FLAGS);
  } catch (error) {
    throw new FileRefused(file, kind, `cannot be read: ${(error as Error).message}`);
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile() && !stats.isCharacterDevice())
      throw new FileRefused(file, kind, `is ${fileType(stats)}, not a regular file or a character device`);
    return { fd, stats };
  } catch (error) {
    closeSync(fd);
    if (error instanceof FileRefused) throw error;
    throw new FileRefused(file, kind, `cannot be read: ${(error as Error).message}`);
  }
}

/**
 * Reads a bounded file through `read` (sync or async, the same steps): one byte more than fstat
 * said, so that a file that grew since (being written) is read on, up to the limit.
 */
function* readSteps(file: string, kind: FileKind, stats: Stats): Generator<{ buffer: Buffer; offset: number }, Buffer, number> {
  if (!stats.isFile()) throw new FileRefused(file, kind, `is ${fileType(stats)}, not a regular file`);
  if (stats.size > kind.maxBytes)
    throw new FileRefused(file, kind, `is ${sizeText(stats.size)}, more than the ${sizeText(kind.maxBytes)} a ${kind.name} may have`);
  let buffer = Buffer.allocUnsafe(stats.size + 1);
  let length = 0;
  for (;;) {
    if (length === buffer.length) {
      if (length > kind.maxBytes) throw new FileRefused(file, kind, `is more than the ${sizeText(kind.maxBytes)} a ${kind.name} may have`);
      const larger = Buffer.allocUnsafe(kind.maxBytes + 1);
      buffer.copy(larger, 0, 0, length);
      buffer = larger;
    }
    const read = yield { buffer, offset: length };
    if (read === 0) return buffer.subarray(0, length);
    length += read;
  }
}

function refused(file: string, kind: FileKind, error: unknown): FileRefused {
  return error instanceof FileRefused ? error : new FileRefused(file, kind, `cannot be read: ${(error as Error).message}`);
}

/** The file's bytes; a FileRefused when it cannot be opened, is no regular file, or is too large. */
export function readBoundedFile(file: string, kind: FileKind): Buffer {
  let fd: number;
  try {
    fd = openSync(file, OPEN_FLAGS);
  } catch (error) {
    throw refused(file, kind, error);
  }
  try {
    const steps = readSteps(file, kind, fstatSync(fd));
    let step = steps.next(0);
    while (!step.done)
      step = steps.next(readSync(fd, step.value.buffer, step.value.offset, step.value.buffer.length - step.value.offset, null));
    return step.value;
  } catch (error) {
    throw refused(file, kind, error);
  } finally {
    closeSync(fd);
  }
}

/**
 * readBoundedFile off the event loop (libuv's threads read): for the files read again while the
 * exporter serves (the cabling plan, the node-name-map, the jobs file), up to tens of MiB.
 */
export async function readBoundedFileAsync(file: string, kind: FileKind): Promise<Buffer> {
  let handle: FileHandle;
  try {
    handle = await open(file, OPEN_FLAGS);
  } catch (error) {
    throw refused(file, kind, error);
  }
  try {
    const steps = readSteps(file, kind, await handle.stat());
    let step = steps.next(0);
    while (!step.done) {
      const { buffer, offset } = step.value;
      step = steps.next((await handle.read(buffer, offset, buffer.length - offset, null)).bytesRead);
    }
    return step.value;
  } catch (error) {
    throw refused(file, kind, error);
  } finally {
    await handle.close();
  }
}

/** The file as UTF-8 text (see readBoundedFileAsync). */
export async function readBoundedTextAsync(file: string, kind: FileKind): Promise<string> {
  return (await readBoundedFileAsync(file, kind)).toString('utf8');
}

/** The file as UTF-8 text (see readBoundedFile). */
export function readBoundedText(file: string, kind: FileKind): string {
  return readBoundedFile(file, kind).toString('utf8');
}
