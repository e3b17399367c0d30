// Which local ports have a umad device (/sys/class/infiniband_mad/umad<N>: `ibdev` and `port`):
// the infiniband-diags tools reach the fabric through /dev/infiniband/umad<N> only, so a port
// without one (ib_umad not loaded, a container without the devices' sysfs) cannot be queried.
import { portKey } from '../model/host.js';
import type { SysfsFiles } from './sysfs-files.js';

export const INFINIBAND_MAD_CLASS = 'class/infiniband_mad';

export interface UmadReading {
  /** `portKey(device, port)` of every port with a umad device. */
  ports: ReadonlySet<string>;
  /** Why there are none, for the log: the class directory is missing or unreadable. */
  reason: string | undefined;
}

export function readUmadPorts(files: SysfsFiles): UmadReading {
  const listing = files.list(INFINIBAND_MAD_CLASS);
  if (!listing.ok) {
    const reason =
      listing.failure.kind === 'missing'
        ? `${files.resolve(INFINIBAND_MAD_CLASS)} does not exist (is the ib_umad module loaded?)`
        : `cannot list ${files.resolve(INFINIBAND_MAD_CLASS)}: ${listing.failure.message}`;
    return { ports: new Set(), reason };
  }
  const ports = new Set<string>();
  // issm<N> entries (the IsSM capability devices) sit in the same class; only umad<N> carry MADs.
  for (const name of listing.names.filter((entry) => /^umad\d+$/.test(entry))) {
    const device = files.read(`${INFINIBAND_MAD_CLASS}/${name}/ibdev`);
    const port = files.read(`${INFINIBAND_MAD_CLASS}/${name}/port`);
    if (device.ok && port.ok && /^\d{1,3}$/.test(port.text.trim())) ports.add(portKey(device.text.trim(), Number(port.text.trim())));
  }
  return { ports, reason: ports.size === 0 ? `no umad device in ${files.resolve(INFINIBAND_MAD_CLASS)}` : undefined };
}
