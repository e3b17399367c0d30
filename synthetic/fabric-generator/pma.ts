// The PMA counters as libibmad names them (fields.c), in the order ibqueryerrors checks them, with
// their widths in PortCounters (the counters saturate there; PortCountersExtended holds 64 bits).

export const ERROR_FIELDS = [
  { name: 'SymbolErrorCounter', max: 0xffff },
  { name: 'LinkErrorRecoveryCounter', max: 0xff },
  { name: 'LinkDownedCounter', max: 0xff },
  { name: 'PortRcvErrors', max: 0xffff },
  { name: 'PortRcvRemotePhysicalErrors', max: 0xffff },
  { name: 'PortRcvSwitchRelayErrors', max: 0xffff },
  { name: 'PortXmitDiscards', max: 0xffff },
  { name: 'PortXmitConstraintErrors', max: 0xff },
  { name: 'PortRcvConstraintErrors', max: 0xff },
  { name: 'LocalLinkIntegrityErrors', max: 0xf },
  { name: 'ExcessiveBufferOverrunErrors', max: 0xf },
  { name: 'VL15Dropped', max: 0xffff },
  { name: 'PortXmitWait', max: 0xffffffff },
] as const;

export type ErrorField = (typeof ERROR_FIELDS)[number]['name'];

/** PortCountersExtended data and packet counters (ibqueryerrors --counters prints all eight). */
export const TRAFFIC_FIELDS = [
  'PortXmitData',
  'PortRcvData',
  'PortXmitPkts',
  'PortRcvPkts',
  'PortUnicastXmitPkts',
  'PortUnicastRcvPkts',
  'PortMulticastXmitPkts',
  'PortMulticastRcvPkts',
] as const;

export type TrafficField = (typeof TRAFFIC_FIELDS)[number];

/** The four traffic counters PortCounters has too, 32-bit. */
export const BASIC_TRAFFIC_FIELDS = ['PortXmitData', 'PortRcvData', 'PortXmitPkts', 'PortRcvPkts'] as const;

/** Data counters count 4-byte words (ibqueryerrors shows them in bytes). */
export const DATA_FIELDS: ReadonlySet<string> = new Set(['PortXmitData', 'PortRcvData']);

export const MAX_32 = 0xffffffff;

/** A counter as PortCounters holds it: saturated at its width. */
export function saturated(value: number, max: number): number {
  return Math.min(value, max);
}

/** Every counter of a port (each below 2^53, as the generator makes them and ibsim drifts them). */
export type PortCounterValues = Record<ErrorField | TrafficField, number>;
