// `sminfo` output: "sminfo: sm lid 1 sm guid 0x100001, activity count 89 priority 0 state 3 SMINFO_MASTER".
import { normaliseGuid } from '../../model/guid.js';
import { SUBNET_MANAGER_STATES, type SubnetManagerInfo } from '../../model/host.js';
import { iberror } from './mad-dump.js';

// Bounded digit runs: a longer number is not sminfo output (and would parse to Infinity).
const SMINFO_LINE = /sm lid (\d{1,5}) sm guid (0x[0-9a-f]{1,16}), activity count (\d{1,10}) priority (\d{1,3}) state (\d{1,3})\b/i;

export function parseSminfo(stdout: string): SubnetManagerInfo | undefined {
  const match = SMINFO_LINE.exec(stdout);
  if (!match) return undefined;
  const guid = normaliseGuid(match[2]!);
  if (guid === undefined) return undefined;
  return {
    lid: Number(match[1]),
    guid,
    activityCount: Number(match[3]),
    priority: Number(match[4]),
    state: SUBNET_MANAGER_STATES[Number(match[5])],
  };
}

/**
 * sminfo's "no answer" (`sminfo: iberror: failed: query`, exit 255): no subnet manager answered at
 * the port's SM LID (none configured the port, or it died). That is a reading, not a tool failure.
 */
export function isSubnetManagerUnreachable(stdout: string, exitCode: number | undefined): boolean {
  return exitCode === 255 && iberror(stdout) === 'query';
}
