// The host reading, which the sysfs, ipoib and tso collectors share: one pass over sysfs, when a
// scrape (or a diag cycle) wants data younger than --collection.interval, with the port states
// sampled every interval in between; and the sysfs root and file reader of every host collector.
import { statSync } from 'node:fs';
import path from 'node:path';
import { UsageError } from '../../config/errors.js';
import { DURATION, STRING, flag, type Flag, type Settings } from '../../config/flags.js';
import { SysfsFiles } from '../../sources/sysfs-files.js';
import type { CollectorContext, Cycle } from '../../collection/collector.js';

/** Identity and port layout are read again at least this often (firmware updates, node_desc). */
export const IDENTITY_MAX_AGE_MS = 300_000;

export const SYSFS_PATH = flag(STRING, {
  name: 'path.sysfs',
  key: 'path.sysfs',
  default: '/sys',
  help: 'sysfs mount point (/host/sys in a container).',
  check: true,
});

/**
 * The sysfs root must be a sysfs mount: a directory with a `class/` directory in it. That tells a
 * mistyped --path.sysfs (a path that does not exist, a file, /sys/class/infiniband, /host for
 * /host/sys), a usage error, from a host without InfiniBand (sysfs there, no class/infiniband in
 * it), which is served as such. Checked by `serve` and `check` at start, naming the flag or the
 * config file's line.
 */
export function checkSysfsRoot(settings: Settings): void {
  const root = settings.get(SYSFS_PATH);
  const problem = ((): string | undefined => {
    try {
      if (!statSync(root).isDirectory()) return 'is not a directory';
    } catch (error) {
      const { code, message } = error as NodeJS.ErrnoException;
      return code === 'ENOENT' || code === 'ENOTDIR' ? 'does not exist' : `cannot be read (${message})`;
    }
    try {
      if (statSync(path.join(root, 'class')).isDirectory()) return undefined;
    } catch {
      // Said below.
    }
    return 'has no class/ directory: it is not a sysfs mount';
  })();
  if (problem !== undefined) {
    throw new UsageError(
      `${settings.placeOf(SYSFS_PATH)}: ${root} ${problem}; expected the directory where sysfs is mounted (/sys, or /host/sys in a container)`,
    );
  }
}

export const COLLECTION_INTERVAL: Flag<number> = flag(DURATION, {
  name: 'collection.interval',
  key: 'collection.interval',
  default: '10s',
  help: 'How often sysfs and IPoIB are read.',
});

export const HOST_READING: Cycle = {
  name: 'host reading',
  interval: (settings) => settings.get(COLLECTION_INTERVAL),
  deadline: (settings) => settings.get(COLLECTION_INTERVAL),
  onDemand: true,
};

/**
 * The items of a reading under `<root>/<name>/` were read when `name` (a device, an interface) was;
 * other items (the class directory itself) always are (Reading.read).
 */
export function readUnder(root: string, names: ReadonlySet<string>): (item: string) => boolean {
  const prefix = `${root}/`;
  return (item) => !item.startsWith(prefix) || names.has(item.slice(prefix.length).split('/', 1)[0]!);
}

/** The key of the shared sysfs reader (a test may provide its own: CollectorsOptions.provided). */
export const SYSFS_FILES = {};

/**
 * The sysfs reader every host collector shares. A long-running exporter keeps the files it reads
 * every pass open between passes (sources/sysfs-files.ts); `check` opens each once.
 */
export function sysfsFiles(context: CollectorContext): SysfsFiles {
  return context.shared(
    SYSFS_FILES,
    () =>
      new SysfsFiles(context.settings.get(SYSFS_PATH), {
        keepOpen: context.mode === 'serve',
        onKeepingStopped: (reason) =>
          context.logger.warn(`no longer keeping sysfs files open between readings: ${reason}; each reading opens them again`),
      }),
  );
}
