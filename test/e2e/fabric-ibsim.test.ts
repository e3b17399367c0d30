// Fabric mode against the real opensm and infiniband-diags on a simulated fat tree (ibsim):
// test/fixtures/ibsim-topologies/fat-tree.net, two opensm instances of equal priority, the exporter on one
// host. Every check reads /metrics, as a user's Prometheus would.
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { parseServeCommandLine as parseCommandLine } from '../../src/commands/serve/command-line.js';
import { Exporter } from '../../src/commands/serve/exporter.js';
import { generateFabric, ibsimNet, leafGuid, spineGuid } from '../../synthetic/fabric-generator/index.js';
import { FABRIC_LAB_PACKAGES, startLab, type Lab } from '../../synthetic/ibsim-lab.js';
import { samplesOf as series, sampleValue as value, scrape } from '../support/exposition.js';
import { waitFor } from '../../synthetic/processes.js';
import { requireSystemTools } from '../support/system.js';
import { FIXTURES } from '../support/trees.js';
import { HOST12, LEAF1, LEAF2, LEAF3, SPINE1, SPINE2 } from '../support/fabric-recordings.js';
import { DISCOVERY_CYCLE, FABRIC_PORTS_CYCLE } from '../../src/collectors/fabric/fabric-mode.js';
import { FABRIC_PORTS } from '../../src/collectors/fabric/ports/index.js';
import { SA_CYCLE } from '../../src/collectors/fabric/sa.js';

const tools = requireSystemTools('fabric mode on ibsim', FABRIC_LAB_PACKAGES);

const teardown: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const step of teardown.splice(0).reverse()) await step();
});

const lab = (net: string): Promise<Lab> => startLab(net, teardown);

/** An exporter on `host` of the lab in fabric mode (no host collectors to speak of: sysfs is empty). */
async function fabricExporter(fabric: Lab, host: string, flags: string[] = []): Promise<Exporter> {
  const command = parseCommandLine([
    ...(await fabric.fabricExporterFlags(host)),
    '--config.file',
    path.join(FIXTURES, 'config/fabric.yml'),
    '--diag.timeout',
    '5s',
    // opensm x2 and at most 4 tools stay within ibsim's 10 clients.
    '--fabric.max-concurrent',
    '4',
    ...flags,
  ]);
  if (command.action !== 'run') throw new Error('unexpected');
  const exporter = new Exporter({ settings: command.settings, logger: pino({ level: 'silent' }), runners: { module: 'not-installed' } });
  teardown.push(() => exporter.stop());
  await exporter.collectOnce();
  return exporter;
}

