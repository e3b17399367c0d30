// A tool in fabric mode's place that prints without end: one endless line (no newline ever), or
// junk lines as fast as a pipe takes them (`yes garbage`). The runner counts every byte it reads,
// so the tool is killed at the output limit and the reading is partial (a failed command, never
// success); the line splitter never builds a line longer than 64 KiB; the parser keeps a count of
// the lines it did not understand, not the lines. Memory stays bounded and the process lives.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SnapshotStore } from '../../src/collection/store.js';
import { FABRIC_PORTS } from '../../src/collectors/fabric/ports/index.js';
import { PORTS_FAILURE } from '../../src/collectors/fabric/ports/findings.js';
import { collectorFindings } from '../../src/findings/collector-health.js';
import { RecurringErrors } from '../../src/log/recurring-errors.js';
import { FABRIC_MAX_OUTPUT_BYTES } from '../../src/collectors/fabric/fabric-mode.js';
import { ExecaRunner } from '../../src/sources/command-runner.js';
import { FabricCycle, type FabricCommand } from '../../src/sources/fabric/commands.js';
import { IblinkinfoParser } from '../../src/sources/fabric/iblinkinfo.js';
import { MAX_LINE_CHARS, OutputLines } from '../../src/sources/output-lines.js';
import { script } from './support.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'ibx-endless-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

/** The largest resident set seen while `work` runs, above the one before it (sampled every 20 ms). */
async function peakGrowth<T>(work: () => Promise<T>): Promise<{ value: T; growthMiB: number }> {
  const before = process.memoryUsage().rss;
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
  try {
    const value = await work();
    peak = Math.max(peak, process.memoryUsage().rss);
    return { value, growthMiB: (peak - before) / 1024 / 1024 };
  } finally {
    clearInterval(sampler);
  }
}

async function runAsIblinkinfo(body: string) {
  const tool = await script(dir, `tool-${Math.random().toString(36).slice(2)}`, body);
  const paths = Object.fromEntries(
    ['ibnetdiscover', 'iblinkinfo', 'ibqueryerrors', 'saquery', 'sminfo', 'perfquery'].map((name) => [name, tool]),
  ) as Record<FabricCommand, string>;
  const runner = new ExecaRunner<FabricCommand>({ paths, timeoutMs: 20_000, maxConcurrent: 1, maxOutputBytes: FABRIC_MAX_OUTPUT_BYTES });
  const cycle = new FabricCycle({ runner, timeoutMs: 20_000 });
  const parser = new IblinkinfoParser();
  const { value: result, growthMiB } = await peakGrowth(() => cycle.run('iblinkinfo', ['--switches-only'], undefined, parser));
  return { result, growthMiB, report: cycle.report(), cycle, parser };
}

describe('a tool that prints without end', () => {
  it('one 200 MB line without a newline: killed at the output limit, partial, memory bounded', async () => {
    const { result, growthMiB, report } = await runAsIblinkinfo("head -c 200000000 /dev/zero | tr '\\0' x");
    expect(result).toBeUndefined();
    expect(report.failed).toBe(true);
    expect(report.errors).toEqual([{ item: 'iblinkinfo --switches-only', message: 'killed: output larger than the limit' }]);
    // Before: one string of the whole output, RangeError: Invalid string length at 580 MB.
    expect(growthMiB).toBeLessThan(200);
  }, 60_000);

  it('`yes garbage`: killed at the output limit, partial, memory bounded', async () => {
    const { result, growthMiB, report, parser } = await runAsIblinkinfo('exec yes garbage');
    expect(result).toBeUndefined();
    expect(report.failed).toBe(true);
    expect(report.errors).toEqual([{ item: 'iblinkinfo --switches-only', message: 'killed: output larger than the limit' }]);
    // What was parsed before the kill: counted, five examples kept, not millions of lines.
    const { unparsed } = parser.end();
    expect(unparsed.count).toBeGreaterThan(1000);
    expect(unparsed.examples).toEqual(Array.from({ length: 5 }, () => 'garbage'));
    // Before: every line held, 1.0–1.25 GB within the 5 s time limit.
    expect(growthMiB).toBeLessThan(200);
  }, 60_000);

  it('a long line under the limit is handed over cut to 64 KiB and counted as a read error', async () => {
    const tool = await script(dir, 'long-line', "head -c 1000000 /dev/zero | tr '\\0' x; echo; echo tail");
    const paths = { iblinkinfo: tool } as Record<FabricCommand, string>;
    const cycle = new FabricCycle({
      runner: new ExecaRunner<FabricCommand>({ paths, timeoutMs: 20_000, maxConcurrent: 1, maxOutputBytes: FABRIC_MAX_OUTPUT_BYTES }),
      timeoutMs: 20_000,
    });
    const parser = new IblinkinfoParser();
    const result = await cycle.run('iblinkinfo', ['--switches-only'], undefined, parser);
    expect(result).toMatchObject({ outcome: 'exited', exitCode: 0 });
    cycle.unparsed(result!, parser.end().unparsed);
    const report = cycle.report();
    expect(report.errors.map((error) => [error.message, error.count])).toEqual([
      [`a line longer than ${MAX_LINE_CHARS} characters cut`, undefined],
      // The cut line and "tail" are not iblinkinfo: both counted as not understood, in one entry.
      [expect.stringMatching(/^output not understood: 2 lines skipped, the data they held is missing \(first: "x{120}"\)$/), 2],
    ]);
  }, 60_000);
});

