// deploy/systemd: the unit passes `systemd-analyze verify` without a single complaint (unknown
// keys are only warnings there, so any output fails), the defaults file's ARGS are flags the
// exporter accepts, and the sysusers file creates the unit's user.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseServeCommandLine as parseCommandLine } from '../../src/commands/serve/command-line.js';
import { GLIBC_TUNABLES, NODE_FLAGS } from '../../src/startup/v8-flags.js';
import { PROJECT } from '../support/built.js';
import { requireSystemTools } from '../support/system.js';

const DIR = path.join(PROJECT, 'deploy/systemd');
const UNIT = 'infiniband-exporter.service';
const unitText = readFileSync(path.join(DIR, UNIT), 'utf8');
const defaults = readFileSync(path.join(DIR, 'infiniband-exporter.default'), 'utf8');

/** Values of a key in the unit, in order. */
const values = (key: string) => [...unitText.matchAll(new RegExp(`^${key}=(.*)$`, 'gm'))].map((m) => m[1]!);

describe('unit and defaults file', () => {
  it('runs node on the built entry point with $ARGS from /etc/default, as a dedicated user', () => {
    expect(values('ExecStart')).toEqual([`/usr/bin/node ${NODE_FLAGS.join(' ')} /opt/infiniband-exporter/dist/main.js $ARGS`]);
    expect(values('EnvironmentFile')).toEqual(['-/etc/default/infiniband-exporter']);
    expect(values('Environment')).toContain(`GLIBC_TUNABLES=${GLIBC_TUNABLES}`);
    expect(values('User')).toEqual(['infiniband-exporter']);
    const sysusers = readFileSync(path.join(DIR, 'infiniband-exporter.sysusers.conf'), 'utf8');
    expect(sysusers).toMatch(/^u infiniband-exporter - /m);
  });

  it('is hardened but leaves the umad devices to the diag collector, and the kernel log to the kernel collector', () => {
    for (const [key, value] of [
      ['NoNewPrivileges', 'yes'],
      ['ProtectSystem', 'strict'],
      ['ProtectHome', 'yes'],
      ['PrivateTmp', 'yes'],
      ['DevicePolicy', 'closed'],
    ]) {
      expect(values(key!), key).toEqual([value]);
    }
    // /dev/kmsg needs CAP_SYSLOG where kernel.dmesg_restrict=1, and nothing more.
    expect(values('CapabilityBoundingSet')).toEqual(['CAP_SYSLOG']);
    expect(values('AmbientCapabilities')).toEqual(['CAP_SYSLOG']);
    expect(values('ProtectKernelLogs')).toEqual([]);
    expect(values('DeviceAllow')).toEqual(['char-infiniband_mad rw', '/dev/kmsg r']);
    expect(values('PrivateDevices')).toEqual([]);
    expect(values('MemoryDenyWriteExecute')).toEqual([]);
  });

  it('ARGS and the documented examples are flags the exporter accepts', () => {
    const args = [...defaults.matchAll(/^#?\s*ARGS="([^"]*)"/gm)].map((m) => m[1]!);
    expect(args.length).toBeGreaterThanOrEqual(2);
    for (const line of args) {
      const flags = line.split(/\s+/).filter(Boolean);
      // Config and web config files named there do not exist here: parse without them.
      const command = parseCommandLine(flags.filter((flag) => !/^--(config|web\.config)\.file=/.test(flag)));
      expect(command.action, line).toBe('run');
    }
    expect(parseCommandLine(['--device.include=^mlx5_[0-9]+$']).action).toBe('run');
  });
});

const tools = requireSystemTools('systemd', { 'systemd-analyze': 'systemd', 'systemd-sysusers': 'systemd' });

describe.skipIf(tools.skipReason !== undefined)('systemd tools', () => {
  it('systemd-analyze verify accepts the unit without a warning', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'ibx-systemd-'));
    try {
      // verify needs ExecStart's program to exist. The unit names /usr/bin/node (Debian's nodejs
      // and NodeSource); where node lives elsewhere, a copy pointing at this node is verified.
      let text = unitText;
      if (!existsSync('/usr/bin/node')) text = text.replace('ExecStart=/usr/bin/node ', `ExecStart=${process.execPath} `);
      writeFileSync(path.join(dir, UNIT), text);
      const result = spawnSync(tools.paths['systemd-analyze']!, ['verify', path.join(dir, UNIT)], { encoding: 'utf8' });
      expect(result.stdout + result.stderr).toBe('');
      expect(result.status).toBe(0);

      // The check has teeth: a misspelt key is reported.
      writeFileSync(path.join(dir, UNIT), text.replace('ProtectHome=yes', 'ProtectHomes=yes'));
      const broken = spawnSync(tools.paths['systemd-analyze']!, ['verify', path.join(dir, UNIT)], { encoding: 'utf8' });
      expect(broken.stderr).toMatch(/Unknown key 'ProtectHomes'/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('systemd-analyze security rates the unit no worse than before the kernel collector (1.8)', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'ibx-systemd-'));
    try {
      writeFileSync(path.join(dir, UNIT), unitText);
      const result = spawnSync(tools.paths['systemd-analyze']!, ['security', '--offline=true', '--no-pager', path.join(dir, UNIT)], {
        encoding: 'utf8',
      });
      const exposure = /Overall exposure level for \S+: ([\d.]+)/.exec(result.stdout + result.stderr);
      expect(exposure, result.stdout + result.stderr).not.toBeNull();
      expect(Number(exposure![1])).toBeLessThanOrEqual(1.8);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('systemd-sysusers creates the user and group the unit runs as', () => {
    const root = mkdtempSync(path.join(tmpdir(), 'ibx-sysusers-'));
    try {
      mkdirSync(path.join(root, 'etc'));
      const result = spawnSync(
        tools.paths['systemd-sysusers']!,
        ['--dry-run', `--root=${root}`, path.join(DIR, 'infiniband-exporter.sysusers.conf')],
        { encoding: 'utf8' },
      );
      expect(result.status).toBe(0);
      expect(result.stdout + result.stderr).toMatch(/Creating group 'infiniband-exporter'/);
      expect(result.stdout + result.stderr).toMatch(/Creating user 'infiniband-exporter'/);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
