// The kernel collector: the kernel log's word on the adapters (--path.kmsg, /dev/kmsg by default).
// The mlx5_core and ib_core messages of a sick adapter (firmware health compromised, a fatal error,
// command timeouts, PCI errors, module errors, TX timeouts, link downs) are counted per device and
// kind from start-up on: the backlog is never counted (`serve` reads what came after it opened the
// log; `check`, one reading, what the log holds of the last hour). The log is followed, not read
// again: each host reading drains what came since the last one (sources/kmsg/follower.ts), so a
// quiet node costs one read() per reading and no wake-up of its own.
import { readlinkSync } from 'node:fs';
import { uptime } from 'node:os';
import path from 'node:path';
import { collectorSwitch, flag, STRING } from '../../config/flags.js';
import type { ExpositionBuffer } from '../../exposition/buffer.js';
import { counter, type MetricSpec } from '../../exposition/metric-spec.js';
import { Samples } from '../../exposition/samples.js';
import { FileRefused } from '../../files/bounded-file.js';
import type { Finding, Severity } from '../../model/finding.js';
import type { Snapshot } from '../../model/snapshot.js';
import { classifyKernelMessage, KERNEL_EVENT_KINDS, type KernelEventKind, type KmsgRecord } from '../../sources/kmsg/kernel-message.js';
import { KmsgFollower } from '../../sources/kmsg/follower.js';
import type { SysfsFiles } from '../../sources/sysfs-files.js';
import { defineCollector, type Collector, type CollectorContext, type Off, type Reader, type Reading } from '../../collection/collector.js';
import { HOST_READING, SYSFS_PATH, sysfsFiles } from './host-reading.js';
import { SYSFS_PART } from '../parts.js';

export const KERNEL_SWITCH = collectorSwitch(
  'kernel',
  'kernel',
  true,
  "Count the kernel log's messages of sick adapters (mlx5_core, ib_core) per device and kind, from start-up on.",
);

export const KMSG_PATH = flag(STRING, {
  name: 'path.kmsg',
  key: 'path.kmsg',
  default: '/dev/kmsg',
  help: 'The kernel log, followed from start-up on: /dev/kmsg (needs CAP_SYSLOG where kernel.dmesg_restrict=1), or a plain file of the same records.',
  check: true,
});

/** A finding stays while its device's last event of a kind is younger than this. */
export const KERNEL_EVENT_RECENT_MS = 3_600_000;

/** What one device's events of one kind came to. */
export interface KernelEventCount {
  /** The InfiniBand device, or the PCI address of a function no InfiniBand device of the host has. */
  device: string;
  kind: KernelEventKind;
  count: number;
  /** When the last one was read (ms). */
  lastAt: number;
  /** Its message, cut to a line a person reads (untrusted text: shown, never interpreted). */
  lastMessage: string;
}

export interface KernelPart {
  /** By device, then kind, in the order first seen. */
  events: readonly KernelEventCount[];
}

const MESSAGE_SHOWN = 240;

class KernelReader implements Reader<KernelPart> {
  private readonly files: SysfsFiles;
  private readonly counts = new Map<string, KernelEventCount>();
  private part: KernelPart = { events: [] };
  /** Events counted since the part was last published. */
  private dirty = false;
  /** PCI address → InfiniBand device, read again when the host's devices change. */
  private pciDevices = new Map<string, string>();
  private devicesKey = '';

  constructor(
    private readonly context: CollectorContext,
    private readonly follower: KmsgFollower,
  ) {
    this.files = sysfsFiles(context);
  }

  async read(snapshot: Snapshot): Promise<Reading<KernelPart>> {
    this.mapDevices(snapshot);
    try {
      this.drain();
    } catch (error) {
      return { failure: `reading ${this.context.settings.get(KMSG_PATH)} failed: ${(error as Error).message}` };
    }
    if (this.dirty) this.part = { events: [...this.counts.values()] };
    this.dirty = false;
    return { part: this.part };
  }

