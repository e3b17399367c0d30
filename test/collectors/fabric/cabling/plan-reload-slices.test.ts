// A cabling plan read again (SIGHUP, or the file changed) while the exporter serves is parsed in
// time slices: the event loop keeps turning through the reload of a large plan instead of being
// held for the whole parse (a 16 MiB plan held it 1.65 s). The number of turns is asserted, not a
// duration: the longest block is measured by hand (docs/benchmarks.md, "The cabling plan read again").
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { FABRIC_CABLING, FABRIC_TOPOLOGY_FILE } from '../../../../src/collectors/fabric/cabling/index.js';
import type { CollectorContext, Reader } from '../../../../src/collection/collector.js';
import type { UsageError } from '../../../../src/config/errors.js';
import type { CablingReport } from '../../../../src/model/cabling.js';
import type { Snapshot } from '../../../../src/model/snapshot.js';
import { formatPlan } from '../../../../src/sources/fabric/cabling-plan-writer.js';
import { fatTreeFabric } from '../../../../synthetic/fat-tree.js';
import { countTurns } from '../../../support/event-loop-turns.js';
import { settingsFromFlags } from '../../../support/exporter.js';
import { NO_INFINIBAND } from '../../../support/trees.js';

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

/** Before the first discovery: the plan is read and kept in force, nothing to resolve it against. */
const NO_FABRIC: Snapshot = { devices: [], parts: new Map(), reports: [], totals: { readErrors: new Map(), commandTimeouts: new Map() } };

function cablingReader(plan: string, fatal: UsageError[]): Reader<CablingReport> {
  const settings = settingsFromFlags(['--path.sysfs', NO_INFINIBAND, '--collector.fabric', '--fabric.topology-file', plan]);
  expect(settings.get(FABRIC_TOPOLOGY_FILE)).toBe(plan);
  const context = {
    settings,
    logger: pino({ level: 'silent' }),
    mode: 'serve',
    now: Date.now,
    fatal: (error: UsageError) => fatal.push(error),
  } as unknown as CollectorContext;
  const reader = FABRIC_CABLING.setUp(context);
  if (reader instanceof Promise || 'off' in reader) throw new Error('the cabling collector is off');
  return reader;
}

describe('a large cabling plan read again', () => {
  it('is parsed in slices: the event loop turns many times during the reload, and the whole plan is read', {
    timeout: 120_000,
  }, async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'ibx-plan-reload-'));
    dirs.push(dir);
    // 200 leaves of 120 hosts under 36 spines: 31 200 cables, about 1.5 MB of plan.
    const { topology, readings } = fatTreeFabric({ spines: 36, leaves: 200, hostsPerLeaf: 120 });
    const text = formatPlan(topology, readings);
    const lines = text.split('\n').length;
    expect(text.length).toBeGreaterThan(1_000_000);
    const file = path.join(dir, 'plan.txt');
    await writeFile(file, text);
    const fatal: UsageError[] = [];
    const reader = cablingReader(file, fatal);
    const signal = new AbortController().signal;
    expect((await reader.read(NO_FABRIC, signal)).failure).toBeUndefined();

    // The same plan with one malformed line at its end: only a parse of every line finds it.
    await writeFile(file, `${text}leaf-1 1\n`);
    reader.reload?.();
    const turns = countTurns();
    const reading = await reader.read(NO_FABRIC, signal);
    const during = turns.stop();
    expect(fatal).toEqual([]);
    expect(reading.failure).toBe(
      `--fabric.topology-file ${file}:${lines}: expected "<node> <port> <peer node> <peer port> [width] [speed]" (a node name with spaces in double quotes), got 2 fields; the plan read before stays in force`,
    );
    // Parsed at once, the loop does not turn at all during the reload; in slices of about 10 ms it
    // turns a dozen times on a fast machine, more on a slow one.
    expect(during).toBeGreaterThanOrEqual(3);
  });
});
