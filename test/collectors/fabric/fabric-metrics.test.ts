// The whole infiniband_fabric_* exposition of recorded scenarios, compared with reviewed golden
// files (test/fixtures/golden/fabric-*.metrics): every family, label and value, in order, as the
// three fabric collectors write it. The ports part is written straight into bytes rather than
// through `Samples`; these files were first made by the `Samples` rendering and hold the two to the
// same text. scripts/generate/golden.ts writes them (`npm run generate`); review the diff like code.
import { afterEach, describe, expect, it } from 'vitest';
import { FABRIC_GOLDEN_CASES, fabricExposition, fabricGolden, fabricSnapshot as fabricCycle } from '../../../scripts/generate/golden.js';
import { committed, stale } from '../../../scripts/generate/generated-file.js';
import type { Exporter } from '../../../src/commands/serve/exporter.js';
import type { Settings } from '../../../src/config/flags.js';
import { FABRIC_SA } from '../../../src/collectors/fabric/sa.js';
import { COLLECTORS } from '../../../src/collectors/registry.js';
import { buildInfo } from '../../../src/metrics/build-info.js';
import { Exposition } from '../../../src/metrics/snapshot-metrics.js';
import type { Snapshot } from '../../../src/model/snapshot.js';

const exporters: Exporter[] = [];
afterEach(async () => {
  await Promise.all(exporters.splice(0).map((exporter) => exporter.stop()));
});

/** One discovery, ports and SA cycle on recordings; the snapshot they leave, and the settings. */
async function fabricSnapshot(scenarios: string[], flags: string[]): Promise<{ snapshot: Snapshot; settings: Settings }> {
  const cycle = await fabricCycle(scenarios, flags);
  exporters.push(cycle.exporter);
  return cycle;
}

describe('the fabric exposition', () => {
  for (const golden of FABRIC_GOLDEN_CASES) {
    it(`matches ${fabricGolden(golden.name)}`, async () => {
      expect(await fabricExposition(golden), stale(fabricGolden(golden.name))).toBe(committed(fabricGolden(golden.name)));
    });
  }

  it('renders a part again only when its data changed, and gives the same part objects back otherwise', async () => {
    const { snapshot, settings } = await fabricSnapshot(['healthy'], []);
    const exposition = new Exposition(COLLECTORS, settings, buildInfo());
    const before = await exposition.parts(snapshot);
    // A new snapshot from a host reading: the fabric's parts are the same objects, not rendered again.
    const hostReading: Snapshot = { ...snapshot, devices: [...snapshot.devices], reports: [...snapshot.reports] };
    const after = await exposition.parts(hostReading);
    // The first part is the host's and the exporter's; every part after it is fabric mode's.
    expect(after.length).toBeGreaterThan(3);
    after.slice(1).forEach((part, i) => expect(part).toBe(before[i + 1]));
    // A new SA cycle: only the SA's part is rendered again.
    const saAt = before.findIndex((part) => part.plain.toString().includes('infiniband_fabric_subnet_manager_info'));
    expect(saAt).toBeGreaterThan(0);
    const sa = { subnetManagers: [], multicastGroups: FABRIC_SA.of(snapshot)!.multicastGroups };
    const saCycle: Snapshot = { ...snapshot, parts: new Map([...snapshot.parts, [FABRIC_SA.name, sa]]) };
    const again = await exposition.parts(saCycle);
    again.slice(1).forEach((part, i) => (i + 1 === saAt ? expect(part).not.toBe(before[i + 1]) : expect(part).toBe(before[i + 1])));
    const saPart = again[saAt];
    expect(saPart!.plain.toString()).not.toContain('infiniband_fabric_subnet_manager_info');
  });
});