  /**
   * Between host readings, with the port states' sample (no wake-up of its own): what came since is
   * counted now, and an adapter event makes the next scrape read again instead of serving the last reading.
   */
  sample(): boolean {
    try {
      return this.drain();
    } catch {
      // Said by the next reading.
      return false;
    }
  }

  /** Count what the log holds since the last drain; true when an adapter event was among it. */
  private drain(): boolean {
    const now = this.context.now();
    // `check` reads the backlog of /dev/kmsg: only what the kernel wrote within the last hour counts.
    const since =
      this.context.mode === 'check' && this.follower.device ? uptime() * 1e6 - KERNEL_EVENT_RECENT_MS * 1e3 : Number.NEGATIVE_INFINITY;
    let counted = false;
    const counts = this.follower.drain((record) => {
      if (record.usec >= since && this.count(record, now)) counted = true;
    });
    if (counts.lost > 0)
      this.context.logger.warn(
        `the kernel log overwrote ${counts.lost} record(s) before they were read: adapter events among them are not counted`,
      );
    if (counted) this.dirty = true;
    return counted;
  }

  private count(record: KmsgRecord, now: number): boolean {
    const event = classifyKernelMessage(record);
    if (!event) return false;
    const device = 'device' in event.subject ? event.subject.device : (this.pciDevices.get(event.subject.pci) ?? event.subject.pci);
    const key = `${device}\u0000${event.kind}`;
    const known = this.counts.get(key);
    const lastMessage = record.message.length > MESSAGE_SHOWN ? `${record.message.slice(0, MESSAGE_SHOWN)}…` : record.message;
    this.counts.set(key, { device, kind: event.kind, count: (known?.count ?? 0) + 1, lastAt: now, lastMessage });
    return true;
  }

  /** The PCI function of each InfiniBand device: the target of `class/infiniband/<device>/device`. */
  private mapDevices(snapshot: Snapshot): void {
    const key = snapshot.devices.map((device) => device.name).join(',');
    if (key === this.devicesKey) return;
    this.devicesKey = key;
    this.pciDevices = new Map();
    for (const device of snapshot.devices) {
      try {
        const target = readlinkSync(this.files.resolve(`class/infiniband/${device.name}/device`));
        this.pciDevices.set(path.basename(target).toLowerCase(), device.name);
      } catch {
        // A software device (rxe, siw) has no PCI function: its messages name it.
      }
    }
  }

  close(): void {
    this.follower.close();
  }
}

function setUp(context: CollectorContext): KernelReader | Off {
  const file = context.settings.get(KMSG_PATH);
  try {
    return new KernelReader(context, new KmsgFollower(file, context.mode === 'check'));
  } catch (error) {
    if (error instanceof FileRefused)
      return { off: `the kernel log ${error.reason} (${file}; /dev/kmsg needs CAP_SYSLOG where kernel.dmesg_restrict=1)` };
    throw error;
  }
}

export const KERNEL_METRICS = {
  events: counter(
    'infiniband_device_kernel_events_total',
    ['device', 'kind'],
    'Kernel log messages of a sick adapter since the exporter started, by kind: health_compromised (the firmware stopped answering its health check), fatal (a fatal error; recovery failed), cmd_timeout (a firmware command timed out), pci_error (an uncorrectable PCIe error, recovery entered), module_error (the cable module reported an error), tx_timeout (a send queue stalled), link_down (the link of its Ethernet/IPoIB interface went down). device is the InfiniBand device (every one of the host, from 0 at start-up), or the PCI address of a function without one (from its first event).',
  ),
} as const;

const FAMILIES: readonly MetricSpec[] = Object.values(KERNEL_METRICS);

