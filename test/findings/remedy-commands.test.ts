// Every command a finding tells a person to run works as pasted (DESIGN "The first hour"): the
// host demo's commands name their device and port and the real tools accept their flags (on a
// machine without the adapters they fail opening the port, not parsing the command line); the
// fabric demo's commands run with success on the simulated fabric the demo was recorded on.
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import { runCheck } from '../../src/commands/check/command.js';
import { startLab, type Lab } from '../../synthetic/ibsim-lab.js';
import { requireSystemTools } from '../support/system.js';

/** The infiniband-diags tools a finding may name; the host ones address a port of this host. */
const DIAG = ['perfquery', 'ibportstate', 'iblinkinfo', 'smpquery', 'sminfo', 'ibnetdiscover'] as const;
const ADDRESSES_A_LOCAL_PORT = new Set(['perfquery', 'ibportstate', 'smpquery', 'sminfo']);

const tools = requireSystemTools('remedy commands against the real tools', {
  ibsim: 'ibsim-utils',
  opensm: 'opensm',
  ...Object.fromEntries(DIAG.map((tool) => [tool, 'infiniband-diags'])),
});

/** A token that belongs to a command line (an option, a number, a GUID, a device, an operation). */
const ARGUMENT = /^(-[A-Za-z]|--[a-z][\w-]*|0x[0-9a-f]+|\d+|mlx\d+_\d+|reset|enable|disable|query|portinfo|nodedesc)$/;

/** The commands of infiniband-diags in a text: the tool and the arguments that follow it. */
function diagCommands(text: string): string[][] {
  const commands: string[][] = [];
  const words = text.split(/[\s;,()]+/);
  for (let i = 0; i < words.length; i++) {
    if (!(DIAG as readonly string[]).includes(words[i]!)) continue;
    const command = [words[i]!];
    while (i + 1 < words.length && ARGUMENT.test(words[i + 1]!)) command.push(words[++i]!);
    commands.push(command);
  }
  return commands;
}

async function findingTexts(argv: string[]): Promise<string[]> {
  let stdout = '';
  await runCheck([...argv, '--format', 'json'], {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: () => true },
    env: {},
  });
  const report = JSON.parse(stdout) as { findings: { remedy: string; meaning: string }[] };
  return report.findings.flatMap((finding) => [finding.remedy, finding.meaning]);
}

/** A usage error of infiniband-diags: exit 2 (getopt) or its usage text. */
function usageError(result: { exitCode?: number | undefined; stderr: unknown }): boolean {
  return result.exitCode === 2 || /Usage:|unrecognized option|invalid option|requires an argument/.test(String(result.stderr));
}

describe('the commands of findings', () => {
  it('finds commands in a remedy, and a usage error when there is one', async () => {
    expect(
      diagCommands(
        'reset the counters: perfquery -C mlx5_4 -P 1 -R; if errors fill them (iblinkinfo -S 0x0002c90200510000 shows the port)',
      ),
    ).toEqual([
      ['perfquery', '-C', 'mlx5_4', '-P', '1', '-R'],
      ['iblinkinfo', '-S', '0x0002c90200510000'],
    ]);
    if (tools.skipReason !== undefined) return;
    expect(usageError(await execa('perfquery', ['--no-such-flag'], { reject: false, timeout: 5000 }))).toBe(true);
  });

  it.skipIf(tools.skipReason !== undefined)(
    'on the demo host: each names its device and port, and the real tool accepts its flags',
    async () => {
      const commands = (await findingTexts(['--demo'])).flatMap(diagCommands);
      expect(commands.map((command) => command.join(' '))).toContain('perfquery -C mlx5_4 -P 1 -R');
      for (const command of commands) {
        if (ADDRESSES_A_LOCAL_PORT.has(command[0]!)) expect(command.join(' ')).toMatch(/ -C \S+ -P \d+| -G 0x/);
        const result = await execa(command[0]!, command.slice(1), { reject: false, timeout: 10_000 });
        expect(usageError(result), `${command.join(' ')}: ${result.stderr}`).toBe(false);
      }
    },
  );

  describe.skipIf(tools.skipReason !== undefined)('on the demo fabric', () => {
    let lab: Lab | undefined;
    const teardown: (() => Promise<void>)[] = [];
    afterAll(async () => {
      for (const step of teardown.splice(0).reverse()) await step();
    });

    it('each addresses its switch port by GUID and runs with success on the fabric the demo was recorded on', async () => {
      const commands = (await findingTexts(['--demo=fabric'])).flatMap(diagCommands);
      expect(commands.length).toBeGreaterThan(0);
      lab = await startLab(path.resolve('demo/fabric/fabric.net'), teardown);
      await lab.startSm('sm', 'H11', 10);
      await lab.waitSmState('sm', 'MASTER');
      await lab.waitActive('H22');
      // A reset retrains a link: the commands that read go first.
      const ordered = [...commands].sort((a, b) => Number(a.includes('reset')) - Number(b.includes('reset')));
      for (const command of ordered) {
        if (command[0] === 'perfquery' || command[0] === 'ibportstate') expect(command.join(' ')).toMatch(/ -G 0x[0-9a-f]{16} \d+/);
        const result = await lab.run('H22', command[0]!, command.slice(1), 30_000);
        expect(usageError(result), `${command.join(' ')}: ${result.stderr}`).toBe(false);
        // It reached the port it names: ibportstate's query also asks the peer port, which ibsim
        // does not answer (a MAD timeout after the port's own PortInfo is printed).
        expect(result.exitCode === 0 || /# Port info: Lid \d+ port \d+/.test(result.stdout), `${command.join(' ')}: ${result.stderr}`).toBe(
          true,
        );
      }
    }, 120_000);
  });
});
