// The host reading, which the sysfs, ipoib and tso collectors share: one pass over sysfs, when a
// scrape (or a diag cycle) wants data younger than --collection.interval, with the port states
// sampled every interval in between; and the sysfs root and file reader of every host collector.
import { DURATION, STRING, flag, type Flag } from '../config/flags.js';
import { SysfsFiles } from '../sources/sysfs-files.js';
import type { CollectorContext, Cycle } from './collector.js';

export const SYSFS_PATH = flag(STRING, { name: 'path.sysfs', key: 'path.sysfs', default: '/sys', help: 'sysfs mount point (/host/sys in a container).', check: true });

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

/** The key of the shared sysfs reader (a test may provide its own: CollectorsOptions.provided). */
export const SYSFS_FILES = {};

/**
 * The sysfs reader every host collector shares. A long-running exporter keeps the files it reads
 * every pass open between passes (sources/sysfs-files.ts); `check` opens each once.
 */
export function sysfsFiles(context: CollectorContext): SysfsFiles {
  return context.shared(SYSFS_FILES, () => new SysfsFiles(context.settings.get(SYSFS_PATH), {
    keepOpen: context.mode === 'serve',
    onKeepingStopped: (reason) => context.logger.warn(`no longer keeping sysfs files open between readings: ${reason}; each reading opens them again`),
  }));
}
