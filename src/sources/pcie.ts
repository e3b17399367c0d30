// The PCIe source: the link of the PCI function behind one InfiniBand device, from the `device`
// symlink of /sys/class/infiniband/<device> (current and maximum speed and width, the maximum of
// the port above it, AER message totals).
//
// These files change only when the link trains (boot, a reset, a hot-plug), so the collector reads
// them with the device identity, when a device appears or is read again, never on every cycle: a
// degraded link stays degraded until someone acts. AER totals grow, but only with hardware faults;
// reading them with the identity is as often as a person acts on them.
//
// A device without these files (a VF on some kernels, a kernel before 4.13 without the link files
// or before 4.19 without AER statistics, a software device such as rxe with no PCI function) gives
// no reading and no error: absent files are optional attributes. A file that is there but cannot
// be read or parsed is one error for that file.
import {
  AER_FILES,
  AER_SEVERITIES,
  parseAerTotal,
  parsePcieSpeed,
  parsePcieWidth,
  type AerSeverity,
  type PcieLinkRate,
  type PcieReading,
} from '../model/pcie.js';
import type { ItemError } from '../model/snapshot.js';
import { INFINIBAND_CLASS } from './infiniband.js';
import type { SysfsFiles } from './sysfs-files.js';

/** An item that could not be read; the collector reports it. */
export type PcieReadError = ItemError;

export interface PcieSourceReading {
  /** Undefined when the device has no PCIe link attributes (see the top of this file). */
  pcie: PcieReading | undefined;
  errors: PcieReadError[];
}

const PCI_ADDRESS = /^[0-9a-f]{4,}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$/i;

/**
 * Read the PCIe link of `device` (a name of /sys/class/infiniband). Never throws. The entry point
 * of the `pcie` collector: call it for each device when its identity is read.
 */
export function readPcieLink(files: SysfsFiles, device: string): PcieSourceReading {
  const errors: PcieReadError[] = [];
  const base = `${INFINIBAND_CLASS}/${device}/device`;

  /** The text of `relative` below the PCI function; undefined when absent or unreadable (then an error). */
  const read = (relative: string): string | undefined => {
    const result = files.read(`${base}/${relative}`);
    if (result.ok) return result.text;
    if (result.failure.kind !== 'missing') errors.push({ item: `${base}/${relative}`, message: result.failure.message });
    return undefined;
  };
  const parsed = <T>(relative: string, parse: (text: string) => T | 'unknown' | undefined, expected: string): T | undefined => {
    const text = read(relative);
    if (text === undefined) return undefined;
    const value = parse(text);
    if (value === undefined)
      errors.push({
        item: `${base}/${relative}`,
        message: `unexpected content ${JSON.stringify(text.slice(0, 40))}, expected ${expected}`,
      });
    return value === 'unknown' ? undefined : value;
  };
  const rate = (prefix: string): PcieLinkRate => ({
    gtps: parsed(`${prefix}_link_speed`, parsePcieSpeed, 'a PCIe speed like "16.0 GT/s PCIe"'),
    lanes: parsed(`${prefix}_link_width`, parsePcieWidth, 'a lane count like "16"'),
  });

  const current = rate('current');
  const max = rate('max');
  if ([current.gtps, current.lanes, max.gtps, max.lanes].every((value) => value === undefined)) return { pcie: undefined, errors };

  // `..` of a path through a symlink is the parent of its target: the port the function hangs from.
  const upstream = rate('../max');
  const aer: Partial<Record<AerSeverity, number>> = {};
  for (const severity of AER_SEVERITIES) {
    const total = parsed(
      AER_FILES[severity].file,
      (text) => parseAerTotal(text, severity),
      `lines "<error> <count>" ending with ${AER_FILES[severity].total}`,
    );
    if (total !== undefined) aer[severity] = total;
  }
  const target = files.target(base);
  const name = target?.slice(target.lastIndexOf('/') + 1);
  return {
    pcie: {
      device,
      address: name !== undefined && PCI_ADDRESS.test(name) ? name.toLowerCase() : undefined,
      current,
      max,
      upstream: upstream.gtps === undefined && upstream.lanes === undefined ? undefined : upstream,
      aer,
    },
    errors,
  };
}