function writeMetrics(snapshot: Snapshot, out: ExpositionBuffer): void {
  const samples = new Samples();
  const events = KERNEL.of(snapshot)?.events ?? [];
  const counted = new Map(events.map((event) => [`${event.device}\u0000${event.kind}`, event.count]));
  // Every device of the host at 0 from the start: an alert on increase() sees its first event.
  for (const device of snapshot.devices) {
    for (const kind of KERNEL_EVENT_KINDS)
      samples.add(KERNEL_METRICS.events, { device: device.name, kind }, counted.get(`${device.name}\u0000${kind}`) ?? 0);
  }
  const known = new Set(snapshot.devices.map((device) => device.name));
  for (const event of events)
    if (!known.has(event.device)) samples.add(KERNEL_METRICS.events, { device: event.device, kind: event.kind }, event.count);
  samples.writeTo(FAMILIES, out);
}

/** The kinds the alert InfiniBandAdapterUnhealthy pages for; the others are warnings without an alert of their own. */
export const UNHEALTHY_KINDS: ReadonlySet<KernelEventKind> = new Set(['health_compromised', 'fatal', 'cmd_timeout', 'pci_error']);

const WORDS: Record<KernelEventKind, string> = {
  health_compromised: 'firmware health compromised',
  fatal: 'a fatal adapter error',
  cmd_timeout: 'firmware command timeouts',
  pci_error: 'uncorrectable PCIe errors',
  module_error: 'cable module errors',
  tx_timeout: 'send queue timeouts',
  link_down: 'link downs of its Ethernet/IPoIB interface',
};

/** A finding per device and kind while its last event is recent. */
export function kernelFindings(part: KernelPart | undefined, now: number): Finding[] {
  const findings: Finding[] = [];
  for (const event of part?.events ?? []) {
    if (now - event.lastAt > KERNEL_EVENT_RECENT_MS) continue;
    const unhealthy = UNHEALTHY_KINDS.has(event.kind);
    const severity: Severity = unhealthy ? 'critical' : 'warning';
    findings.push({
      condition: `adapter-kernel-${event.kind.replaceAll('_', '-')}`,
      severity,
      subject: { kind: 'device', device: event.device },
      summary: `the kernel logged ${WORDS[event.kind]} on ${event.device} (${event.count} since the exporter started; last: "${event.lastMessage}")`,
      meaning: unhealthy
        ? 'The driver lost the adapter or is about to: it resets it (every queue pair and job on it fails), or it stays unusable until the host is rebooted.'
        : 'The adapter works but something on its path does not: traffic stalls or the link drops, and jobs on it slow down or fail.',
      cause: unhealthy
        ? 'An adapter firmware fault, overheating, a PCIe slot or riser fault, or failing hardware.'
        : 'A failing cable or module, a link partner going away, or a driver bug.',
      remedy:
        'drain the node; read dmesg for the lines around it (journalctl -k | grep -E "mlx5|infiniband"); check the adapter\'s temperature and firmware (mstflint -d <PCI address> query), reseat or replace the card or the cable',
      runbook: 'infinibandadapterunhealthy',
      alert: unhealthy ? 'InfiniBandAdapterUnhealthy' : undefined,
    });
  }
  return findings;
}

export const KERNEL: Collector<KernelPart> = defineCollector({
  name: 'kernel',
  checks: "the kernel log's messages of sick adapters",
  enabledBy: KERNEL_SWITCH,
  flags: [KERNEL_SWITCH, KMSG_PATH, SYSFS_PATH],
  scope: 'host',
  schedule: { cycle: HOST_READING },
  onOverrun: 'keep',
  setUp,
  // Its zeros follow the host's devices: the sysfs collector's reading.
  metrics: { families: FAMILIES, inputs: [SYSFS_PART], write: writeMetrics },
  findings: (snapshot) => kernelFindings(KERNEL.of(snapshot), Date.now()),
  failure: {
    consequence: "the kernel log's adapter messages are not counted",
    meaning: 'A sick adapter the kernel reported (firmware health, command timeouts, PCI errors) would not show.',
    cause: 'The kernel log became unreadable (a removed or replaced --path.kmsg).',
  },
});
