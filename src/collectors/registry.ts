// The registry: every collector, in the order of the exposition and of the reports. Adding a
// collector is one module under src/collectors/ and one line here (docs/architecture.md).
// Everything else is derived from the list: the flags and the config file's schema, the
// collector metrics, the schedules, `check`'s cycle and its "Not checked" list.
import type { Flag, Section } from '../config/flags.js';
import type { Collector } from '../collection/collector.js';
import { FABRIC_CABLING } from './fabric/cabling/index.js';
import { FABRIC_DISCOVERY } from './fabric/discovery.js';
import { FABRIC_MODULE } from './fabric/fabric-module.js';
import { FABRIC_PORTS } from './fabric/ports/index.js';
import { FABRIC_SA } from './fabric/sa.js';
import { JOBS } from './fabric/jobs/index.js';
import { HOST_JOBS } from './host/host-jobs.js';
import { FABRIC_VERDICT } from './fabric/verdict/index.js';
import { IPOIB } from './host/ipoib.js';
import { KERNEL } from './host/kernel.js';
import { MODULE } from './host/module.js';
import { PCIE } from './host/pcie.js';
import { PERFQUERY } from './diag/perfquery.js';
import { SMINFO } from './diag/sminfo.js';
import { SMPQUERY } from './diag/smpquery.js';
import { SYSFS } from './host/sysfs/index.js';
import { TSO } from './host/tso.js';

export const COLLECTORS: readonly Collector[] = [
  SYSFS,
  IPOIB,
  TSO,
  PCIE,
  MODULE,
  HOST_JOBS,
  KERNEL,
  SMPQUERY,
  SMINFO,
  PERFQUERY,
  FABRIC_DISCOVERY,
  FABRIC_PORTS,
  FABRIC_SA,
  FABRIC_CABLING,
  JOBS,
  FABRIC_VERDICT,
  FABRIC_MODULE,
];

/** The flags of `collectors`, each once, in the order they first appear. */
export function collectorFlags(collectors: readonly Collector[]): Flag<unknown>[] {
  return [...new Set(collectors.flatMap((collector) => [...(collector.enabledBy ? [collector.enabledBy] : []), ...collector.flags]))];
}

/** The config file's sections without flags, each once. */
export function collectorSections(collectors: readonly Collector[]): Section<unknown>[] {
  return [...new Set(collectors.flatMap((collector) => collector.sections ?? []))];
}
