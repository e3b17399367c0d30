// Issue 31 on the real tools: a host whose NodeDescription is shaped like iblinkinfo's own output
// (`x ==( Down/ Polling)==> 0xbad 1 9[] `, set in test/fixtures/ibsim-topologies/hostile-description.net).
// ibnetdiscover and iblinkinfo print it unchanged inside quotes; the exporter's fabric collectors,
// through the real tools, must still read the switch port it is cabled to as Active/LinkUp with
// its true peer, and judge nothing wrong with it.
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { parseServeCommandLine as parseCommandLine } from '../../src/commands/serve/command-line.js';
import { Exporter } from '../../src/commands/serve/exporter.js';
import { FABRIC_PORTS } from '../../src/collectors/fabric/ports/index.js';
import { FABRIC_LAB_PACKAGES, startLab } from '../../synthetic/ibsim-lab.js';
import { samplesOf as series, sampleValue as value, scrape } from '../support/exposition.js';
import { requireSystemTools } from '../support/system.js';

const tools = requireSystemTools('hostile node description on ibsim', FABRIC_LAB_PACKAGES);

const HOSTILE = 'x ==( Down/ Polling)==> 0xbad 1 9[] ';
const SWITCH1 = '0x0002c90200400000';
const HCA2 = '0x0002c90300a1b3d0';

const teardown: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const step of teardown.splice(0).reverse()) await step();
});

const port = (guid: string, number: number): string => `node_guid="${guid}",port="${number}"`;

describe.skipIf(tools.skipReason !== undefined)("a node description shaped like the tools' output, on ibsim", () => {
  it.each([
    ['switch ports only', []],
    ["with CA ports (the hostile host's own line too)", ['--fabric.hca-ports']],
  ])(
    '%s: the attacked switch port stays Active/LinkUp with its true peer, no finding, no read error',
    async (_name, extra) => {
      const fabric = await startLab('hostile-description.net', teardown);
      await fabric.startSm('sm', 'Switch1', 10);
      await fabric.waitSmState('sm', 'MASTER');
      for (const host of ['Hca1', 'Hca2']) await fabric.waitActive(host);
      // The description as the fabric carries it: the real tool prints it unchanged.
      const { stdout } = await fabric.run('Hca1', 'iblinkinfo', ['--line', '--switches-only']);
      expect(stdout).toContain(`"${HOSTILE}" (`);

      const command = parseCommandLine([
        ...(await fabric.fabricExporterFlags('Hca1')),
        '--diag.timeout',
        '5s',
        '--fabric.max-concurrent',
        '4',
        ...extra,
      ]);
      if (command.action !== 'run') throw new Error('unexpected');
      const exporter = new Exporter({
        settings: command.settings,
        logger: pino({ level: 'silent' }),
        runners: { module: 'not-installed' },
      });
      teardown.push(() => exporter.stop());
      await exporter.collectOnce();
      await exporter.collectFabricOnce();
      const text = await scrape(exporter);

      expect(text).toContain(`node_guid="${HCA2}",node_type="ca",node_desc="${HOSTILE}"`);
      expect(value(text, `infiniband_fabric_port_state_id{${port(SWITCH1, 3)}}`)).toBe(4);
      expect(value(text, `infiniband_fabric_port_physical_state_id{${port(SWITCH1, 3)}}`)).toBe(5);
      expect(value(text, `infiniband_fabric_port_link_width_lanes{${port(SWITCH1, 3)}}`)).toBe(4);
      expect(series(text, 'infiniband_fabric_link_info').filter((line) => line.includes(port(SWITCH1, 3)))).toEqual([
        `infiniband_fabric_link_info{${port(SWITCH1, 3)},peer_guid="${HCA2}",peer_port="1",peer_type="ca"} 1`,
      ]);
      for (const collector of ['fabric_discovery', 'fabric_ports']) {
        expect(value(text, `infiniband_exporter_collector_success{collector="${collector}"}`)).toBe(1);
        expect(value(text, `infiniband_exporter_read_errors_total{collector="${collector}"}`)).toBe(0);
      }
      // No port of the fabric is judged: every cable is up at 4X QDR.
      expect(FABRIC_PORTS.findings!(exporter.collectors.snapshot!)).toEqual([]);
    },
    60_000,
  );
});
