// fabric_module: in-band mstlink readings of switch ports in rounds, rising errors first, with the
// real captures of test/fixtures/module/ answered for `-d lid-<LID> -p <port> -m -c --json`.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { CollectorContext } from '../../../src/collection/collector.js';
import { FABRIC_MODULE, roundTargets, type FabricModulePart } from '../../../src/collectors/fabric/fabric-module.js';
import { ExpositionBuffer } from '../../../src/exposition/buffer.js';
import { FABRIC_DISCOVERY_PART, FABRIC_PORTS_PART } from '../../../src/collectors/parts.js';
import { fabricPortKey } from '../../../src/model/fabric.js';
import type { Snapshot } from '../../../src/model/snapshot.js';
import type { CommandResult, CommandRunner } from '../../../src/sources/command-runner.js';
import type { ModuleTool } from '../../../src/sources/module/module-tools.js';
import { settingsFromFlags } from '../../support/exporter.js';
import { FIXTURES } from '../../support/trees.js';

const capture = (name: string) => readFileSync(path.join(FIXTURES, 'module', name), 'utf8');
const NDR = capture('mlxlink-4.35-cx7-ndr-osfp-passive-copper.txt');
const BF3 = capture('mlxlink-4.30-bluefield3-100g-qsfp28-passive-copper.txt');
const NO_DEVICE = capture('mstlink-4.21-no-device.stderr');
const HELP = capture('mstlink-4.21-help.txt');
const HISTOGRAM = capture('mlxlink-4.34.1-cx7-400g-dr4-fec-histogram.json');
const BER_HIGH = capture('derived-mlxlink-4.34.1-effective-ber-high.json');

describe('a round', () => {
  it('takes the ports with rising errors first, then the others in turn from where the last round stopped', () => {
    const all = ['a', 'b', 'c', 'd', 'e'];
    expect(roundTargets(all, new Set(['d']), 0, 3)).toEqual({ keys: ['d', 'a', 'b'], cursor: 2 });
    expect(roundTargets(all, new Set(['d']), 2, 3)).toEqual({ keys: ['d', 'c', 'e'], cursor: 0 });
    // A round never reads a port twice, whatever its size.
    expect(roundTargets(all, new Set(), 3, 10)).toEqual({ keys: ['d', 'e', 'a', 'b', 'c'], cursor: 3 });
  });
});

const SWITCH = '0x0002c90200000001';
const PORTS = [1, 2, 3];

function snapshot(rising: string[] = []): Snapshot {
  const nodes = new Map([
    [
      SWITCH,
      {
        guid: SWITCH,
        type: 'switch',
        description: 'leaf1',
        name: undefined,
        lid: 12,
        portCount: 40,
        vendorId: undefined,
        deviceId: undefined,
      },
    ],
  ]);
  const ports = new Map(PORTS.map((port) => [fabricPortKey(SWITCH, port), { nodeGuid: SWITCH, port }]));
  const parts = new Map<string, unknown>([
    [FABRIC_DISCOVERY_PART.name, { topology: { nodes, ports: new Map(), duplicateGuids: 0, duplicateLids: 0, discoveredAt: 0 } }],
    [FABRIC_PORTS_PART.name, { ports, expectations: new Map(), trend: { risingErrors: new Set(rising), berOverThreshold: new Set() } }],
  ]);
  return { devices: [], parts, reports: [], totals: {} } as unknown as Snapshot;
}

/** A fake mstlink: port 1 the ConnectX-7 capture (lane flags raised), port 2 the BlueField-3's (lane errors), port 3 no answer. */
function fakeTool(answer: (args: readonly string[]) => { stdout: string; stderr?: string; exitCode: number }) {
  const calls: string[] = [];
  const runner: CommandRunner<ModuleTool> = {
    async run(command, args): Promise<CommandResult<ModuleTool>> {
      calls.push(args.join(' '));
      const { stdout, stderr = '', exitCode } = answer(args);
      return { command, args, outcome: 'exited', exitCode, stdout, stderr, durationMs: 1 };
    },
  };
  return { runner, calls };
}

function context(runner: CommandRunner<ModuleTool>, flags: string[] = []): CollectorContext {
  const settings = settingsFromFlags([
    '--collector.fabric',
    '--fabric.module-interval',
    '10s',
    '--diag.timeout',
    '5s',
    '--fabric.max-concurrent',
    '1',
    ...flags,
  ]);
  return {
    settings,
    logger: pino({ level: 'silent' }),
    mode: 'serve',
    now: Date.now,
    runner: (() => runner) as CollectorContext['runner'],
    shared: (_key, make) => make(),
    countCommands: () => undefined,
    runSoon: () => false,
    fatal: () => undefined,
  };
}

