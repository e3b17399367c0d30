// An exporter in fabric mode on recorded tool outputs (test/fixtures/fabric-recordings), as the fabric
// collectors' tests build it; `cleanUpFabricExporters` (their afterEach) stops every one and
// removes the folders the tests listed in `dirs`.
import { rm } from 'node:fs/promises';
import path from 'node:path';
import pino, { type Logger } from 'pino';
import { parseServeCommandLine as parseCommandLine } from '../../src/commands/serve/command-line.js';
import { Exporter } from '../../src/commands/serve/exporter.js';
import type { FabricCommand } from '../../src/sources/fabric/commands.js';
import { sampleValue as value, scrape } from './exposition.js';
import { recording as recorded, type ReplayRunner } from './replay.js';
import { FIXTURES, NO_INFINIBAND } from './trees.js';

export const CONFIG = path.join(FIXTURES, 'config/fabric.yml');
export const exporters: Exporter[] = [];
export const dirs: string[] = [];

export async function cleanUpFabricExporters(): Promise<void> {
  await Promise.all(exporters.splice(0).map((exporter) => exporter.stop()));
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
}

export function fabricExporter(
  runner: ReplayRunner<FabricCommand>,
  flags: string[] = [],
  now?: () => number,
  logger: Logger = pino({ level: 'silent' }),
): Exporter {
  const command = parseCommandLine(['--path.sysfs', NO_INFINIBAND, '--config.file', CONFIG, '--diag.timeout', '2s', ...flags]);
  if (command.action !== 'run') throw new Error('unexpected');
  const exporter = new Exporter({
    settings: command.settings,
    logger,
    runners: { module: 'not-installed', fabric: runner },
    ...(now && { now }),
  });
  exporters.push(exporter);
  return exporter;
}

export async function cycle(exporter: Exporter): Promise<string> {
  await exporter.collectOnce();
  await exporter.collectFabricOnce();
  return scrape(exporter);
}

export const port = (guid: string, number: number): string => `node_guid="${guid}",port="${number}"`;
export const healthyText = (stem: string): string => recorded('fabric', 'healthy', stem).stdout;
export const discoveries = (runner: ReplayRunner<FabricCommand>): number =>
  runner.calls.filter((call) => call.startsWith('ibnetdiscover')).length;
export const success = (text: string, collector: string): number | undefined =>
  value(text, `infiniband_exporter_collector_success{collector="${collector}"}`);
