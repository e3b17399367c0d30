// The reviewed golden expositions (test/fixtures/golden/): the whole /metrics of the zoo host, and
// the fabric collectors' families on recorded scenarios. Review their diff like code.
import path from 'node:path';
import pino from 'pino';
import { FABRIC_DISCOVERY } from '../../src/collectors/fabric/discovery.js';
import { FABRIC_PORTS } from '../../src/collectors/fabric/ports/index.js';
import { FABRIC_SA } from '../../src/collectors/fabric/sa.js';
import { parseServeCommandLine } from '../../src/commands/serve/command-line.js';
import { Exporter } from '../../src/commands/serve/exporter.js';
import type { Settings } from '../../src/config/flags.js';
import { ExpositionBuffer } from '../../src/exposition/buffer.js';
import type { Snapshot } from '../../src/model/snapshot.js';
import type { FabricCommand } from '../../src/sources/fabric/commands.js';
import { exporterFromFlags } from '../../test/support/exporter.js';
import { ReplayRunner } from '../../test/support/replay.js';
import { FIXTURES, ZOO, ZOO_CONFIG } from '../../test/support/trees.js';
import type { GeneratedFile } from './generated-file.js';

/** Values that differ from run to run: durations, timestamps, and the build's revision and Node version. */
export function normalise(exposition: string): string {
  return exposition
    .replace(/^(infiniband_exporter_collector_duration_seconds\{[^}]*\}) .*$/gm, '$1 <duration>')
    .replace(/^(infiniband_exporter_last_collection_timestamp_seconds\{[^}]*\}) .*$/gm, '$1 <timestamp>')
    .replace(/^infiniband_exporter_build_info\{.*\} 1$/m, 'infiniband_exporter_build_info{<build>} 1');
}

export const ZOO_GOLDEN = 'test/fixtures/golden/zoo.metrics';

/** The zoo host's whole /metrics, normalised. */
export async function zooExposition(): Promise<string> {
  const exporter = exporterFromFlags(['--path.sysfs', ZOO, '--config.file', ZOO_CONFIG, '--web.disable-exporter-metrics']);
  try {
    await exporter.collectOnce();
    const response = await exporter.app.inject({ url: '/metrics' });
    if (response.statusCode !== 200) throw new Error(`/metrics answered ${response.statusCode}`);
    return normalise(response.body);
  } finally {
    await exporter.stop();
  }
}

/** One discovery, ports and SA cycle on recordings: the exporter (stop it) and the snapshot it left. */
export async function fabricSnapshot(
  scenarios: string[],
  flags: string[],
): Promise<{ exporter: Exporter; snapshot: Snapshot; settings: Settings }> {
  const command = parseServeCommandLine([
    '--path.sysfs',
    '/nonexistent',
    '--config.file',
    path.join(FIXTURES, 'config/fabric.yml'),
    '--diag.timeout',
    '2s',
    ...flags,
  ]);
  if (command.action !== 'run') throw new Error('unexpected');
  const exporter = new Exporter({
    settings: command.settings,
    logger: pino({ level: 'silent' }),
    runners: { module: 'not-installed', fabric: new ReplayRunner<FabricCommand>('fabric', scenarios) },
  });
  await exporter.collectFabricOnce();
  const snapshot = exporter.collectors.snapshot;
  if (!snapshot || !FABRIC_DISCOVERY.of(snapshot)) {
    await exporter.stop();
    throw new Error('no fabric snapshot');
  }
  return { exporter, snapshot, settings: command.settings };
}

/** The fabric collectors' families, each collector's as it writes them, apart by a blank line as in /metrics. */
export function renderFabric({ snapshot, settings }: { snapshot: Snapshot; settings: Settings }): string {
  return [FABRIC_DISCOVERY, FABRIC_PORTS, FABRIC_SA]
    .map((collector) => {
      const out = new ExpositionBuffer();
      collector.metrics!.write(snapshot, out, settings);
      return out.finish().toString('utf8');
    })
    .filter((text) => text !== '')
    .join('\n');
}

export const FABRIC_GOLDEN_CASES: { name: string; scenarios: string[]; flags: string[] }[] = [
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

export const fabricGolden = (name: string): string => `test/fixtures/golden/fabric-${name}.metrics`;

/** The fabric exposition of one case. */
export async function fabricExposition({ scenarios, flags }: { scenarios: string[]; flags: string[] }): Promise<string> {
  const cycle = await fabricSnapshot(scenarios, flags);
  try {
    return renderFabric(cycle);
  } finally {
    await cycle.exporter.stop();
  }
}

export async function goldenFiles(): Promise<GeneratedFile[]> {
  const files: GeneratedFile[] = [{ path: ZOO_GOLDEN, content: await zooExposition() }];
  for (const golden of FABRIC_GOLDEN_CASES) files.push({ path: fabricGolden(golden.name), content: await fabricExposition(golden) });
  return files;
}
