// Reading sysfs safely: only regular files, never blocking, bounded in size. A FIFO, socket,
// device node or directory where an attribute should be is an error for that file, not a hang.
//
// Reads are synchronous: opening, reading and closing a sysfs attribute are in-memory kernfs calls
// of a few microseconds (5.9 us for open + pread + close here), while one thread-pool job per file
// cost 20 us of CPU and two context switches. The price: a driver that hangs inside a read now
// stalls the event loop (scrapes included) for as long as it hangs, where before it stalled one
// thread-pool thread. Callers yield to the event loop between devices.
//
// Files read on every pass (counters, states, rate, LIDs) can be kept open and read again with a
// pread at offset 0, which makes the kernel format the attribute afresh: one system call per file
// instead of three, and no path lookup (7.6 us of CPU per file down to 2.4 us on the benchmark
// tree). What could make a kept descriptor read something other than what the path names now:
//   - on sysfs, a device that goes away: its kernfs files answer ENODEV from then on, and a kept
//     file that fails any read is closed and opened again by its path;
//   - on a plain directory tree (fixtures, the generated benchmark trees, a copy of a host), a file
//     or directory replaced by another: that changes the directory it was in, so the directory's
//     inode number, mtime and ctime are compared once per pass (one stat per directory, not per
//     file) and its files opened again when they differ. A directory changed in the last
//     RECENT_CHANGE_MS is not trusted to show the next change (timestamps are coarse): its files
//     are opened, read and closed as if not kept until it has been quiet that long.
// At most half the process's limit on open files is kept (45 files per mlx5 port: 23 000 at 256
// devices); files beyond that are opened at each reading. Should opening fail for want of
// descriptors all the same (EMFILE), every kept file is closed and nothing is kept from then on.
import { accessSync, openSync, readdirSync, realpathSync, statSync } from 'node:fs';
import {
  NO_THROW_IF_ABSENT,
  OPEN_FLAGS,
  RECENT_CHANGE_MS,
  type ReadFailure,
  type ReadResult,
  errorCode,
  decode,
  parseDecimal,
  type ListResult,
  failed,
  type BytesResult,
  openFilesLimit,
  readOpenFile,
  readKeptFile,
  closeQuietly,
} from './sysfs-attribute.js';
import { compareNatural } from '../model/natural-order.js';

export interface SysfsFilesOptions {
  /**
   * Keep files read with `keep` open between passes (see the top of this file). The owner marks
   * each pass with beginPass() and closes the files with close().
   */
  keepOpen?: boolean;
  /** Told once why files are no longer kept open (the process ran out of file descriptors). */
  onKeepingStopped?: (reason: string) => void;
  /** At most this many files kept open; default half the process's limit on open files. */
  maxKeptFiles?: number;
  now?: () => number;
}

/** A directory with kept files, as it was when they were opened. */
interface KeptDirectory {
  /** Inode number, mtime and ctime (ms); NaN when the directory could not be stat'ed. */
  ino: number;
  mtimeMs: number;
  ctimeMs: number;
  /** The pass in which the signature was last compared. */
  checkedInPass: number;
  /** Unchanged for RECENT_CHANGE_MS: its files may be kept. */
  quiet: boolean;
  files: Map<string, number>;
}

export class SysfsFiles {
  readonly root: string;
  private readonly prefix: string;
  private keepOpen: boolean;
  private readonly onKeepingStopped: ((reason: string) => void) | undefined;
  private readonly now: () => number;
  private readonly kept = new Map<string, KeptDirectory>();
  /** Kept listings: the names as the directory listed them, and sorted. */
  private readonly listings = new Map<string, { listed: readonly string[]; sorted: readonly string[] }>();
  private readonly maxKept: number;
  private keptCount = 0;
  private pass = 0;

  constructor(root: string, options: SysfsFilesOptions = {}) {
    this.root = root;
    this.prefix = root.endsWith('/') ? root : `${root}/`;
    this.keepOpen = options.keepOpen ?? false;
    this.onKeepingStopped = options.onKeepingStopped;
    this.maxKept = options.maxKeptFiles ?? (this.keepOpen ? Math.floor(openFilesLimit() / 2) : 0);
    this.now = options.now ?? Date.now;
  }

