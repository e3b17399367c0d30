// Contradictory output is an error, not success (issue 31): the scan or a sweep listing the same
// port twice, a port number beyond the node's port count, a node discovery never saw. Each is a
// read error that makes the ports cycle partial; of a port listed twice the first reading stands.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fabricPortKey } from '../../src/model/fabric.js';
import { FabricCycle } from '../../src/sources/fabric/commands.js';
import { parseDiscoveryCache } from '../../src/sources/fabric/discovery-cache.js';
import { buildTopology } from '../../src/sources/fabric/discovery.js';
import { parseIbnetdiscover } from '../../src/sources/fabric/ibnetdiscover.js';
import { parsePerfqueryLoop } from '../../src/sources/fabric/perfquery-counters.js';
import { readFabricPorts } from '../../src/sources/fabric/ports.js';
import { LEAF1, LEAF3, recordedCache, stdout, switchPortsRunner, type SwitchPortsOutputs } from '../support/fabric-recordings.js';
import { recording } from '../support/replay.js';

const topology = buildTopology(parseIbnetdiscover(stdout('healthy', 'ibnetdiscover')), parseDiscoveryCache(recordedCache()), new Map(), 0);
const healthy = {
  scan: stdout('healthy', 'iblinkinfo-switches'),
  errors: stdout('healthy', 'errors-switches'),
  counters: stdout('healthy', 'counters-switches'),
};

let scratch: string;
beforeEach(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), 'contradictions-'));
});
afterEach(async () => {
  await rm(scratch, { recursive: true, force: true });
});

/** One ports cycle on the healthy recordings with the outputs `changed` gives instead. */
async function portsCycle(changed: Partial<SwitchPortsOutputs>) {
  const runner = switchPortsRunner(changed);
  const cycle = new FabricCycle({ runner, timeoutMs: 10_000 });
  const reading = await readFabricPorts(cycle, {
    counterSource: 'sweep',
    unreachable: new Set(),
    topology,
    cache: undefined,
    covers: () => true,
    hcaPorts: false,
    scratch,
  });
  return { reading, report: cycle.report() };
}

const LEAF3_PORT_1 = stdout('healthy', 'iblinkinfo-switches').split('\n')[0]!;

describe('the scan (iblinkinfo)', () => {
  it('the recorded scan and sweeps contradict nothing', async () => {
    const { report } = await portsCycle({});
    expect(report.errors).toEqual([]);
    expect(report.failed).toBe(false);
  });

  it('a port listed twice: the first reading stands, the second is a read error', async () => {
    // The same port again, down and without its cable, with the tool's widths.
    const down = `${LEAF3_PORT_1.slice(0, LEAF3_PORT_1.indexOf('==('))}==(                Down/ Polling)==>             [  ] "" ( )`;
    const { reading, report } = await portsCycle({ scan: `${healthy.scan}${down}\n` });
    expect(reading.ports.get(fabricPortKey(LEAF3, 1))).toMatchObject({
      state: { id: 4, name: 'ACTIVE' },
      peer: { nodeGuid: '0x0002c90300a30010', port: 1 },
    });
    expect(report.failed).toBe(true);
    expect(report.errors).toEqual([
      {
        item: 'iblinkinfo --line --switches-only',
        message: `the output contradicts itself or the topology once: the same port printed more than once (first: ${LEAF3}/1); the first reading stands`,
      },
    ]);
  });

  it('port 999 of an 8-port switch is a read error, and no port of it', async () => {
    const beyond = LEAF3_PORT_1.replace('      6    1[  ]', '      6  999[  ]');
    const { reading, report } = await portsCycle({ scan: `${healthy.scan}${beyond}\n` });
    expect(reading.ports.has(fabricPortKey(LEAF3, 999))).toBe(false);
    expect(report.failed).toBe(true);
    expect(report.errors.map((error) => error.message)).toEqual([
      `the output contradicts itself or the topology once: a port number beyond the node's port count (first: port 999 of ${LEAF3}, a node of 8 ports); not believed`,
    ]);
  });

  it('a switch discovery never saw is a read error (and asks for a new discovery)', async () => {
    const stranger = LEAF3_PORT_1.replace('0x0002c90200530000', '0x0002c902005f0000');
    const { reading, report } = await portsCycle({
      scan: `${healthy.scan}${stranger}\n${stranger.replace('    1[  ] ==(', '    2[  ] ==(')}\n`,
    });
    expect(reading.stale).toBe(true);
    expect(report.failed).toBe(true);
    // One error per node, not per line.
    expect(report.errors.map((error) => error.message)).toEqual([
      'the output contradicts itself or the topology once: a node discovery never saw (first: 0x0002c902005f0000); not believed until a new discovery',
    ]);
  });
});

