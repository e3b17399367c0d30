// The whole infiniband_fabric_* exposition of recorded scenarios, compared with reviewed golden
// files (test/fixtures/golden/fabric-*.metrics): every family, label and value, in order. The ports
// part is written straight into bytes rather than through `Samples`; these files were made by the
// `Samples` rendering and hold the two to the same text. Regenerate with
// `UPDATE_GOLDEN=1 npx vitest run test/fabric/exposition.test.ts` and review the diff like code.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { parseCommandLine } from '../../src/config/settings.js';
import { Exporter } from '../../src/exporter.js';
import { createFabricParts, renderFabric } from '../../src/metrics/fabric.js';
import { FIXTURES } from '../support/trees.js';
import { FabricReplay } from '../support/fabric-replay.js';

const exporters: Exporter[] = [];
afterEach(async () => {
  await Promise.all(exporters.splice(0).map((exporter) => exporter.stop()));
});

/** One discovery, ports and SA cycle on recordings; the fabric snapshot they leave. */
async function fabricSnapshot(scenarios: string[], flags: string[]) {
  const command = parseCommandLine(['--path.sysfs', '/nonexistent', '--config.file', path.join(FIXTURES, 'config/fabric.yml'), '--diag.timeout', '2s', ...flags]);
  if (command.action !== 'run') throw new Error('unexpected');
  const exporter = new Exporter({ settings: command.settings, logger: pino({ level: 'silent' }), fabricRunner: new FabricReplay(scenarios) });
  exporters.push(exporter);
  await exporter.collectFabricOnce();
  const fabric = exporter.collection.snapshot?.fabric;
  if (!fabric) throw new Error('no fabric snapshot');
  return fabric;
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
    const fabric = await fabricSnapshot(['healthy'], []);
    const parts = createFabricParts();
    const [nodes, ports, sa] = parts(fabric);
    const again = parts({ ...fabric });
    [nodes, ports, sa].forEach((part, i) => expect(again[i]).toBe(part));
    const [nodesAgain, portsAgain, saAgain] = parts({ ...fabric, subnetManagers: [], multicastGroups: [] });
    expect(nodesAgain).toBe(nodes);
    expect(portsAgain).toBe(ports);
    expect(saAgain).not.toBe(sa);
    expect(saAgain!.plain.toString()).not.toContain('infiniband_fabric_subnet_manager_info');
  });
});