describe('junk under the output limit, exit status 0', () => {
  it('a million lines not understood: one read error entry counting them all, read_errors_total +1 000 000, memory bounded', async () => {
    // 2 MB of `y\n`, far under the output limit: the tool is not killed and exits 0.
    const { result, growthMiB, cycle, parser } = await runAsIblinkinfo('yes | head -n 1000000');
    expect(result).toMatchObject({ outcome: 'exited', exitCode: 0 });
    cycle.unparsed(result!, parser.end().unparsed);
    const report = cycle.report();
    expect(report.failed).toBe(true);
    // One entry, not one per line (60 MiB of `y\n` would be 30 M of them, about 240 MB, until the next cycle).
    expect(report.errors).toEqual([
      {
        item: 'iblinkinfo --switches-only',
        message: 'output not understood: 1000000 lines skipped, the data they held is missing (first: "y")',
        count: 1_000_000,
      },
    ]);
    expect(growthMiB).toBeLessThan(100);

    // Every consumer counts what the entry stands for: the counter, the collector's finding, check's JSON.
    const store = new SnapshotStore(new RecurringErrors(pino({ level: 'silent' })));
    store.enroll('fabric_ports');
    store.report({
      collector: 'fabric_ports',
      success: false,
      durationSeconds: 1,
      finishedAt: 0,
      errors: report.errors.map((error) => ({ collector: 'fabric_ports', ...error })),
    });
    const snapshot = store.publish();
    expect(snapshot.totals.readErrors.get('fabric_ports')).toBe(1_000_000);
    // (The ports collector explains its failure once a discovery found the fabric: here, always.)
    const [finding] = collectorFindings(snapshot, [{ ...FABRIC_PORTS, failure: PORTS_FAILURE }]);
    expect(finding?.summary).toMatch(
      /^collector fabric_ports failed \(1000000 errors; first: iblinkinfo --switches-only: output not understood/,
    );
  }, 60_000);
});

describe('OutputLines on an endless line', () => {
  it('200 MB without a newline: one line of 64 KiB, counted as cut, the rest never held', async () => {
    const lines: string[] = [];
    const output = new OutputLines((line) => lines.push(line));
    const chunk = Buffer.alloc(64 * 1024, 'y');
    const { growthMiB } = await peakGrowth(async () => {
      for (let i = 0; i < 3200; i++) {
        output.write(chunk);
        if (i % 100 === 0) await new Promise((resolve) => setImmediate(resolve));
      }
      output.write('\nnext line\n');
      await output.end();
    });
    expect(lines.map((line) => line.length)).toEqual([MAX_LINE_CHARS, 9, 0]);
    expect(output.cut).toBe(1);
    expect(growthMiB).toBeLessThan(100);
  }, 60_000);
});
