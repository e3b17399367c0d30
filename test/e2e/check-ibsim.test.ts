// `infiniband-exporter check --collector.fabric` on a simulated fat tree (ibsim,
// test/fixtures/ibsim-topologies/fat-tree.net) with the real opensm and infiniband-diags, as a fabric health
// check on a host of the subnet: one subnet manager and no standby, an inter-switch link pulled
// after the SM routed the fabric, the spine-1/leaf-1 link at 1X against the config's 4X
// expectation. Exit 1, each problem named; the spare switch ports that never had a cable are not.
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runCheck } from '../../src/commands/check/command.js';
import { DIAG_TOOLS, FABRIC_TOOLS, startLab, type Lab } from '../../synthetic/ibsim-lab.js';
import { waitFor } from '../../synthetic/processes.js';
import { requireSystemTools } from '../support/system.js';
import { FIXTURES } from '../support/trees.js';
import { LEAF1, LEAF3, SPINE1, SPINE2 } from '../support/fabric-recordings.js';

const TOOLS = [...new Set([...FABRIC_TOOLS, ...DIAG_TOOLS])];
const tools = requireSystemTools('check --collector.fabric on ibsim', {
  ibsim: 'ibsim-utils',
  opensm: 'opensm',
  ...Object.fromEntries(TOOLS.map((tool) => [tool, 'infiniband-diags'])),
});

const teardown: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const step of teardown.splice(0).reverse()) await step();
});

/** How many heavy sweeps the SM has finished (opensm logs "SUBNET UP" after each). */
async function subnetUps(fabric: Lab, sm: string): Promise<number> {
  const log = await readFile(path.join(fabric.dir, sm, 'opensm.log'), 'utf8').catch(() => '');
  return log.split('SUBNET UP').length - 1;
}

async function check(argv: string[]): Promise<{ code: number; stdout: string }> {
  let stdout = '';
  const code = await runCheck(
    argv,
    { stdout: { write: (text: string) => (stdout += text), isTTY: false }, stderr: { write: (text: string) => (stdout += text) }, env: {} },
    { runners: { module: 'not-installed', ethtool: 'not-installed' } },
  );
  return { code, stdout };
}

