// `saquery` output (rdma-core infiniband-diags): the subnet administrator's records, each a
// `<Record> dump:` line followed by tab-indented `Name.....value` lines.
//   saquery SMIR   SMInfoRecord: LID, GUID, ActCount, Priority, SMState of every SM the master knows
//   saquery -g     MCMemberRecord group dump: MGID, Mlid, Mtu, pkey, Rate, SL of every multicast group
//   saquery -m     MCMemberRecord member dump: MGID, PortGid, … of every membership
import { normaliseGuid } from '../../model/guid.js';
import { saMtuBytes, saRateGbps } from '../../model/subnet-administration.js';
import { SUBNET_MANAGER_STATES } from '../../model/host.js';
import type { FabricSubnetManager, MulticastGroup } from '../../model/fabric.js';
import { parseWhole, type LineParser } from '../output-lines.js';
import { UnparsedLines } from '../unparsed-lines.js';

interface Records {
  records: Map<string, string>[];
  unparsed: UnparsedLines;
}

const FIELD = /^\s+([A-Za-z_]+)\.{2,}(.*)$/;
const BARE_FIELD = /^\s+(RID|SMInfo dump:)\s*$/;

/**
 * Output split into records starting at `<kind> dump:` lines, a line at a time; `end` makes the
 * result of the records (`read`).
 */
class RecordsParser<Result> implements LineParser<Result> {
  private readonly all: Map<string, string>[] = [];
  private readonly unparsed = new UnparsedLines();
  private current: Map<string, string> | undefined;

  constructor(
    private readonly kind: RegExp,
    private readonly read: (records: Records) => Result,
  ) {}

  push(raw: string): void {
    const line = raw.trimEnd();
    if (line === '') return;
    if (this.kind.test(line)) {
      this.current = new Map();
      this.all.push(this.current);
      return;
    }
    const field = FIELD.exec(line);
    if (field && this.current) {
      if (!this.current.has(field[1]!)) this.current.set(field[1]!, field[2]!.trim());
    } else if (!BARE_FIELD.test(line)) {
      this.unparsed.add(line);
    }
  }

  end(): Result {
    return this.read({ records: this.all, unparsed: this.unparsed });
  }
}

function integer(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  if (/^\d{1,10}$/.test(text)) return Number(text);
  if (/^0x[0-9a-f]{1,8}$/i.test(text)) return Number.parseInt(text, 16);
  return undefined;
}

export interface SmInfoRecords {
  subnetManagers: FabricSubnetManager[];
  unparsed: UnparsedLines;
}

/** `saquery SMIR`, a line at a time. */
export const smInfoRecordsParser = (): LineParser<SmInfoRecords> => new RecordsParser(/^SMInfoRecord dump:$/, smInfoRecords);

export function parseSmInfoRecords(stdout: string): SmInfoRecords {
  return parseWhole(stdout, smInfoRecordsParser());
}

function smInfoRecords({ records: found, unparsed }: Records): SmInfoRecords {
  const subnetManagers: FabricSubnetManager[] = [];
  for (const record of found) {
    const guid = normaliseGuid(record.get('GUID') ?? '');
    const lid = integer(record.get('LID'));
    const priority = integer(record.get('Priority'));
    const state = integer(record.get('SMState'));
    const activityCount = integer(record.get('ActCount'));
    if (guid === undefined || lid === undefined || priority === undefined || state === undefined || activityCount === undefined) {
      unparsed.add(`SMInfoRecord ${JSON.stringify(Object.fromEntries(record))}`);
      continue;
    }
    subnetManagers.push({ guid, lid, priority, state: SUBNET_MANAGER_STATES[state], activityCount });
  }
  return { subnetManagers, unparsed };
}

export interface MulticastGroups {
  groups: MulticastGroup[];
  unparsed: UnparsedLines;
}

/** `saquery -g`, a line at a time; members are left undefined (see parseMemberCounts). */
export const multicastGroupsParser = (): LineParser<MulticastGroups> => new RecordsParser(/^MCMemberRecord group dump:$/, multicastGroups);

export function parseMulticastGroups(stdout: string): MulticastGroups {
  return parseWhole(stdout, multicastGroupsParser());
}

function multicastGroups({ records: found, unparsed }: Records): MulticastGroups {
  const groups: MulticastGroup[] = [];
  for (const record of found) {
    const mgid = record.get('MGID');
    const pkey = integer(record.get('pkey'));
    const mtu = integer(record.get('Mtu'));
    const rate = integer(record.get('Rate'));
    // saquery prints every field of a record: one without its MTU or rate was cut short.
    if (
      mgid === undefined ||
      !/^[0-9a-f:]+$/i.test(mgid) ||
      pkey === undefined ||
      pkey > 0xffff ||
      mtu === undefined ||
      rate === undefined
    ) {
      unparsed.add(`MCMemberRecord ${JSON.stringify(Object.fromEntries(record))}`);
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
  unparsed: UnparsedLines;
}

/**
 * `saquery -m`, a line at a time (a record per membership: tens of thousands on an AI cluster).
 * opensm also answers with a record whose PortGid is `::` for a group it created itself and nobody
 * joined (the IPoIB broadcast group before any host came up): that is no member.
 */
export const memberCountsParser = (): LineParser<MemberCounts> => new RecordsParser(/^MCMemberRecord member dump:$/, memberCounts);

export function parseMemberCounts(stdout: string): MemberCounts {
  return parseWhole(stdout, memberCountsParser());
}

function memberCounts({ records: found, unparsed }: Records): MemberCounts {
  const members = new Map<string, number>();
  for (const record of found) {
    const mgid = record.get('MGID')?.toLowerCase();
    const portGid = record.get('PortGid');
    if (mgid === undefined || portGid === undefined) {
      unparsed.add(`MCMemberRecord ${JSON.stringify(Object.fromEntries(record))}`);
      continue;
    }
    const joined = /[1-9a-f]/i.test(portGid);
    members.set(mgid, (members.get(mgid) ?? 0) + (joined ? 1 : 0));
  }
  return { members, unparsed };
}
