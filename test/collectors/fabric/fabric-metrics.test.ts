// The whole infiniband_fabric_* exposition of recorded scenarios, compared with reviewed golden
// files (test/fixtures/golden/fabric-*.metrics): every family, label and value, in order, as the
// three fabric collectors write it. The ports part is written straight into bytes rather than
// through `Samples`; these files were first made by the `Samples` rendering and hold the two to the
// same text. Regenerate with `UPDATE_GOLDEN=1 npx vitest run test/collectors/fabric/fabric-metrics.test.ts`
// and review the diff like code.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { parseServeCommandLine as parseCommandLine } from '../../../src/commands/serve/command-line.js';
import { Exporter } from '../../../src/commands/serve/exporter.js';
import type { Settings } from '../../../src/config/flags.js';
import { ExpositionBuffer } from '../../../src/exposition/buffer.js';
import { FABRIC_DISCOVERY } from '../../../src/collectors/fabric/discovery.js';
import { FABRIC_PORTS } from '../../../src/collectors/fabric/ports/index.js';
import { FABRIC_SA } from '../../../src/collectors/fabric/sa.js';
import { COLLECTORS } from '../../../src/collectors/registry.js';
import { buildInfo } from '../../../src/metrics/build-info.js';
import { Exposition } from '../../../src/metrics/snapshot-metrics.js';
import type { Snapshot } from '../../../src/model/snapshot.js';
import { FIXTURES } from '../../support/trees.js';
import { ReplayRunner } from '../../support/replay.js';
import type { FabricCommand } from '../../../src/sources/fabric/commands.js';

const exporters: Exporter[] = [];
afterEach(async () => {
  await Promise.all(exporters.splice(0).map((exporter) => exporter.stop()));
});

/** One discovery, ports and SA cycle on recordings; the snapshot they leave, and the settings. */
async function fabricSnapshot(scenarios: string[], flags: string[]): Promise<{ snapshot: Snapshot; settings: Settings }> {
  const command = parseCommandLine(['--path.sysfs', '/nonexistent', '--config.file', path.join(FIXTURES, 'config/fabric.yml'), '--diag.timeout', '2s', ...flags]);
  if (command.action !== 'run') throw new Error('unexpected');
  const exporter = new Exporter({ settings: command.settings, logger: pino({ level: 'silent' }), runners: { module: 'not-installed', fabric: new ReplayRunner<FabricCommand>('fabric', scenarios) } });
  exporters.push(exporter);
  await exporter.collectFabricOnce();
  const snapshot = exporter.collectors.snapshot;
  if (!snapshot || !FABRIC_DISCOVERY.of(snapshot)) throw new Error('no fabric snapshot');
  return { snapshot, settings: command.settings };
}

const FABRIC = [FABRIC_DISCOVERY, FABRIC_PORTS, FABRIC_SA];

/** The fabric collectors' families, each collector's as it writes them, apart by a blank line as in /metrics. */
function renderFabric({ snapshot, settings }: { snapshot: Snapshot; settings: Settings }): string {
  return FABRIC.map((collector) => {
    const out = new ExpositionBuffer();
    collector.metrics!.write(snapshot, out, settings);
    return out.finish().toString('utf8');
  }).filter((text) => text !== '').join('\n');
}

const CASES: { name: string; scenarios: string[]; flags: string[] }[] = [
  // A configured expectation (degraded), two SMs, multicast groups, a saturated counter.
  { name: 'healthy', scenarios: ['healthy'], flags: [] },
  // CA ports read too: their own series instead of the discovered cables.
  { name: 'hca-ports', scenarios: ['healthy'], flags: ['--fabric.hca-ports'] },
  // Cables pulled: down ports without width or speed, links gone.
  { name: 'pulled', scenarios: ['pulled', 'healthy'], flags: [] },
  // Counters read switch by switch; some PMA queries failed.
  { name: 'pma-failure', scenarios: ['pma-failure', 'healthy'], flags: [] },
  { name: 'shard-2-of-2', scenarios: ['healthy'], flags: ['--fabric.shard', '2/2'] },
];

describe('the fabric exposition', () => {
  for (const { name, scenarios, flags } of CASES) {
    it(`matches test/fixtures/golden/fabric-${name}.metrics`, async () => {
      const text = renderFabric(await fabricSnapshot(scenarios, flags));
      const golden = path.join(FIXTURES, `golden/fabric-${name}.metrics`);
      if (process.env.UPDATE_GOLDEN === '1') writeFileSync(golden, text);
      expect(text).toBe(readFileSync(golden, 'utf8'));
    });
  }

  it('renders a part again only when its data changed, and gives the same part objects back otherwise', async () => {
    const { snapshot, settings } = await fabricSnapshot(['healthy'], []);
    const exposition = new Exposition(COLLECTORS, settings, buildInfo());
    const before = await exposition.parts(snapshot);
    // A new snapshot from a host reading: the fabric's parts are the same objects, not rendered again.
    const hostReading: Snapshot = { ...snapshot, devices: [...snapshot.devices], reports: [...snapshot.reports] };
    const after = await exposition.parts(hostReading);
    expect(after.slice(-3)).toEqual(before.slice(-3));
    after.slice(-3).forEach((part, i) => expect(part).toBe(before.slice(-3)[i]));
    // A new SA cycle: only the SA's part is rendered again.
    const sa = { subnetManagers: [], multicastGroups: FABRIC_SA.of(snapshot)!.multicastGroups };
    const saCycle: Snapshot = { ...snapshot, parts: new Map([...snapshot.parts, [FABRIC_SA.name, sa]]) };
    const [nodes, ports, saPart] = (await exposition.parts(saCycle)).slice(-3);
    expect(nodes).toBe(before.at(-3));
    expect(ports).toBe(before.at(-2));
    expect(saPart).not.toBe(before.at(-1));
    expect(saPart!.plain.toString()).not.toContain('infiniband_fabric_subnet_manager_info');
  });
});
