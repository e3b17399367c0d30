// The sysfs collector: /sys/class/infiniband/<device>/… — every device, its identity and ports,
// their states, rates and PMA and hardware counters. Its reading is the host's inventory
// (Snapshot.devices) that every other host collector reads about; it writes the device and port
// families, from its own reading and what the diag collectors added to a port (the expected rate
// smpquery found, the counters perfquery read where sysfs has none), and judges each port.
//
// How often each file is read (docs/benchmarks.md, "What changed"):
//   - `state` and `phys_state` of every port: every --collection.interval (sample), so that flaps
//     between scrapes are counted in infiniband_port_state_changes_total;
//   - everything else that changes (rate, LIDs, PMA and hw counters): in a full reading, which runs
//     when a scrape wants data older than one interval, or after a sample saw a port change state
//     or the device list change;
//   - device identity and port layout (node type, GUIDs, firmware, board, description, link layer,
//     port GUID, SM SL, LMC, capability mask, which counter files exist): with the first full
//     reading of a device, then again when one of its ports changed state, when the last reading
//     of it had errors, and every IDENTITY_MAX_AGE_MS.
import { defineCollector, type Collector } from '../../../collection/collector.js';
import { COLLECTION_INTERVAL, HOST_READING, SYSFS_PATH, checkSysfsRoot } from '../host-reading.js';
import { PERFQUERY_PART, SMPQUERY_PART, SYSFS_PART, type SysfsPart } from '../../parts.js';
import { DEVICE_EXCLUDE, DEVICE_INCLUDE, EXPECTATIONS, SysfsReader } from './reader.js';
import { FAMILIES, PORT_STATE_SERIES, writeMetrics } from './metrics.js';
export { DEVICE_EXCLUDE, DEVICE_INCLUDE, EXPECTATIONS, PORT_STATE_SERIES };
import { judge } from './findings.js';

export const SYSFS: Collector<SysfsPart> = defineCollector({
  name: SYSFS_PART.name,
  checks: 'ports, links and counters',
  flags: [SYSFS_PATH, COLLECTION_INTERVAL, DEVICE_INCLUDE, DEVICE_EXCLUDE, PORT_STATE_SERIES],
  sections: [EXPECTATIONS],
  scope: 'host',
  schedule: { cycle: HOST_READING },
  onOverrun: 'keep',
  verify: checkSysfsRoot,
  setUp: (context) => new SysfsReader(context),
  metrics: { families: FAMILIES, inputs: [SMPQUERY_PART, PERFQUERY_PART], write: writeMetrics },
  findings: judge,
  failure: {
    consequence: 'what it reads is missing',
    meaning: 'The checks built on this collector could not run: its problems would not show.',
    cause: 'A wrong --path.sysfs, or a driver returning errors.',
  },
});
