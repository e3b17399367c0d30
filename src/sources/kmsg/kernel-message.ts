// The kernel log's records (/dev/kmsg, Documentation/ABI/testing/dev-kmsg) and which of them mean a
// sick InfiniBand adapter. A record is `<prio>,<seq>,<usec>,<flags>[,...];<message>`, followed by
// continuation lines that start with a space (`SUBSYSTEM=pci`, `DEVICE=+pci:0000:3b:00.0`). The
// patterns come from kernel log lines of sick mlx5 adapters in public bug reports and from the
// mlx5_core sources (test/fixtures/kmsg/, each line with its source). Everything here is pure.

/** What a matched message says is wrong with the adapter (`kind` of infiniband_device_kernel_events_total). */
export const KERNEL_EVENT_KINDS = [
  'health_compromised',
  'fatal',
  'cmd_timeout',
  'pci_error',
  'module_error',
  'tx_timeout',
  'link_down',
] as const;
export type KernelEventKind = (typeof KERNEL_EVENT_KINDS)[number];

export interface KmsgRecord {
  /** The kernel's sequence number: a gap means records were overwritten before they were read. */
  sequence: number;
  /** Microseconds since boot (the kernel's monotonic clock). */
  usec: number;
  message: string;
  /** `DEVICE=` of the continuation lines: `+pci:0000:3b:00.0`, `+infiniband:mlx5_0`, `n4` (a netdev). */
  device?: string;
}

const HEADER = /^(\d+),(\d+),(\d+),[^;]*;/;

/** One record's first line (without its newline), or undefined when it is none. */
export function parseKmsgHeaderLine(line: string): KmsgRecord | undefined {
  const match = HEADER.exec(line);
  if (!match) return undefined;
  // The kernel escapes non-printable bytes as \xNN; the message stays escaped (it is only matched).
  return { sequence: Number(match[2]), usec: Number(match[3]), message: line.slice(match[0].length) };
}

/** A continuation line (` KEY=value`) added to its record. */
export function addContinuation(record: KmsgRecord, line: string): void {
  if (line.startsWith(' DEVICE=')) record.device = line.slice(' DEVICE='.length);
}

/** Who a message is about: an adapter's PCI function, or an InfiniBand device by name. */
export type MessageSubject = { pci: string } | { device: string };

export interface KernelEvent {
  subject: MessageSubject;
  kind: KernelEventKind;
}

const PCI_ADDRESS = '[0-9a-f]{4,}:[0-9a-f]{2}:[0-9a-f]{2}\\.[0-7]';
// dev_err(): "mlx5_core 0000:3b:00.0: ..."; netdev_err(): "mlx5_core 0000:3b:00.0 ens1f0: ...".
const DRIVER_PREFIX = new RegExp(`^(?:mlx5_core|mlx4_core|mlx5_ib|mlx4_ib) (${PCI_ADDRESS})(?::| [^\\s:]+:) `, 'i');
// ibdev_err() and dev_err() on the ib_device: "infiniband mlx5_0: ...".
const IB_PREFIX = /^infiniband ([A-Za-z0-9_.-]{1,64}): /;
const DEVICE_PCI = new RegExp(`^\\+pci:(${PCI_ADDRESS})$`, 'i');
const DEVICE_IB = /^\+infiniband:([A-Za-z0-9_.-]{1,64})$/;

/**
 * Each kind's messages. Only the line that starts an event counts: the health buffer's dump that
 * follows "health compromised" (assert_var, synd, ext_synd) and the "No done completion" before a
 * command's timeout are detail of the same event, not more events.
 */
const PATTERNS: readonly (readonly [KernelEventKind, RegExp])[] = [
  // health.c poll_health(): the firmware's health counter stopped.
  ['health_compromised', /\bdevice's health compromised\b/],
  // health.c poll_health(): a fatal sensor (NIC IFC, PCI) fired; mlx5_health_try_recover() gave up.
  ['fatal', /\bFatal error \d+ detected\b|\bhealth recovery flow aborted\b|\bsystem error event triggered\b/],
  // cmd.c wait_func(): the firmware did not answer a command.
  ['cmd_timeout', /\btimeout\. Will cause a leak of a command resource\b|\bcanceled on out of queue timeout\b/],
  // The PCI core's AER report on the adapter, and mlx5_pci_err_detected() entering recovery.
  // mlx5_pcie_event(): the slot cannot power the adapter, which then powers its ports down.
  [
    'pci_error',
    /\bPCIe Bus Error: severity=Uncorrect|\bmlx5_pci_err_detected\b.*\b(?:Enter|was called)\b|\bPCI channel offline\b|\bDetected insufficient power on the PCIe slot\b/,
  ],
  // events.c port_module_event(): the module reports an error (not plugged/unplugged).
  ['module_error', /\bPort module event\[error\]/],
  // en_main.c mlx5e_tx_timeout(), and the netdev watchdog.
  ['tx_timeout', /\bTX timeout detected\b|\btransmit queue \d+ timed out\b/],
  // en_main.c mlx5e_update_carrier(): the Ethernet/IPoIB netdev's link went down.
  ['link_down', /^Link down$/],
];

/** The adapter event a kernel message tells of, or undefined for every other message. */
export function classifyKernelMessage(record: Pick<KmsgRecord, 'message' | 'device'>): KernelEvent | undefined {
  const { message } = record;
  let subject: MessageSubject | undefined;
  let text: string;
  const driver = DRIVER_PREFIX.exec(message);
  const ib = driver ? undefined : IB_PREFIX.exec(message);
  if (driver) {
    subject = { pci: driver[1]!.toLowerCase() };
    text = message.slice(driver[0].length);
  } else if (ib) {
    subject = { device: ib[1]! };
    text = message.slice(ib[0].length);
  } else {
    return undefined;
  }
  // A function's name and line before the message (mlx5_core_err): "poll_health:834:(pid 0): ", "poll_health:174: ".
  text = text.replace(/^[A-Za-z0-9_]+:\d+:(?:\(pid \d+\):)? /, '');
  const device = record.device;
  if (device !== undefined) {
    const pci = DEVICE_PCI.exec(device);
    const named = DEVICE_IB.exec(device);
    if (named) subject = { device: named[1]! };
    else if (pci) subject = { pci: pci[1]!.toLowerCase() };
  }
  for (const [kind, pattern] of PATTERNS) if (pattern.test(text)) return { subject, kind };
  return undefined;
}
