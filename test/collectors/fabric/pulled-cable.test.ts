// One cause, one finding (DESIGN "The first hour"): the inter-switch cable pulled from the rail
// tree (rail2-leaf1 port 4 / spine-1 port 5, a cable of the plan) is one finding naming both ends
// and the plan's line, not one per end besides; it is critical, as the port-down it stands for,
// when the switch port shows it carried traffic.
import { describe, expect, it } from 'vitest';
import { cablingFindings, portWasInUse } from '../../../src/collectors/fabric/cabling/findings.js';
import { fabricPortKey } from '../../../src/model/fabric.js';
import { railTreeMapInput } from '../../support/cabling.js';
import { CounterRow } from '../../../src/model/counter-row.js';

const LEAF = '0x0002c90200700005';
const SPINE1 = '0x0002c90200600001';

describe('a pulled cable of the plan', () => {
  it("is one finding with both ends and the plan's line; the port-down findings of its ends are explained", () => {
    const { findings } = railTreeMapInput();
    const about = findings.filter((finding) =>
      /rail2-leaf1 port 4|port 4 of rail2-leaf1|port 5 of spine-1|spine-1 port 5/.test(finding.summary),
    );
    expect(about.map((finding) => finding.condition)).toEqual(['planned-link-missing']);
    expect(about[0]!.summary).toMatch(/^no link between rail2-leaf1 port 4 and spine-1 port 5, a cable of the plan \(plan\.txt line \d+\)/);
  });

  it('is critical, as InfiniBandFabricPortDown, when its switch port carried traffic', () => {
    const { cabling, topology, readings } = railTreeMapInput();
    const end = fabricPortKey(LEAF, 4);
    const used = new Map(readings);
    used.set(end, { ...readings.get(end)!, counters: CounterRow.of([{ name: 'link_downed', value: 1, saturated: false }]) });
    expect(portWasInUse(used.get(end))).toBe(true);
    const [missing] = cablingFindings(cabling, topology, used).filter((finding) => finding.condition === 'planned-link-missing');
    expect([missing?.severity, missing?.alert]).toEqual(['critical', 'InfiniBandFabricPortDown']);
    const unused = new Map(readings);
    for (const key of [end, fabricPortKey(SPINE1, 5)]) unused.set(key, { ...readings.get(key)!, counters: CounterRow.EMPTY });
    const [quiet] = cablingFindings(cabling, topology, unused).filter((finding) => finding.condition === 'planned-link-missing');
    expect([quiet?.severity, quiet?.alert]).toEqual(['warning', 'InfiniBandFabricPlannedLinkMissing']);
  });
});
