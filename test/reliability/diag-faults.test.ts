// infiniband-diags tools that hang, leave children behind, print garbage or too much, run through
// the real runner (execa, process-group kill) inside the whole exporter. Every diag cycle ends, the
// scrape stays complete and sane, the failing collectors say so, and no process outlives its
// command.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Exporter } from '../../src/commands/serve/exporter.js';
import { PMA_COUNTERS } from '../../src/model/pma-counters.js';
import { exporterFromFlags } from '../support/exporter.js';
import { generateTree } from '../../synthetic/generate-tree.js';
import { waitFor } from '../../synthetic/processes.js';
import { alive, parseExposition, script } from './support.js';

let dir: string;
let root: string;
let pids: string;
let exporter: Exporter | undefined;

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'ibx-diagfaults-'));
  root = path.join(dir, 'sys');
  pids = path.join(dir, 'pids');
  await generateTree(root, 2, 1, { umad: true });
  // mlx5_0 has no PMA counters in sysfs, so perfquery is asked for them.
  await rm(path.join(root, 'class/infiniband/mlx5_0/ports/1/counters'), { recursive: true });
});
afterEach(async () => {
  await exporter?.stop();
  exporter = undefined;
  await rm(dir, { recursive: true, force: true });
});

async function recordedPids(): Promise<number[]> {
  const text = await readFile(pids, 'utf8').catch(() => '');
  return text.split('\n').filter(Boolean).map(Number);
}

// Each body runs as perfquery, sminfo and smpquery alike; `$P` is the file collecting PIDs.
const SCENARIOS: [string, string, { sminfo: number; smpquery: number; timeouts: boolean }][] = [
  ['hang with a child of their own', 'echo $$ >> "$P"; sleep 60 & echo $! >> "$P"; sleep 60', { sminfo: 0, smpquery: 0, timeouts: true }],
  [
    'answer and exit but leave a child holding their output open',
    'echo $$ >> "$P"; (sleep 60; echo late) & echo $! >> "$P"; echo "sminfo: sm lid 1 sm guid 0x2c90200400000, activity count 64 priority 10 state 3 SMINFO_MASTER"; exit 0',
    { sminfo: 1, smpquery: 0, timeouts: false },
  ],
  ['print binary garbage', 'echo $$ >> "$P"; head -c 65536 /dev/urandom; exit 0', { sminfo: 0, smpquery: 0, timeouts: false }],
  [
    'print more than the output limit, then hang',
    'echo $$ >> "$P"; head -c 3000000 /dev/zero | tr "\\0" x; sleep 60',
    { sminfo: 0, smpquery: 0, timeouts: false },
  ],
  [
    'print counters that are negative, NaN, too large or not decimal',
    [
      'echo $$ >> "$P"',
      'echo "# Port counters: Lid 4 port 1 (CapMask: 0x1200)"',
      'echo "SymbolErrorCounter:..............-5"',
      'echo "LinkDownedCounter:...............NaN"',
      'echo "PortRcvErrors:...................999999999999999999999999999"',
      'echo "PortXmitData:....................1e400"',
      'echo "PortXmitDiscards:................0x10"',
      'echo "LinkErrorRecoveryCounter:........7"',
    ].join('\n'),
    { sminfo: 0, smpquery: 0, timeouts: false },
  ],
];

describe('diag tools misbehaving', () => {
  it.each(SCENARIOS)('tools that %s', async (_name, body, expected) => {
    const tool = await script(dir, 'tool', `P=${pids}\n${body}`);
    exporter = exporterFromFlags([
      '--path.sysfs',
      root,
      '--perfquery.path',
      tool,
      '--sminfo.path',
      tool,
      '--smpquery.path',
      tool,
      '--diag.timeout',
      '400ms',
      '--diag.max-concurrent',
      '4',
      '--web.disable-exporter-metrics',
    ]);
    await exporter.collectOnce();
    for (const round of [1, 2]) {
      await exporter.collectDiagOnce();
      const response = await exporter.app.inject({ url: '/metrics' });
      expect(response.statusCode).toBe(200);
      const series = parseExposition(response.body);
      for (const [key, value] of series) {
        expect(Number.isFinite(value), key).toBe(true);
        if (key.includes('_total')) expect(value, key).toBeGreaterThanOrEqual(0);
      }
      expect(series.get('infiniband_exporter_collector_success{collector="sysfs"}')).toBe(1);
      expect(series.get('infiniband_port_state_id{device="mlx5_1",port="1"}')).toBe(4);
      expect(series.get('infiniband_exporter_collector_success{collector="sminfo"}'), 'sminfo').toBe(expected.sminfo);
      expect(series.get('infiniband_exporter_collector_success{collector="smpquery"}'), 'smpquery').toBe(expected.smpquery);
      const timeouts = series.get('infiniband_exporter_command_timeouts_total{command="sminfo"}')!;
      if (expected.timeouts) expect(timeouts).toBeGreaterThanOrEqual(round);
      else expect(timeouts).toBe(0);
      // Of the absurd counters, only the one that is a plain unsigned decimal of 8 bits survives.
      const pma = new Set(PMA_COUNTERS.map((counter) => `infiniband_port_${counter.name}_total{device="mlx5_0",port="1"}`));
      expect([...series.keys()].filter((key) => pma.has(key))).toEqual(
        body.includes('LinkErrorRecoveryCounter') ? ['infiniband_port_link_error_recoveries_total{device="mlx5_0",port="1"}'] : [],
      );
    }
    // Every tool and every child it started is gone once its command is over.
    const started = await recordedPids();
    expect(started.length).toBeGreaterThanOrEqual(2);
    await waitFor(
      'every tool process to end',
      async () => {
        const living = [];
        for (const pid of started) if (await alive(pid)) living.push(pid);
        return living.length === 0 ? true : undefined;
      },
      5000,
    );
  });
});