describe('the counter sweeps (ibqueryerrors)', () => {
  const counterLine = (port: number) =>
    healthy.counters.split('\n').find((line) => line.startsWith(`   GUID 0x2c90200510000 port ${port}:`))!;

  it('a port listed twice: the first reading stands, the second is a read error', async () => {
    const second = counterLine(1).replace(/\[PortXmitData == \d+/, '[PortXmitData == 999999999');
    const { reading, report } = await portsCycle({ counters: healthy.counters.replace(counterLine(2), `${counterLine(2)}\n${second}`) });
    const sent = reading.ports.get(fabricPortKey(LEAF1, 1))!.counters.get('transmit_data_bytes');
    expect(sent).toBe(33984 * 4);
    expect(report.failed).toBe(true);
    expect(report.errors).toEqual([
      {
        item: 'ibqueryerrors --skip-sl --counters --switch',
        message: `the output contradicts itself or the topology once: the same port printed more than once (first: ${LEAF1}/1); the first reading stands`,
      },
    ]);
  });

  it('a port beyond the port count and a node discovery never saw: one read error each', async () => {
    const beyond = counterLine(1).replace('port 1:', 'port 999:');
    const stranger = counterLine(1).replace('0x2c90200510000', '0x2c902005f0000');
    const { report } = await portsCycle({
      errors: healthy.errors.replace(
        '## Summary',
        `Errors for 0x2c902005f0000 "x"\n${stranger.replace(/\[.*/, '[SymbolErrorCounter == 1]')}\n\n## Summary`,
      ),
      counters: healthy.counters.replace(counterLine(2), `${counterLine(2)}\n${beyond}`),
    });
    expect(report.failed).toBe(true);
    expect(report.errors).toEqual([
      {
        item: 'ibqueryerrors --skip-sl --threshold-file /dev/null --switch',
        message:
          'the output contradicts itself or the topology once: a node discovery never saw (first: 0x0002c902005f0000); not believed until a new discovery',
      },
      {
        item: 'ibqueryerrors --skip-sl --counters --switch',
        message: `the output contradicts itself or the topology once: a port number beyond the node's port count (first: port 999 of ${LEAF1}, a node of 8 ports); not believed`,
      },
    ]);
  });
});

describe('counters switch by switch (perfquery -l)', () => {
  it('a port block printed twice: the first stands, the second is not understood', () => {
    const text = recording('fabric', 'per-switch', 'spine-1-basic').stdout;
    const block = `# Port counters: Lid 2 port 3${text.split('# Port counters: Lid 2 port 3')[1]!.split('# Port counters:')[0]!}`;
    const changed = block.replace(/^(PortXmitData:\.*)\d+$/m, '$1777');
    expect(changed).not.toBe(block);
    const { readings, unparsed } = parsePerfqueryLoop(`${text}${changed}`);
    expect(readings.get(3)!.values.get('PortXmitData')).toBe(parsePerfqueryLoop(text).readings.get(3)!.values.get('PortXmitData'));
    expect(unparsed.examples).toEqual(['# Port 3: printed more than once']);
  });
});
