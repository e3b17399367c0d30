// `perfquery -c` output: PMA PortSamplesControl, whose `Tick` field says how long one PortXmitWait
// tick is (Tick + 1 symbol times). A device that does not implement the attribute (ibsim, some
// firmware) makes perfquery end in `iberror: failed: sampctlquery`: no tick, the caller falls back
// to the documented value of the device's generation.
import { iberror, numberField, parseMadDump } from './mad-dump.js';

export type PortSamplesControlReading = { tick: number } | { failure: string };

const HEADER = /^# PortSamplesControl: Lid \d{1,5} port \d{1,3}\b/m;

/** The Tick of a `perfquery -c` output, or why there is none (the tool's error, or output that is not PortSamplesControl). */
export function parsePortSamplesControl(stdout: string): PortSamplesControlReading {
  const failed = iberror(stdout);
  if (failed !== undefined) return { failure: failed };
  if (!HEADER.test(stdout)) return { failure: 'no PortSamplesControl in the output' };
  const tick = numberField(parseMadDump(stdout), 'Tick');
  // Tick is an 8-bit field: anything else is not what a PMA sends.
  if (tick === undefined || tick > 0xff) return { failure: 'no Tick field of 0-255 in PortSamplesControl' };
  return { tick };
}
