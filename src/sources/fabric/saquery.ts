// `saquery` output (rdma-core infiniband-diags): the subnet administrator's records, each a
// `<Record> dump:` line followed by tab-indented `Name.....value` lines.
//   saquery SMIR   SMInfoRecord: LID, GUID, ActCount, Priority, SMState of every SM the master knows
//   saquery -g     MCMemberRecord group dump: MGID, Mlid, Mtu, pkey, Rate, SL of every multicast group
//   saquery -m     MCMemberRecord member dump: MGID, PortGid, … of every membership
import { normaliseGuid } from '../../model/guid.js';
import { saMtuBytes, saRateGbps } from '../../model/subnet-administration.js';
import { SUBNET_MANAGER_STATES } from '../../model/host.js';
import type { FabricSubnetManager, MulticastGroup } from '../../model/fabric.js';

interface Records {
  records: Map<string, string>[];
  unparsed: string[];
}

const FIELD = /^\s+([A-Za-z_]+)\.{2,}(.*)$/;
const BARE_FIELD = /^\s+(RID|SMInfo dump:)\s*$/;

/** Split output into records starting at `<kind> dump:` lines. */
function records(stdout: string, kind: RegExp): Records {
  const all: Map<string, string>[] = [];
  const unparsed: string[] = [];
  let current: Map<string, string> | undefined;
  for (const raw of stdout.split('\n')) {
    const line = raw.trimEnd();
    if (line === '') continue;
    if (kind.test(line)) {
      current = new Map();
      all.push(current);
      continue;
    }
    const field = FIELD.exec(line);
    if (field && current) {
      if (!current.has(field[1]!)) current.set(field[1]!, field[2]!.trim());
    } else if (!BARE_FIELD.test(line)) {
      unparsed.push(line);
    }
  }
  return { records: all, unparsed };
}

function integer(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  if (/^\d{1,10}$/.test(text)) return Number(text);
  if (/^0x[0-9a-f]{1,8}$/i.test(text)) return Number.parseInt(text, 16);
  return undefined;
}

export interface SmInfoRecords {
  subnetManagers: FabricSubnetManager[];
  unparsed: string[];
}

export function parseSmInfoRecords(stdout: string): SmInfoRecords {
  const { records: found, unparsed } = records(stdout, /^SMInfoRecord dump:$/);
  const subnetManagers: FabricSubnetManager[] = [];
  for (const record of found) {
    const guid = normaliseGuid(record.get('GUID') ?? '');
    const lid = integer(record.get('LID'));
    const priority = integer(record.get('Priority'));
    const state = integer(record.get('SMState'));
    const activityCount = integer(record.get('ActCount'));
    if (guid === undefined || lid === undefined || priority === undefined || state === undefined || activityCount === undefined) {
      unparsed.push(`SMInfoRecord ${JSON.stringify(Object.fromEntries(record))}`);
      continue;
    }
    subnetManagers.push({ guid, lid, priority, state: SUBNET_MANAGER_STATES[state], activityCount });
  }
  return { subnetManagers, unparsed };
}

export interface MulticastGroups {
  groups: MulticastGroup[];
  unparsed: string[];
}

/** `saquery -g`; members are left undefined (see parseMemberCounts). */
export function parseMulticastGroups(stdout: string): MulticastGroups {
  const { records: found, unparsed } = records(stdout, /^MCMemberRecord group dump:$/);
  const groups: MulticastGroup[] = [];
  for (const record of found) {
    const mgid = record.get('MGID');
    const pkey = integer(record.get('pkey'));
    const mtu = integer(record.get('Mtu'));
    const rate = integer(record.get('Rate'));
    // saquery prints every field of a record: one without its MTU or rate was cut short.
    if (mgid === undefined || !/^[0-9a-f:]+$/i.test(mgid) || pkey === undefined || pkey > 0xffff || mtu === undefined || rate === undefined) {
      unparsed.push(`MCMemberRecord ${JSON.stringify(Object.fromEntries(record))}`);
      continue;
    }
    groups.push({
      mgid: mgid.toLowerCase(),
      pkey: `0x${pkey.toString(16).padStart(4, '0')}`,
      mtuBytes: saMtuBytes(mtu),
      rateGbps: saRateGbps(rate),
      members: undefined,
    });
  }
  return { groups, unparsed };
}

export interface MemberCounts {
  /** Members per MGID (lower case, as saquery prints it). */
  members: Map<string, number>;
  unparsed: string[];
}

/**
 * `saquery -m`. opensm also answers with a record whose PortGid is `::` for a group it created
 * itself and nobody joined (the IPoIB broadcast group before any host came up): that is no member.
 */
export function parseMemberCounts(stdout: string): MemberCounts {
  const { records: found, unparsed } = records(stdout, /^MCMemberRecord member dump:$/);
  const members = new Map<string, number>();
  for (const record of found) {
    const mgid = record.get('MGID')?.toLowerCase();
    const portGid = record.get('PortGid');
    if (mgid === undefined || portGid === undefined) {
      unparsed.push(`MCMemberRecord ${JSON.stringify(Object.fromEntries(record))}`);
      continue;
    }
    const joined = /[1-9a-f]/i.test(portGid);
    members.set(mgid, (members.get(mgid) ?? 0) + (joined ? 1 : 0));
  }
  return { members, unparsed };
}