  /** A new pass over the files: directories of kept files are compared again on their next read. */
  beginPass(): void {
    this.pass++;
  }

  /** How many files are kept open. */
  get keptFiles(): number {
    return this.keptCount;
  }

  /** Close the kept files below `relative` (a device that went away), or all of them. */
  release(relative?: string): void {
    for (const [path, directory] of this.kept) {
      if (relative !== undefined && path !== relative && !path.startsWith(`${relative}/`)) continue;
      this.closeAll(directory);
      this.kept.delete(path);
    }
  }

  /** Close every kept file; reads after this open files as they go. */
  close(): void {
    this.release();
    this.keepOpen = false;
  }

  /** The path of `relative` below the root (`relative` never climbs out of it). */
  resolve(relative: string): string {
    return this.prefix + relative;
  }

  /**
   * Read one attribute file; the text keeps its content but loses one trailing newline. Only a
   * failed or empty read costs an fstat, to say what the file is instead. With `keep` (and
   * `keepOpen`), the file stays open for the next pass.
   */
  read(relative: string, keep = false): ReadResult {
    const read = this.readBytes(relative, keep);
    return read.ok ? { ok: true, text: decode(read.length) } : read;
  }

  /**
   * Read attributes of one directory that should each hold one unsigned decimal (a port's
   * counters), parsed from the bytes without making a string of them: `values[i]` is the value of
   * `names[i]`, or undefined with the file's text (`N/A (no PMA)`, garbage) or failure in `others`
   * for the caller to judge. Counters are most of the files of a host.
   */
  readDecimals(
    directory: string,
    names: readonly string[],
    keep: boolean,
    values: (bigint | undefined)[],
    others: { index: number; result: ReadResult }[],
  ): void {
    const kept = keep && this.keepOpen ? this.keptDirectory(directory) : undefined;
    const prefix = `${directory}/`;
    for (let i = 0; i < names.length; i++) {
      const name = names[i]!;
      let length = kept === undefined ? -1 : this.readKept(kept, name);
      if (length < 0) {
        const read = this.openAndRead(prefix + name, name, kept);
        if (!read.ok) {
          values[i] = undefined;
          others.push({ index: i, result: read });
          continue;
        }
        length = read.length;
      }
      const value = parseDecimal(length);
      values[i] = value;
      if (value === undefined) others.push({ index: i, result: { ok: true, text: decode(length) } });
    }
  }

  /** Whether the directory `relative` is there: `missing`, or an error such as ENOTDIR. */
  directoryPresent(relative: string): { ok: true } | { ok: false; failure: ReadFailure } {
    try {
      // The trailing slash makes a file where the directory should be ENOTDIR.
      accessSync(`${this.resolve(relative)}/`);
      return { ok: true };
    } catch (error) {
      return failed(error);
    }
  }

  /** Read a file into the shared buffer; its length in bytes. A kept file stays open. */
  private readBytes(relative: string, keep: boolean): BytesResult {
    const slash = relative.lastIndexOf('/');
    const directory = keep && this.keepOpen ? this.keptDirectory(relative.slice(0, slash)) : undefined;
    const name = relative.slice(slash + 1);
    const length = directory === undefined ? -1 : this.readKept(directory, name);
    return length >= 0 ? { ok: true, length } : this.openAndRead(relative, name, directory);
  }

  /**
   * The length read from the file `name` kept in `directory`; -1 when it is not kept, or when its
   * read failed (gone from sysfs: ENODEV), which closes it for the caller to read it by its path.
   */
  private readKept(directory: KeptDirectory, name: string): number {
    const held = directory.files.get(name);
    if (held === undefined) return -1;
    const length = readKeptFile(held);
    if (length < 0) this.closeKept(directory, name, held);
    return length;
  }