describe.skipIf(tools.skipReason !== undefined)('check --collector.fabric on a simulated fat tree', () => {
  it('exits 1 naming the lone subnet manager, both ends of the pulled ISL and the degraded ISL; quiet about spare ports', async () => {
    const fabric = await startLab('fat-tree.net', teardown);
    await fabric.startSm('sm', 'H11', 0);
    await fabric.waitSmState('sm', 'MASTER');
    await fabric.waitActive('H22');
    const sweeps = await subnetUps(fabric, 'sm');
    // Pulled while the fabric carries traffic (the SM's own), as a cable is in real life; then the SM re-routes.
    await fabric.command('Unlink "L3"[5]');
    await waitFor('opensm to re-route after the pull', async () => (await subnetUps(fabric, 'sm')) > sweeps || undefined, 20_000);

    const sysfs = await fabric.snapshot('H22', path.join(fabric.dir, 'host'));
    const paths = await fabric.wrappers('H22', 'H22', TOOLS);
    const names = path.join(fabric.dir, 'node-name-map');
    await writeFile(names, `${SPINE1} "spine-1"\n${SPINE2} "spine-2"\n${LEAF1} "leaf-1"\n`);
    const argv = [
      '--path.sysfs',
      sysfs,
      '--config.file',
      path.join(FIXTURES, 'config/fabric.yml'),
      '--collector.diag',
      '--fabric.node-name-map',
      names,
      '--diag.timeout',
      '5s',
      // opensm and at most 4 + 2 tools stay within ibsim's 10 clients.
      '--fabric.max-concurrent',
      '4',
      '--diag.max-concurrent',
      '2',
      ...Object.entries(paths).flatMap(([tool, file]) => [`--${tool}.path`, file]),
    ];
    const { code, stdout } = await check(argv);
    expect(code).toBe(1);
    const lines = stdout.trimEnd().split('\n');
    // The findings' headings; "Not checked:" and its lines follow them (no cable tool is given here).
    const headings = lines
      .slice(0, lines.indexOf('Not checked:'))
      .filter((line) => /^\S/.test(line) && !/^(CRITICAL|WARNING|OK):/.test(line));
    expect(lines.slice(lines.indexOf('Not checked:'))).toContain(
      "  cables and optical modules, the switch ports' lane errors, module lane flags and FEC histograms (in-band mstlink): neither mstlink nor mlxlink is installed",
    );
    // This host (port 1 of H22, ACTIVE, its SM reachable) has nothing to report; the fabric follows, worst first.
    expect(headings).toEqual([
      'the fabric  5 switches, 9 CAs and 14 links',
      `MF0;leaf-3:SX6036/U1  switch ${LEAF3}, LID 6`,
      `spine-2  switch ${SPINE2}, LID 3, "MF0;spine-2:SX6036/U1"`,
      `spine-1  switch ${SPINE1}, LID 2, "MF0;spine-1:SX6036/U1"`,
      // The bad-links verdict's list: one ports cycle has no window to judge yet.
      'Links to drain and replace: none.',
    ]);
    expect(stdout).toMatch(
      / {2}WARNING {3}the subnet has one subnet manager, 0x0002c90300a10011 \(node11 HCA-1, LID 1, MASTER, priority 0\), and no standby: when it fails nothing takes over\n {12}→ run a second opensm on another host/,
    );
    // Both ends of the pulled ISL, each as in use: the discovery after the pull no longer sees the cable, the packets it passed still count.
    expect(stdout).toMatch(
      / {2}CRITICAL {2}port 5 of MF0;leaf-3:SX6036\/U1 has no link \(Polling\): cable pulled or broken, a transceiver failed, or the device at the other end is down \(it passed \d+ packets? since its counters were reset\)\n {12}→ reseat the cable at both ends/,
    );
    expect(stdout).toMatch(/ {2}CRITICAL {2}port 3 of spine-2 has no link \(Polling\)/);
    expect(stdout).toContain(
      "  WARNING   the link from port 1 of spine-1 to port 4 of leaf-1 runs at 1X QDR (10 Gb/s), expected 4X QDR (40 Gb/s: the config file's fabric.expectations): lanes are lost",
    );
    expect(stdout).toContain(
      '  INFO      the IPoIB broadcast group ff12:401b:ffff::ffff:ffff of P_Key 0xffff runs at 10 Gb/s with MTU 2048',
    );
    expect(lines.at(-1)).toMatch(
      /^CRITICAL: 2 critical, 2 warning, 1 info on 1 InfiniBand device, 1 port, 0 IPoIB interfaces and a fabric of 5 switches, 9 CAs and 14 links; first: port 5 of MF0;leaf-3/,
    );

    const json = JSON.parse((await check([...argv, '--format', 'json'])).stdout) as {
      exit_code: number;
      fabric: { subnet_managers: unknown[]; ports_read: number };
      collectors: { collector: string; success: boolean; errors: unknown[] }[];
      findings: { condition: string; severity: string; subject: { node_guid?: string; port?: number } }[];
    };
    expect(json.exit_code).toBe(1);
    expect(json.findings.map((f) => `${f.severity} ${f.condition} ${f.subject.node_guid ?? ''}/${f.subject.port ?? ''}`)).toEqual([
      `critical fabric-port-down ${LEAF3}/5`,
      `critical fabric-port-down ${SPINE2}/3`,
      'warning subnet-manager-not-redundant /',
      `warning fabric-link-degraded ${SPINE1}/1`,
      'info multicast-group-suboptimal /',
    ]);
    // 11 spare switch ports are down too (never cabled) and have no finding; every collector worked.
    expect(json.fabric.ports_read).toBe(32);
    expect(json.fabric.subnet_managers).toHaveLength(1);
    expect(json.collectors.filter((c) => !c.success || c.errors.length > 0)).toEqual([]);
  }, 90_000);
});
