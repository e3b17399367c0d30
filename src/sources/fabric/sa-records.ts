// The subnet administrator's view: every subnet manager (saquery SMIR), refreshed from each SM
// itself (sminfo <lid>: the SA keeps the state another SM had when the master first met it, e.g.
// DISCOVERING for an SM that has long been STANDBY), and every multicast group (saquery -g) with
// its member count (saquery -m). The SA is the master SM: while no master answers, these fail and
// this cycle reports no records.
//
// saquery prints no end marker: records are checked instead. A record that lacks a field saquery
// always prints, or a line outside any record, fails the cycle (cut short or garbled). Lists whose
// length is a fact the alerts count are not served incomplete: the SM records (one SM fewer is a
// subnet without standby) and the member counts. An answer without any SMInfoRecord is incomplete
// too (the master lists itself), and so is one without any multicast group where the last
// complete cycle had some (opensm keeps the IPoIB broadcast group of every partition it serves).
// An SM of the last complete cycle that the SA no longer lists is asked itself: one that answers
// was left out of output cut between two records; it stays on the list and the cycle fails.
import type { SubnetManagerInfo } from '../../model/host.js';
import type { FabricSubnetManager, MulticastGroup } from '../../model/fabric.js';
import { isSubnetManagerUnreachable, parseSminfo } from '../diag/sminfo.js';
import { UnparsedLines } from '../unparsed-lines.js';
import { commandItem, type FabricCycle } from './commands.js';
import { memberCountsParser, multicastGroupsParser, smInfoRecordsParser } from './saquery.js';

export interface SubnetAdministration {
  subnetManagers: FabricSubnetManager[];
  multicastGroups: MulticastGroup[];
}

/** What the last SA cycle that succeeded read (nothing before the first). */
export interface SubnetAdministrationBefore {
  subnetManagers: readonly FabricSubnetManager[];
  multicastGroups: number;
}

const NOTHING_BEFORE: SubnetAdministrationBefore = { subnetManagers: [], multicastGroups: 0 };

export async function readSubnetAdministration(cycle: FabricCycle, before = NOTHING_BEFORE): Promise<SubnetAdministration> {
  const [subnetManagers, multicastGroups] = await Promise.all([
    readSubnetManagers(cycle, before.subnetManagers),
    readMulticastGroups(cycle, before.multicastGroups),
  ]);
  return { subnetManagers, multicastGroups };
}

async function readSubnetManagers(cycle: FabricCycle, before: readonly FabricSubnetManager[]): Promise<FabricSubnetManager[]> {
  const parser = smInfoRecordsParser();
  const result = await cycle.run('saquery', ['SMIR'], undefined, parser);
  if (!result) return [];
  const { subnetManagers, unparsed } = parser.end();
  cycle.unparsed(result, unparsed);
  if (unparsed.count > 0) return [];
  if (subnetManagers.length === 0) {
    cycle.fail(commandItem(result), 'no SMInfoRecord in the output, where the master always lists itself: the output is incomplete');
    return [];
  }
  const listed = await Promise.all(
    subnetManagers.map(async (record) => {
      // An SM that does not answer keeps the SA's record: it is listed, its state is the SA's.
      const own = await askSubnetManager(cycle, record);
      return own ? { ...record, ...own } : record;
    }),
  );
  const unlisted = before.filter((sm) => !subnetManagers.some((record) => record.guid === sm.guid));
  const answering = await Promise.all(
    unlisted.map(async (sm) => {
      const own = await askSubnetManager(cycle, sm);
      return own && { ...sm, ...own };
    }),
  );
  for (const sm of answering) {
    if (sm)
      cycle.fail(
        commandItem(result),
        `the subnet manager ${sm.guid} (LID ${sm.lid}) is not in the output but answers as ${sm.state ?? 'a subnet manager'}: the output is incomplete`,
      );
  }
  return [...listed, ...answering.filter((sm) => sm !== undefined)];
}

/** What the SM at `sm.lid` says of itself, when it answers there under its GUID. */
async function askSubnetManager(
  cycle: FabricCycle,
  sm: Pick<FabricSubnetManager, 'guid' | 'lid'>,
): Promise<Pick<SubnetManagerInfo, 'priority' | 'state' | 'activityCount'> | undefined> {
  const own = await cycle.run('sminfo', [String(sm.lid)], (r) => r.exitCode === 0 || isSubnetManagerUnreachable(r.stdout, r.exitCode));
  if (own?.exitCode !== 0) return undefined;
  const info = parseSminfo(own.stdout);
  if (!info) cycle.unparsed(own, new UnparsedLines([own.stdout.trim().split('\n')[0] ?? '']));
  if (!info || info.guid !== sm.guid) return undefined;
  return { priority: info.priority, state: info.state, activityCount: info.activityCount };
}

async function readMulticastGroups(cycle: FabricCycle, groupsBefore: number): Promise<MulticastGroup[]> {
  // A record per membership: tens of thousands on an AI cluster, parsed as they arrive.
  const [groupsParser, membersParser] = [multicastGroupsParser(), memberCountsParser()];
  const [groupsResult, membersResult] = await Promise.all([
    cycle.run('saquery', ['-g'], undefined, groupsParser),
    cycle.run('saquery', ['-m'], undefined, membersParser),
  ]);
  if (!groupsResult) return [];
  const { groups, unparsed } = groupsParser.end();
  cycle.unparsed(groupsResult, unparsed);
  if (groups.length === 0 && unparsed.count === 0 && groupsBefore > 0) {
    cycle.fail(
      commandItem(groupsResult),
      `no multicast group in the output, where the last cycle read ${groupsBefore}: the output is incomplete`,
    );
  }
  const members = membersResult ? membersParser.end() : undefined;
  if (members && membersResult) cycle.unparsed(membersResult, members.unparsed);
  const counted = members && members.unparsed.count === 0 ? members.members : undefined;
  return groups.map((group) => ({ ...group, members: counted ? (counted.get(group.mgid) ?? 0) : undefined }));
}
