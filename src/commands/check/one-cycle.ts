// One collection cycle for `check`, as the server runs it with the same settings: the host
// collectors, then the diag collectors over the ports they found and, with --collector.fabric,
// one discovery followed by one ports cycle beside one SA cycle, each within the deadline the
// server gives it. The only module of the check command that uses Collection's API.
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import type { Settings } from '../../config/settings.js';
import type { Collection } from '../../collection/collection.js';
import { collectionFromSettings, fabricRunnerFromSettings, type ToolRunners } from '../../collection/from-settings.js';
import { Periodic } from '../../collection/periodic.js';
import type { Snapshot } from '../../model/snapshot.js';

export interface CheckCycle {
  snapshot: Snapshot;
  /** What could not be checked and why, for the person reading the report. */
  notChecked: string[];
}

/** libibumad's own test: the tools open /dev/infiniband/umad* only when this file exists. */
const UMAD_ABI_VERSION = 'class/infiniband_mad/abi_version';

export async function collectOnce(settings: Settings, logger: Logger, runners: ToolRunners = {}): Promise<CheckCycle> {
  const notChecked: string[] = [];
  let effective = settings;
  // Without the user-MAD interface every diag command fails to open its port: say so once instead
  // of reporting each tool as a failing collector. (A fixture tree has none either.)
  if (settings.diag.enabled && runners.diag === undefined && !existsSync(path.join(settings.sysfsPath, UMAD_ABI_VERSION))) {
    effective = { ...settings, diag: { ...settings.diag, enabled: false } };
    notChecked.push(`subnet manager reachability and link peers: the kernel's user-MAD interface is not loaded (no ${path.join(settings.sysfsPath, UMAD_ABI_VERSION)}; modprobe ib_umad)`);
  } else if (!settings.diag.enabled) {
    notChecked.push('subnet manager reachability and link peers: the diag collector is off');
  }
  const { collection, diagTools, diagOff } = collectionFromSettings(effective, logger, runners);
  if (diagOff !== undefined) notChecked.push(`subnet manager reachability and link peers: ${diagOff}`);

  const onError = (error: unknown): void => {
    throw error;
  };
  await new Periodic({
    intervalMs: settings.collectionIntervalMs,
    task: (signal) => collection.collectHost(signal),
    onOverrun: (deadlineMs) => collection.recordOverrun(['sysfs', 'ipoib'], deadlineMs),
    onError,
  }).runNow();
  const diag = diagTools.length === 0 ? Promise.resolve() : new Periodic({
    intervalMs: settings.diag.intervalMs,
    // Up to three commands in a row per port, each bounded by the time limit (the server also
    // allows a whole interval; a health check has no interval to wait for).
    deadlineMs: 4 * settings.diag.timeoutMs,
    task: (signal) => collection.collectDiag(signal),
    onOverrun: (deadlineMs) => collection.recordDiagOverrun(deadlineMs),
    onError,
  }).runNow();
  // The diag tools ask about this host's ports, fabric mode about the rest: both at once, as in the server.
  await Promise.all([diag, settings.fabric.enabled ? collectFabricOnce(settings, logger, collection, runners) : undefined]);
  const snapshot = collection.snapshot;
  if (!snapshot) throw new Error('the collection cycle finished without a snapshot');
  return { snapshot, notChecked };
}

/**
 * One discovery, then one ports cycle, beside one SA cycle, with the server's loops and their
 * deadlines (the interval, or the commands in a row if longer). Fabric mode is loaded only here.
 */
async function collectFabricOnce(settings: Settings, logger: Logger, collection: Collection, runners: ToolRunners): Promise<void> {
  const { FabricMode } = await import('../../collection/fabric.js');
  const mode = new FabricMode({
    settings: settings.fabric,
    timeoutMs: settings.diag.timeoutMs,
    runner: runners.fabric ?? fabricRunnerFromSettings(settings, logger),
    collection,
    logger,
  });
  try {
    await Promise.all([mode.discovery.runNow().then(() => mode.portsLoop.runNow()), mode.saLoop.runNow()]);
  } finally {
    // Removes the discovery cache files.
    await mode.stop();
  }
}
