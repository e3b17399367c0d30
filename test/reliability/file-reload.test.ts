// Files read again while the exporter runs (the cabling plan on SIGHUP or when it changed, the
// node-name-map at each discovery): a FIFO or a 50 MB file in their place is one error line, the
// last good content stays in force, and nothing waits for a writer or parses gigabytes.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { tmpdir } from 'node:os';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseServeCommandLine } from '../../src/commands/serve/command-line.js';
import { Exporter } from '../../src/commands/serve/exporter.js';
import { DISCOVERY_CYCLE, FABRIC_PORTS_CYCLE } from '../../src/collectors/fabric/fabric-mode.js';
import type { FabricCommand } from '../../src/sources/fabric/commands.js';
import { sampleValue as value, scrape } from '../support/exposition.js';
import { logLines } from '../support/log-lines.js';
import { ReplayRunner } from '../support/replay.js';
import { FIXTURES, NO_INFINIBAND } from '../support/trees.js';

let dir: string;
let exporter: Exporter | undefined;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'ibx-file-reload-'));
});
afterEach(async () => {
  await exporter?.stop();
  exporter = undefined;
  rmSync(dir, { recursive: true, force: true });
});

function fabricExporter(flags: string[]) {
  const log = logLines();
  const command = parseServeCommandLine([
    '--path.sysfs',
    NO_INFINIBAND,
    '--config.file',
    path.join(FIXTURES, 'config/fabric.yml'),
    '--diag.timeout',
    '2s',
    ...flags,
  ]);
  if (command.action !== 'run') throw new Error('unexpected');
  exporter = new Exporter({
    settings: command.settings,
    logger: log.logger,
    runners: { module: 'not-installed', fabric: new ReplayRunner<FabricCommand>('fabric', ['healthy']) },
  });
  return { exporter, log };
}

/** Put `make`'s file in place of `file` (a rename, as a person's tools do). */
function replaceWith(file: string, make: (aside: string) => void): void {
  const aside = `${file}.new`;
  make(aside);
  rmSync(file);
  renameSync(aside, file);
}

const mkfifo = (file: string) => execFileSync('mkfifo', [file]);
const fifty = (file: string) => writeFileSync(file, Buffer.alloc(50 * 1000 * 1000, '# nothing but a comment\n'));

describe('the cabling plan read again', () => {
  it.each([
    ['a FIFO', mkfifo, /is a FIFO, not a regular file/],
    ['a 50 MB file', fifty, /is 47\.7 MiB, more than the 32\.0 MiB a cabling plan may have/],
  ])(
    '%s in its place on SIGHUP: one log line, the plan before stays in force, no freeze',
    async (_name, make, reason) => {
      const plan = path.join(dir, 'plan.net');
      copyFileSync(path.join(FIXTURES, 'fabric-recordings/healthy/ibnetdiscover.stdout'), plan);
      const { exporter, log } = fabricExporter(['--fabric.topology-file', plan]);
      await exporter.collectFabricOnce();
      expect(value(await scrape(exporter), 'infiniband_exporter_collector_success{collector="fabric_cabling"}')).toBe(1);

      replaceWith(plan, make);
      exporter.reload();
      const started = performance.now();
      await exporter.collectors.runCycle(FABRIC_PORTS_CYCLE);
      expect(performance.now() - started).toBeLessThan(2_000);
      const refused = log.lines.filter(
        (line) => line.msg === 'the changed cabling plan is not usable; the plan read before stays in force',
      );
      expect(refused).toHaveLength(1);
      expect(String(refused[0]!.error)).toMatch(reason);
      const text = await scrape(exporter);
      expect(value(text, 'infiniband_exporter_collector_success{collector="fabric_cabling"}')).toBe(0);
      const report = exporter.collectors.snapshot!.reports.find((candidate) => candidate.collector === 'fabric_cabling')!;
      expect(report.errors[0]!.message).toMatch(/the plan read before stays in force$/);

      replaceWith(plan, (file) => copyFileSync(path.join(FIXTURES, 'fabric-recordings/healthy/ibnetdiscover.stdout'), file));
      exporter.reload();
      await exporter.collectors.runCycle(FABRIC_PORTS_CYCLE);
      expect(value(await scrape(exporter), 'infiniband_exporter_collector_success{collector="fabric_cabling"}')).toBe(1);
    },
    30_000,
  );
});

describe('the node-name-map read again at each discovery', () => {
  it.each([
    ['a FIFO', mkfifo, /is a FIFO, not a regular file/],
    ['a 50 MB file', fifty, /is 47\.7 MiB, more than the 16\.0 MiB a node-name-map may have/],
  ])(
    '%s in its place: a read error, the names read before stay',
    async (_name, make, reason) => {
      const map = path.join(dir, 'node-name-map');
      writeFileSync(map, readFileSync(path.join(FIXTURES, 'cabling/node-name-map')));
      const { exporter } = fabricExporter(['--fabric.node-name-map', map]);
      await exporter.collectFabricOnce();
      replaceWith(map, make);
      const started = performance.now();
      await exporter.collectors.runCycle(DISCOVERY_CYCLE);
      expect(performance.now() - started).toBeLessThan(2_000);
      const report = exporter.collectors.snapshot!.reports.find((candidate) => candidate.collector === 'fabric_discovery')!;
      const error = report.errors.find((candidate) => candidate.item === map);
      expect(error?.message).toMatch(reason);
      expect(error?.message).toMatch(/keeping the names read before$/);
    },
    30_000,
  );
});

describe('a large node-name-map', () => {
  it('is parsed in time slices at each discovery: the event loop turns meanwhile', async () => {
    const map = path.join(dir, 'node-name-map');
    const named = readFileSync(path.join(FIXTURES, 'cabling/node-name-map'), 'utf8');
    // About 12 MiB: names of nodes this fabric does not have, after those it has.
    const others = Array.from({ length: 300_000 }, (_, i) => `0x${(0x7000000000000000 + i).toString(16)} "spare-node-${i} HCA-1"\n`).join(
      '',
    );
    writeFileSync(map, named + others);
    const { exporter } = fabricExporter(['--fabric.node-name-map', map]);
    let longest = 0;
    let last = performance.now();
    const ticker = setInterval(() => {
      const now = performance.now();
      longest = Math.max(longest, now - last);
      last = now;
    }, 1);
    try {
      await exporter.collectors.runCycle(DISCOVERY_CYCLE);
    } finally {
      clearInterval(ticker);
    }
    const report = exporter.collectors.snapshot!.reports.find((candidate) => candidate.collector === 'fabric_discovery')!;
    expect(report.errors.filter((error) => error.item === map)).toEqual([]);
    // Parsed at once, it held the event loop for seconds on a loaded machine.
    expect(longest).toBeLessThan(400);
  }, 60_000);
});
