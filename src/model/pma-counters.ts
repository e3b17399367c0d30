// PMA PortCounters as the kernel exposes them in `ports/<n>/counters/` (IBA PortCounters and
// PortCountersExtended). Widths matter: the counters saturate at their maximum instead of wrapping,
// and a saturated counter hides every later error.

export interface PmaCounter {
  /** File name under `counters/`. */
  file: string;
  /** Metric name fragment: exported as `infiniband_port_<name>_total`. */
  name: string;
  /** The perfquery field that carries the same counter. */
  perfqueryField: string;
  /** Width in bits in the basic PortCounters table; data and packet counters are 64-bit in the extended tables. */
  bits: 4 | 8 | 16 | 32 | 64;
  /** Data counters count 4-byte words, whatever the link width. */
  wordsToBytes: boolean;
  /** True for the data/packet counters whose width depends on the table the kernel chose. */
  tableDependent: boolean;
  /** An error counter also exported for the link peer (`infiniband_port_peer_<name>_total`). */
  error: boolean;
  help: string;
}

function counter(
  file: string,
  name: string,
  perfqueryField: string,
  bits: PmaCounter['bits'],
  help: string,
  options: Partial<Pick<PmaCounter, 'wordsToBytes' | 'tableDependent' | 'error'>> = {},
): PmaCounter {
  return {
    file,
    name,
    perfqueryField,
    bits,
    help,
    wordsToBytes: options.wordsToBytes ?? false,
    tableDependent: options.tableDependent ?? false,
    error: options.error ?? true,
  };
}

const traffic = { error: false, tableDependent: true } as const;

export const PMA_COUNTERS: readonly PmaCounter[] = [
  counter(
    'symbol_error',
    'symbol_errors',
    'SymbolErrorCounter',
    16,
    'Minor link errors detected on one or more physical lanes (PMA SymbolErrorCounter, 16-bit). A steady rise means a bad cable, transceiver or port.',
  ),
  counter(
    'link_error_recovery',
    'link_error_recoveries',
    'LinkErrorRecoveryCounter',
    8,
    'Times the link completed the link error recovery process successfully (PMA LinkErrorRecoveryCounter, 8-bit).',
  ),
  counter(
    'link_downed',
    'link_downed',
    'LinkDownedCounter',
    8,
    'Times the link failed error recovery and went down (PMA LinkDownedCounter, 8-bit). Each increase is a link flap.',
  ),
  counter(
    'port_rcv_errors',
    'receive_errors',
    'PortRcvErrors',
    16,
    'Packets received on the port that contained an error (PMA PortRcvErrors, 16-bit).',
  ),
  counter(
    'port_rcv_remote_physical_errors',
    'receive_remote_physical_errors',
    'PortRcvRemotePhysicalErrors',
    16,
    'Packets received marked with the EBP delimiter: a physical error happened elsewhere on their path (PMA PortRcvRemotePhysicalErrors, 16-bit).',
  ),
  counter(
    'port_rcv_switch_relay_errors',
    'receive_switch_relay_errors',
    'PortRcvSwitchRelayErrors',
    16,
    'Packets received that a switch could not relay (PMA PortRcvSwitchRelayErrors, 16-bit).',
  ),
  counter(
    'port_xmit_discards',
    'transmit_discards',
    'PortXmitDiscards',
    16,
    'Outbound packets discarded because the port was down or congested (PMA PortXmitDiscards, 16-bit).',
  ),
  counter(
    'port_xmit_constraint_errors',
    'transmit_constraint_errors',
    'PortXmitConstraintErrors',
    8,
    'Packets not transmitted because of partition or rate-limit constraints (PMA PortXmitConstraintErrors, 8-bit).',
  ),
  counter(
    'port_rcv_constraint_errors',
    'receive_constraint_errors',
    'PortRcvConstraintErrors',
    8,
    'Packets received and discarded because of partition or rate-limit constraints (PMA PortRcvConstraintErrors, 8-bit).',
  ),
  counter(
    'local_link_integrity_errors',
    'local_link_integrity_errors',
    'LocalLinkIntegrityErrors',
    4,
    'Times local physical errors exceeded the link integrity threshold (PMA LocalLinkIntegrityErrors, 4-bit: saturates at 15).',
  ),
  counter(
    'excessive_buffer_overrun_errors',
    'excessive_buffer_overrun_errors',
    'ExcessiveBufferOverrunErrors',
    4,
    'Times consecutive flow-control update periods had buffer overruns (PMA ExcessiveBufferOverrunErrors, 4-bit: saturates at 15).',
  ),
  counter(
    'VL15_dropped',
    'vl15_dropped',
    'VL15Dropped',
    16,
    'Subnet management packets (VL15) dropped for lack of buffers (PMA VL15Dropped, 16-bit).',
  ),
  counter(
    'port_xmit_wait',
    'transmit_wait',
    'PortXmitWait',
    32,
    'Ticks during which the port had data to send but could not (PMA PortXmitWait, 32-bit; tick length is implementation-defined). A high rate means congestion.',
  ),
  counter(
    'port_xmit_data',
    'transmit_data_bytes',
    'PortXmitData',
    32,
    'Bytes transmitted on the port, excluding link packets (PMA PortXmitData, which counts 4-byte words: multiplied by 4).',
    { ...traffic, wordsToBytes: true },
  ),
  counter(
    'port_rcv_data',
    'receive_data_bytes',
    'PortRcvData',
    32,
    'Bytes received on the port, excluding link packets (PMA PortRcvData, which counts 4-byte words: multiplied by 4).',
    { ...traffic, wordsToBytes: true },
  ),
  counter('port_xmit_packets', 'transmit_packets', 'PortXmitPkts', 32, 'Packets transmitted on the port (PMA PortXmitPkts).', traffic),
  counter('port_rcv_packets', 'receive_packets', 'PortRcvPkts', 32, 'Packets received on the port (PMA PortRcvPkts).', traffic),
  counter(
    'unicast_xmit_packets',
    'unicast_transmit_packets',
    'PortUnicastXmitPkts',
    64,
    'Unicast packets transmitted on the port (PMA PortUnicastXmitPkts, extended counters only).',
    traffic,
  ),
  counter(
    'unicast_rcv_packets',
    'unicast_receive_packets',
    'PortUnicastRcvPkts',
    64,
    'Unicast packets received on the port (PMA PortUnicastRcvPkts, extended counters only).',
    traffic,
  ),
  counter(
    'multicast_xmit_packets',
    'multicast_transmit_packets',
    'PortMulticastXmitPkts',
    64,
    'Multicast packets transmitted on the port (PMA PortMulticastXmitPkts, extended counters only).',
    traffic,
  ),
  counter(
    'multicast_rcv_packets',
    'multicast_receive_packets',
    'PortMulticastRcvPkts',
    64,
    'Multicast packets received on the port (PMA PortMulticastRcvPkts, extended counters only).',
    traffic,
  ),
];