  /** Open `relative`, read it, and keep it open in `directory` when that is quiet and the read worked. */
  private openAndRead(relative: string, name: string, directory: KeptDirectory | undefined): BytesResult {
    let fd: number;
    try {
      fd = openSync(this.resolve(relative), OPEN_FLAGS);
    } catch (error) {
      const code = errorCode(error);
      if ((code !== 'EMFILE' && code !== 'ENFILE') || !this.keepOpen) return failed(error);
      this.stopKeeping(`the process ran out of file descriptors (${code}) with ${this.keptFiles} files kept open`);
      return this.openAndRead(relative, name, undefined);
    }
    const result = readOpenFile(fd);
    if (result.ok && directory?.quiet && this.keepOpen && this.keptCount < this.maxKept) {
      directory.files.set(name, fd);
      this.keptCount++;
    } else {
      closeQuietly(fd);
    }
    return result;
  }

  /** The kept directory `relative`, compared with what it is now once per pass. */
  private keptDirectory(relative: string): KeptDirectory {
    let directory = this.kept.get(relative);
    if (directory?.checkedInPass === this.pass) return directory;
    let ino = Number.NaN;
    let mtimeMs = Number.NaN;
    let ctimeMs = Number.NaN;
    try {
      const stats = statSync(this.resolve(relative), NO_THROW_IF_ABSENT);
      if (stats?.isDirectory()) ({ ino, mtimeMs, ctimeMs } = stats);
    } catch {
      // unreadable: nothing is kept below it
    }
    // Compared as numbers: no string of the fractional timestamps at every pass.
    const known = !Number.isNaN(ino);
    if (!directory) {
      directory = { ino, mtimeMs, ctimeMs, checkedInPass: this.pass, quiet: false, files: new Map() };
      this.kept.set(relative, directory);
    } else if (!known || directory.ino !== ino || directory.mtimeMs !== mtimeMs || directory.ctimeMs !== ctimeMs) {
      this.closeAll(directory);
      directory.ino = ino;
      directory.mtimeMs = mtimeMs;
      directory.ctimeMs = ctimeMs;
    }
    directory.checkedInPass = this.pass;
    directory.quiet = known && this.now() - Math.max(mtimeMs, ctimeMs) >= RECENT_CHANGE_MS;
    if (!directory.quiet) this.closeAll(directory);
    return directory;
  }

  private closeKept(directory: KeptDirectory, name: string, fd: number): void {
    directory.files.delete(name);
    this.keptCount--;
    closeQuietly(fd);
  }

  private closeAll(directory: KeptDirectory): void {
    for (const fd of directory.files.values()) closeQuietly(fd);
    this.keptCount -= directory.files.size;
    directory.files.clear();
  }

  private stopKeeping(reason: string): void {
    this.close();
    this.onKeepingStopped?.(reason);
  }

  /**
   * List a directory's entries, sorted. `missing` when it does not exist; entries that are not
   * directories or symlinks are left out when `directoriesOnly` is set. With `keep` (a directory
   * listed at every pass: the class directories), the sorted listing is kept and reused while the
   * directory lists the same names in the same order.
   */
  list(relative: string, options: { directoriesOnly?: boolean; keep?: boolean } = {}): ListResult {
    let names: string[];
    try {
      const directory = this.resolve(relative);
      names = options.directoriesOnly
        ? readdirSync(directory, { withFileTypes: true })
            .filter((entry) => entry.isDirectory() || entry.isSymbolicLink())
            .map((entry) => entry.name)
        : readdirSync(directory);
    } catch (error) {
      if (options.keep) this.listings.delete(relative);
      return failed(error);
    }
    if (!options.keep) return { ok: true, names: names.sort(compareNatural) };
    const last = this.listings.get(relative);
    if (last && last.listed.length === names.length && last.listed.every((name, i) => name === names[i]))
      return { ok: true, names: [...last.sorted] };
    const sorted = [...names].sort(compareNatural);
    this.listings.set(relative, { listed: names, sorted });
    return { ok: true, names: [...sorted] };
  }

  /** The canonical path a symlink such as `class/net/ib0/device` points to, or undefined. */
  target(relative: string): string | undefined {
    try {
      return realpathSync.native(this.resolve(relative));
    } catch {
      return undefined;
    }
  }
}
