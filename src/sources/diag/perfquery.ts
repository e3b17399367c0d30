// `perfquery` output: PMA PortCounters (basic, 16/8/4/32-bit) and PortCountersExtended (`-x`,
// 64-bit data and packet counters), as `Name:....value` lines under a `# Port … counters:` header.
import { PMA_COUNTERS, parseCounterValue, type PmaCounter } from '../../model/pma-counters.js';
import type { PortCounter } from '../../model/host.js';
import { exportCounter } from '../infiniband.js';
import { parseMadDump } from './mad-dump.js';

/** PMA ClassPortInfo CapabilityMask bit: PortCounters.PortXmitWait is implemented. */
const CAP_PORT_XMIT_WAIT = 0x1000;

export interface PerfqueryReading {
  extended: boolean;
  lid: number;
  port: number;
  /** PMA ClassPortInfo CapabilityMask. */
  capabilityMask: number;
  /** Raw values by perfquery field name (`SymbolErrorCounter`, `PortXmitData`…). */
  values: ReadonlyMap<string, bigint>;
}

// Bounded digit runs (LIDs are 16-bit, ports 8-bit, the CapabilityMask 16-bit): a longer number
// is not perfquery output and would parse to Infinity.
const HEADER = /^# Port (extended )?counters: Lid (\d{1,5}) port (\d{1,3}) \(CapMask: (0x[0-9a-f]{1,8})\b/im;

export function parsePerfquery(stdout: string): PerfqueryReading | undefined {
  const header = HEADER.exec(stdout);
  if (!header) return undefined;
  const values = new Map<string, bigint>();
  for (const [name, text] of parseMadDump(stdout)) {
    const value = parseCounterValue(text);
    if (value !== undefined) values.set(name, value);
  }
  return {
    extended: header[1] !== undefined,
    lid: Number(header[2]),
    port: Number(header[3]),
    capabilityMask: Number.parseInt(header[4]!, 16),
    values,
  };
}

function isTraffic(counter: PmaCounter): boolean {
  return counter.tableDependent;
}

/**
 * Exported counters from a basic and/or an extended reading. Error counters and PortXmitWait come
 * from the basic query with their IBA widths (PortXmitWait only when the PMA says it implements it:
 * perfquery prints 0 otherwise); data and packet counters from the extended query (64-bit) when
 * there is one, else the basic 32-bit ones.
 */
export function countersFromPerfquery(basic: PerfqueryReading | undefined, extended: PerfqueryReading | undefined): PortCounter[] {
  const counters: PortCounter[] = [];
  for (const counter of PMA_COUNTERS) {
    if (isTraffic(counter)) {
      const fromExtended = extended?.values.get(counter.perfqueryField);
      if (fromExtended !== undefined) {
        counters.push(exportCounter(counter, fromExtended, 64));
        continue;
      }
      const fromBasic = counter.bits === 32 ? basic?.values.get(counter.perfqueryField) : undefined;
      if (fromBasic !== undefined) counters.push(exportCounter(counter, fromBasic, 32));
      continue;
    }
    if (!basic) continue;
    if (counter.perfqueryField === 'PortXmitWait' && (basic.capabilityMask & CAP_PORT_XMIT_WAIT) === 0) continue;
    const value = basic.values.get(counter.perfqueryField);
    if (value !== undefined) counters.push(exportCounter(counter, value, counter.bits));
  }
  return counters;
}

/** Error counters the local port's sysfs lacks / traffic counters it lacks: what perfquery must fill. */
export function missingCounters(present: ReadonlySet<string>): { errors: boolean; traffic: boolean } {
  const missing = PMA_COUNTERS.filter((counter) => !present.has(counter.name));
  return { errors: missing.some((counter) => !isTraffic(counter)), traffic: missing.some(isTraffic) };
}