describe('the fabric_module collector', () => {
  it('reads switch ports in-band by LID in rounds, rising errors first, and keeps each reading', async () => {
    const tool = fakeTool((args) =>
      args[3] === '1'
        ? { stdout: NDR, exitCode: 0 }
        : args[3] === '2'
          ? { stdout: BF3, exitCode: 0 }
          : { stdout: '', stderr: NO_DEVICE, exitCode: 1 },
    );
    const reader = await FABRIC_MODULE.setUp(context(tool.runner));
    if ('off' in reader) throw new Error(reader.off);
    // 10s rounds of 5s commands, one at a time: one port a round. This tool fails its --help: no histogram asked for.
    const first = await reader.read(snapshot([fabricPortKey(SWITCH, 2)]), new AbortController().signal);
    expect(tool.calls).toEqual(['--help', '-d lid-12 -p 2 -m -c --json']);
    const second = await reader.read(snapshot(), new AbortController().signal);
    expect(tool.calls.at(-1)).toBe('-d lid-12 -p 1 -m -c --json');
    expect((first.part as FabricModulePart).ports.get(fabricPortKey(SWITCH, 2))?.laneErrors).toEqual([0, 0, 0, 0]);
    const part = second.part as FabricModulePart;
    expect(part.ports.get(fabricPortKey(SWITCH, 1))?.laneFaults.rx_los).toEqual([true, false, true, true]);
    const snap = snapshot();
    (snap.parts as Map<string, unknown>).set(FABRIC_MODULE.name, part);
    const out = new ExpositionBuffer();
    FABRIC_MODULE.metrics!.write(snap, out, settingsFromFlags([]));
    const text = out.finish().toString('utf8');
    expect(text).toContain(`infiniband_fabric_port_phy_lane_errors_total{node_guid="${SWITCH}",port="2",lane="1"} 0`);
    expect(text).toContain(`infiniband_fabric_port_module_lane_fault{node_guid="${SWITCH}",port="1",lane="1",kind="rx_los"} 1`);
    // A clear flag is not served (only raised ones are, at fabric scale).
    expect(text).not.toContain(`infiniband_fabric_port_module_lane_fault{node_guid="${SWITCH}",port="1",lane="2",kind="rx_los"}`);
  });

  it('turns itself off, once, when a round reaches no switch', async () => {
    const tool = fakeTool(() => ({ stdout: '', stderr: NO_DEVICE, exitCode: 1 }));
    const reader = await FABRIC_MODULE.setUp(context(tool.runner));
    if ('off' in reader) throw new Error(reader.off);
    const reading = await reader.read(snapshot(), new AbortController().signal);
    expect(reading.failure).toMatch(/reached no switch in-band/);
    await reader.read(snapshot(), new AbortController().signal);
    expect(tool.calls.filter((call) => call.startsWith('-d '))).toHaveLength(1);
  });

  it("reads the FEC histogram in the same run where the tool's --help lists it, and keeps the module's temperature and effective BER for the verdict", async () => {
    const tool = fakeTool((args) =>
      args[0] === '--help'
        ? { stdout: HELP, exitCode: 0 }
        : args[3] === '1'
          ? { stdout: HISTOGRAM, exitCode: 0 }
          : args[3] === '2'
            ? { stdout: BER_HIGH, exitCode: 0 }
            : { stdout: '', stderr: NO_DEVICE, exitCode: 1 },
    );
    const reader = await FABRIC_MODULE.setUp(context(tool.runner, ['--fabric.module-interval', '30s']));
    if ('off' in reader) throw new Error(reader.off);
    const reading = await reader.read(snapshot(), new AbortController().signal);
    expect(tool.calls).toEqual([
      '--help',
      '-d lid-12 -p 1 -m -c --rx_fec_histogram --show_histogram --json',
      '-d lid-12 -p 2 -m -c --rx_fec_histogram --show_histogram --json',
      '-d lid-12 -p 3 -m -c --rx_fec_histogram --show_histogram --json',
    ]);
    const part = reading.part as FabricModulePart;
    const one = part.ports.get(fabricPortKey(SWITCH, 1))!;
    expect(one.fecHistogram).toEqual([22858119037881, 65755507, 7970, 177, 64, 2, 1, 1, 3, 0, 0, 0, 0, 0, 0, 0]);
    expect(one.temperature).toEqual({ celsius: 62, alarmCelsius: 80 });
    expect(one.effectiveBer).toBe(1.5e-254);
    expect(part.ports.get(fabricPortKey(SWITCH, 2))?.effectiveBer).toBe(3e-11);
    await reader.read(snapshot(), new AbortController().signal);
    expect(tool.calls.filter((call) => call === '--help')).toHaveLength(1);
    const snap = snapshot();
    (snap.parts as Map<string, unknown>).set(FABRIC_MODULE.name, part);
    const out = new ExpositionBuffer();
    FABRIC_MODULE.metrics!.write(snap, out, settingsFromFlags([]));
    const text = out.finish().toString('utf8');
    expect(text).toContain('# TYPE infiniband_fabric_port_fec_histogram_blocks_total counter');
    expect(text).toContain(`infiniband_fabric_port_fec_histogram_blocks_total{node_guid="${SWITCH}",port="1",bin="1"} 65755507`);
    expect(text).toContain(`infiniband_fabric_port_fec_histogram_blocks_total{node_guid="${SWITCH}",port="1",bin="8"} 3`);
    // The bins that counted nothing are not served: 9 series for this port, not 16.
    expect(text).not.toContain(`node_guid="${SWITCH}",port="1",bin="9"}`);
    expect(
      text
        .split('\n')
        .filter((line) => line.startsWith(`infiniband_fabric_port_fec_histogram_blocks_total{node_guid="${SWITCH}",port="1",`)),
    ).toHaveLength(9);
  });
});