/** A process that exists and is not a zombie (a killed orphan is reaped by init a moment later). */
function running(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

const port = (guid: string, number: number): string => `node_guid="${guid}",port="${number}"`;

describe.skipIf(tools.skipReason !== undefined)('fabric mode on a simulated fat tree', () => {
  it('sees the whole fabric from one host: nodes, the degraded ISL on both ends, pulled cables, counters, peers, both SMs, the IPoIB group; then an SM failover', async () => {
    const fabric = await lab('fat-tree.net');
    // Counters on switch ports, one at its maximum (16-bit SymbolErrorCounter).
    expect(await fabric.command('PerformanceSet "S1"[2] PortCounters.SymbolErrorCounter=65535')).toContain('has been set to 65535');
    await fabric.command('PerformanceSet "L2"[4] PortCounters.LinkDownedCounter=7');
    await fabric.command('PerformanceSet "L2"[4] PortCounters.PortRcvErrors=1234');
    // A host cable and an inter-switch cable pulled, before the SMs route the fabric: pulled later,
    // the master's reroute would drop a few PMA queries of the first cycle (counted as read errors).
    await fabric.command('Unlink "H12"[1]');
    await fabric.command('Unlink "L3"[5]');
    const fast = await fabric.fastFailoverConfig();
    const smNames = await fabric.startRedundantSms(
      'H22',
      { host: 'H11', priority: 5, extra: ['-F', fast] },
      { host: 'H33', priority: 5, extra: ['-F', fast] },
      () => fabric.waitActive('H22'),
    );

    const exporter = await fabricExporter(fabric, 'H22');
    await exporter.collectFabricOnce();
    const text = await scrape(exporter);

    // Node counts by type: host 12 is cut off.
    const nodes = series(text, 'infiniband_fabric_node_info');
    expect(nodes.filter((line) => line.includes('node_type="switch"'))).toHaveLength(5);
    expect(nodes.filter((line) => line.includes('node_type="ca"'))).toHaveLength(8);
    expect(text).not.toContain(`node_guid="${HOST12}"`);
    // ibsim answers no PortSamplesControl: the real perfquery -c ends in "iberror: failed:
    // sampctlquery", and each switch has its generation's documented tick, marked so.
    const ticks = series(text, 'infiniband_fabric_node_xmit_wait_tick_seconds');
    expect(ticks).toHaveLength(5);
    for (const line of ticks) expect(line).toMatch(/,source="default"\} \d/);
    expect(value(text, 'infiniband_fabric_duplicate_guids')).toBe(0);
    expect(value(text, 'infiniband_fabric_duplicate_lids')).toBe(0);

    // The 1X ISL against the config expectation (4X QDR), on both ends.
    for (const end of [port(SPINE1, 1), port(LEAF1, 4)]) {
      expect(value(text, `infiniband_fabric_port_link_width_lanes{${end}}`)).toBe(1);
      expect(value(text, `infiniband_fabric_port_link_degraded{${end},reason="width"}`)).toBe(1);
    }
    expect(series(text, 'infiniband_fabric_port_link_degraded').filter((line) => line.endsWith(' 1'))).toHaveLength(2);

    // The pulled cables: the ports stay, DOWN/Polling, without peer.
    for (const end of [port(LEAF1, 2), port(LEAF3, 5), port(SPINE2, 3)]) {
      expect(value(text, `infiniband_fabric_port_state_id{${end}}`)).toBe(1);
      expect(value(text, `infiniband_fabric_port_physical_state_id{${end}}`)).toBe(2);
      expect(text).not.toContain(`infiniband_fabric_link_info{${end},`);
    }
    expect(series(text, 'infiniband_fabric_port_state_id')).toHaveLength(32);

    // Counters as set; the saturated one flagged.
    expect(value(text, `infiniband_fabric_port_symbol_errors_total{${port(SPINE1, 2)}}`)).toBe(65535);
    expect(value(text, `infiniband_fabric_port_pma_saturated{${port(SPINE1, 2)},counter="symbol_errors"}`)).toBe(1);
    expect(value(text, `infiniband_fabric_port_link_downed_total{${port(LEAF2, 4)}}`)).toBe(7);
    expect(value(text, `infiniband_fabric_port_receive_errors_total{${port(LEAF2, 4)}}`)).toBe(1234);
    expect(value(text, `infiniband_fabric_port_symbol_errors_total{${port(LEAF2, 4)}}`)).toBe(0);
    expect(value(text, `infiniband_fabric_port_transmit_packets_total{${port(LEAF2, 4)}}`)).toBeGreaterThan(0);

    // Link peers, both ends of an ISL.
    expect(value(text, `infiniband_fabric_link_info{${port(SPINE2, 2)},peer_guid="${LEAF2}",peer_port="5",peer_type="switch"}`)).toBe(1);
    expect(value(text, `infiniband_fabric_link_info{${port(LEAF2, 5)},peer_guid="${SPINE2}",peer_port="2",peer_type="switch"}`)).toBe(1);

    // Both SMs with state and priority; the IPoIB broadcast group as opensm made it.
    const sms = series(text, 'infiniband_fabric_subnet_manager_info');
    expect(sms).toHaveLength(2);
    expect(sms.filter((line) => /state="MASTER",priority="5"\} 1$/.test(line))).toHaveLength(1);
    expect(sms.filter((line) => /state="STANDBY",priority="5"\} 1$/.test(line))).toHaveLength(1);
    const group = 'mgid="ff12:401b:ffff::ffff:ffff",pkey="0xffff"';
    expect(value(text, `infiniband_fabric_multicast_group_rate_bytes_per_second{${group}}`)).toBe(1.25e9);
    expect(value(text, `infiniband_fabric_multicast_group_mtu_bytes{${group}}`)).toBe(2048);
    for (const collector of ['fabric_discovery', 'fabric_ports', 'fabric_sa']) {
      expect(value(text, `infiniband_exporter_collector_success{collector="${collector}"}`)).toBe(1);
      expect(value(text, `infiniband_exporter_read_errors_total{collector="${collector}"}`)).toBe(0);
    }

    // The master dies: the standby takes over, and the SA cycle says so.
    const master = /sm_guid="(0x[0-9a-f]+)",sm_lid="\d+",state="MASTER"/.exec(sms.join('\n'))![1]!;
    const standby = /sm_guid="(0x[0-9a-f]+)",sm_lid="\d+",state="STANDBY"/.exec(sms.join('\n'))![1]!;
    await fabric.stopSm(master === '0x0002c90300a10011' ? smNames.master : smNames.standby);
    const after = await waitFor(
      'the standby to be reported as MASTER',
      async () => {
        await exporter.collectors.runCycle(SA_CYCLE);
        const current = await scrape(exporter);
        return current.includes(`sm_guid="${standby}"`) &&
          /state="MASTER"/.test(series(current, 'infiniband_fabric_subnet_manager_info').join()) &&
          !current.includes(`sm_guid="${master}"`)
          ? current
          : undefined;
      },
      30_000,
      500,
    );
    expect(series(after, 'infiniband_fabric_subnet_manager_info')).toEqual([expect.stringContaining(`sm_guid="${standby}"`)]);
    expect(series(after, 'infiniband_fabric_subnet_manager_info')[0]).toMatch(/state="MASTER",priority="5"\} 1$/);
  }, 90_000);

  it('a tool that hangs is killed with its whole process group, one that prints garbage is counted, a discovery that fails keeps the topology', async () => {
    const fabric = await lab('fat-tree.net');
    await fabric.startSm('sm', 'H11', 0);
    await fabric.waitActive('H22');
    const exporter = await fabricExporter(fabric, 'H22', ['--diag.timeout', '1500ms']);
    await exporter.collectFabricOnce();
    expect(series(await scrape(exporter), 'infiniband_fabric_node_info')).toHaveLength(14);

    await fabric.fault('H22', 'iblinkinfo', 'hang');
    await fabric.fault('H22', 'saquery', 'garbage');
    await fabric.fault('H22', 'ibnetdiscover', 'fail');
    await exporter.collectors.runCycle(DISCOVERY_CYCLE);
    await Promise.all([exporter.collectors.runCycle(FABRIC_PORTS_CYCLE), exporter.collectors.runCycle(SA_CYCLE)]);
    const text = await scrape(exporter);
    // The hung scan was killed at the time limit, and the child it started went with it.
    expect(value(text, 'infiniband_exporter_command_timeouts_total{command="iblinkinfo"}')).toBe(1);
    const sleeper = await fabric.sleeper('H22', 'iblinkinfo');
    expect(sleeper).toBeGreaterThan(0);
    await waitFor(`the hung tool's child ${sleeper} to be gone`, () => (running(sleeper!) ? undefined : true), 2000);
    expect(value(text, 'infiniband_exporter_collector_success{collector="fabric_ports"}')).toBe(0);
    // … the counters were still read.
    expect(series(text, 'infiniband_fabric_port_transmit_data_bytes_total')).toHaveLength(32);
    expect(series(text, 'infiniband_fabric_port_state_id')).toEqual([]);
    // Garbage from saquery: its lines counted as read errors, no SM record invented, no success.
    expect(value(text, 'infiniband_exporter_read_errors_total{collector="fabric_sa"}')).toBeGreaterThanOrEqual(2);
    expect(series(text, 'infiniband_fabric_subnet_manager_info')).toEqual([]);
    expect(value(text, 'infiniband_exporter_collector_success{collector="fabric_sa"}')).toBe(0);
    // Discovery failed: the last topology is still served.
    expect(value(text, 'infiniband_exporter_collector_success{collector="fabric_discovery"}')).toBe(0);
    expect(series(text, 'infiniband_fabric_node_info')).toHaveLength(14);

    for (const tool of ['iblinkinfo', 'saquery', 'ibnetdiscover']) await fabric.fault('H22', tool, undefined);
    await exporter.collectors.runCycle(DISCOVERY_CYCLE);
    await Promise.all([exporter.collectors.runCycle(FABRIC_PORTS_CYCLE), exporter.collectors.runCycle(SA_CYCLE)]);
    const healed = await scrape(exporter);
    for (const collector of ['fabric_discovery', 'fabric_ports', 'fabric_sa']) {
      expect(value(healed, `infiniband_exporter_collector_success{collector="${collector}"}`)).toBe(1);
    }
    expect(series(healed, 'infiniband_fabric_port_state_id')).toHaveLength(32);
  }, 60_000);

  it('tools that exit 0 with their output cut short or garbled: no collector reports success, nothing that was there vanishes', async () => {
    const fabric = await lab('fat-tree.net');
    await fabric.startSm('sm', 'H11', 0);
    await fabric.waitActive('H22');
    const exporter = await fabricExporter(fabric, 'H22');
    await exporter.collectFabricOnce();
    const healthy = await scrape(exporter);
    const collectors = ['fabric_discovery', 'fabric_ports', 'fabric_sa'];
    for (const collector of collectors) expect(value(healthy, `infiniband_exporter_collector_success{collector="${collector}"}`)).toBe(1);
    expect(series(healthy, 'infiniband_fabric_node_info')).toHaveLength(14);
    expect(series(healthy, 'infiniband_fabric_subnet_manager_info')).toHaveLength(1);
    // Every switch port is in each cycle's readings, read or not (its state then unknown: absent).
    const portsRead = (): string[] => [...FABRIC_PORTS.of(exporter.collectors.snapshot!)!.ports.keys()];
    const switchPorts = portsRead();
    expect(switchPorts).toHaveLength(32);

    for (const fault of ['truncate', 'garble'] as const) {
      for (const tool of ['ibnetdiscover', 'iblinkinfo', 'ibqueryerrors', 'saquery', 'sminfo']) await fabric.fault('H22', tool, fault);
      await exporter.collectors.runCycle(DISCOVERY_CYCLE);
      await Promise.all([exporter.collectors.runCycle(FABRIC_PORTS_CYCLE), exporter.collectors.runCycle(SA_CYCLE)]);
      const text = await scrape(exporter);
      for (const collector of collectors) {
        expect(value(text, `infiniband_exporter_collector_success{collector="${collector}"}`), `${fault}: ${collector}`).toBe(0);
        expect(value(text, `infiniband_exporter_read_errors_total{collector="${collector}"}`), `${fault}: ${collector}`).toBeGreaterThan(0);
      }
      // The last good topology stays; no switch port vanished, though not every state was read.
      expect(series(text, 'infiniband_fabric_node_info'), fault).toHaveLength(14);
      expect(portsRead().sort(), fault).toEqual([...switchPorts].sort());
      expect(series(text, 'infiniband_fabric_port_state_id').length, fault).toBeLessThan(32);
    }

    for (const tool of ['ibnetdiscover', 'iblinkinfo', 'ibqueryerrors', 'saquery', 'sminfo']) await fabric.fault('H22', tool, undefined);
    await exporter.collectors.runCycle(DISCOVERY_CYCLE);
    await Promise.all([exporter.collectors.runCycle(FABRIC_PORTS_CYCLE), exporter.collectors.runCycle(SA_CYCLE)]);
    const healed = await scrape(exporter);
    for (const collector of collectors) expect(value(healed, `infiniband_exporter_collector_success{collector="${collector}"}`)).toBe(1);
    expect(series(healed, 'infiniband_fabric_port_state_id')).toHaveLength(32);
    expect(series(healed, 'infiniband_fabric_subnet_manager_info')).toHaveLength(1);
  }, 60_000);

  it('where ibqueryerrors cannot reach the fabric, the counters come from perfquery switch by switch', async () => {
    const fabric = await lab('fat-tree.net');
    await fabric.command('PerformanceSet "S2"[3] PortCounters.PortRcvRemotePhysicalErrors=42');
    await fabric.startSm('sm', 'H11', 0);
    await fabric.waitActive('H22');
    // The real ibqueryerrors, not attached to the simulator: it cannot open a port and exits at once.
    const exporter = await fabricExporter(fabric, 'H22', ['--ibqueryerrors.path', tools.paths.ibqueryerrors!]);
    await exporter.collectFabricOnce();
    const text = await scrape(exporter);
    expect(value(text, 'infiniband_exporter_collector_success{collector="fabric_ports"}')).toBe(1);
    expect(value(text, `infiniband_fabric_port_receive_remote_physical_errors_total{${port(SPINE2, 3)}}`)).toBe(42);
    // The port's other error counters with it; healthy ports serve none.
    expect(value(text, `infiniband_fabric_port_symbol_errors_total{${port(SPINE2, 3)}}`)).toBe(0);
    expect(series(text, 'infiniband_fabric_port_transmit_data_bytes_total')).toHaveLength(32);
    expect(series(text, 'infiniband_fabric_port_multicast_transmit_packets_total')).toHaveLength(32);
  }, 60_000);

  it('discovers a generated fat tree whole, in two shards that split its switches', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'ibx-fat-tree-'));
    teardown.push(() => rm(dir, { recursive: true, force: true }));
    const net = path.join(dir, 'generated.net');
    await writeFile(
      net,
      ibsimNet(generateFabric({ shape: { tiers: 2, spines: 3, leaves: 4, hostsPerLeaf: 4, spareLeafPorts: 2 } }), { counters: false }),
    );
    const fabric = await lab(net);
    await fabric.startSm('sm', 'H1_1', 0);
    await fabric.waitActive('H4_4');
    const texts: string[] = [];
    for (const shard of ['1/2', '2/2']) {
      const exporter = await fabricExporter(fabric, 'H2_1', ['--fabric.shard', shard]);
      await exporter.collectFabricOnce();
      texts.push(await scrape(exporter));
    }
    const all = texts.flatMap((text) => series(text, 'infiniband_fabric_node_info'));
    expect(all.filter((line) => line.includes('node_type="switch"'))).toHaveLength(7);
    expect(all.filter((line) => line.includes('node_type="ca"'))).toHaveLength(16);
    // Every switch port once: spines 4 ports, leaves 4 hosts + 3 uplinks + 2 spare.
    const ports = texts.flatMap((text) => series(text, 'infiniband_fabric_port_state_id'));
    expect(ports).toHaveLength(3 * 4 + 4 * 9);
    expect(new Set(ports).size).toBe(ports.length);
    expect(
      texts
        .flatMap((text) => series(text, 'infiniband_fabric_link_info'))
        .filter((line) => line.includes(`node_guid="${spineGuid(3)}",port="4"`)),
    ).toEqual([
      `infiniband_fabric_link_info{node_guid="${spineGuid(3)}",port="4",peer_guid="${leafGuid(4)}",peer_port="7",peer_type="switch"} 1`,
    ]);
    for (const text of texts) expect(value(text, 'infiniband_exporter_collector_success{collector="fabric_ports"}')).toBe(1);
  }, 60_000);
});