export const PMA_COUNTER_BY_FILE: ReadonlyMap<string, PmaCounter> = new Map(PMA_COUNTERS.map((c) => [c.file, c]));

/**
 * Pre-4.5 kernels and MLNX_OFED put the 64-bit data and packet counters in `counters_ext/` under
 * other names; when present they win over the 32-bit files of `counters/`.
 */
export const LEGACY_EXTENDED_FILES: ReadonlyMap<string, string> = new Map([
  ['port_xmit_data_64', 'port_xmit_data'],
  ['port_rcv_data_64', 'port_rcv_data'],
  ['port_xmit_packets_64', 'port_xmit_packets'],
  ['port_rcv_packets_64', 'port_rcv_packets'],
  ['port_unicast_xmit_packets', 'unicast_xmit_packets'],
  ['port_unicast_rcv_packets', 'unicast_rcv_packets'],
  ['port_multicast_xmit_packets', 'multicast_xmit_packets'],
  ['port_multicast_rcv_packets', 'multicast_rcv_packets'],
]);

const MAXIMA = new Map<number, bigint>();

/** 2^bits - 1, the value a counter of that width saturates at. */
export function counterMaximum(bits: number): bigint {
  let maximum = MAXIMA.get(bits);
  if (maximum === undefined) MAXIMA.set(bits, (maximum = (1n << BigInt(bits)) - 1n));
  return maximum;
}

/** A counter's value as read: exact (bigint) for saturation checks, plus the exported number. */
export interface CounterValue {
  raw: bigint;
  bits: number;
}

// Counter files hold one unsigned decimal; anything else is not a counter value.
const DECIMAL = /^\s*(\d{1,20})\s*$/;
const U64_MAX = counterMaximum(64);

/** Parse a counter file's text; undefined for anything that is not an unsigned 64-bit decimal. */
export function parseCounterValue(text: string): bigint | undefined {
  const match = DECIMAL.exec(text);
  if (!match) return undefined;
  const value = BigInt(match[1]!);
  return value > U64_MAX ? undefined : value;
}

/** Legacy kernels (< 4.20) answered a failed PMA query with this text instead of an error. */
export function isNoPmaText(text: string): boolean {
  return text.trim() === 'N/A (no PMA)';
}
