// The .deb (dpkg-deb) and the .rpm (rpmbuild) of the single executable, from one staged file tree
// each: the binary in /usr/bin; the systemd unit and sysusers file of deploy/systemd, the unit
// pointed at the binary and at the package's environment file; that file (/etc/default for the
// .deb, /etc/sysconfig for the .rpm), kept on upgrade; the alerting rules, dashboards, runbooks and
// the commented web config example under /usr/share/infiniband-exporter; a man page made by help2man from --help and each
// command's --help. Maintainer scripts: packaging/ (they never enable or start the service).
import { chmodSync, copyFileSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { PROJECT, run } from './tools.mjs';

const SHARE = 'usr/share/infiniband-exporter';
// xz's level 1 for both packages: the 100 MB binary compresses to 28 MB in 5 s, where the default
// level 6 takes 43 s for 24 MB (one core of the machine the release was measured on; Node.js 20's
// binary: on 24 it is 130 MB, 36 MB packed).
const XZ_LEVEL = 1;
const UNIT = 'infiniband-exporter.service';

const source = (relative) => readFileSync(path.join(PROJECT, relative), 'utf8');

/** `text` with `pattern` replaced; the pattern must be there (a changed source fails the build, not the package). */
function replaced(text, pattern, replacement, file) {
  if (!pattern.test(text)) throw new Error(`${file}: ${pattern} not found`);
  return text.replace(pattern, replacement);
}

/**
 * deploy/systemd's unit, running the packaged binary with its flags from `environmentFile` and the
 * Node.js flags `nodeFlags` in NODE_OPTIONS.
 */
export function packagedUnit(environmentFile, nodeFlags) {
  const file = `deploy/systemd/${UNIT}`;
  let unit = source(file);
  unit = replaced(
    unit,
    /^(#.*\n)+/,
    `# infiniband-exporter, as its package installs it: /usr/bin/infiniband-exporter run as the system\n# user infiniband-exporter (sysusers.d/infiniband-exporter.conf), flags in ARGS of ${environmentFile}.\n# Not enabled or started by the package: systemctl enable --now infiniband-exporter\n`,
    file,
  );
  unit = replaced(unit, /^EnvironmentFile=.*$/m, `EnvironmentFile=-${environmentFile}`, file);
  // The binary takes no Node.js flags on its command line; Node.js reads them from NODE_OPTIONS.
  unit = replaced(unit, /^Environment=NODE_ENV=production$/m, `Environment=NODE_OPTIONS=${nodeFlags.join(' ')}`, file);
  unit = replaced(unit, /^# Node\.js flags for .*\n(#.*\n)*ExecStart=.*$/m, 'ExecStart=/usr/bin/infiniband-exporter $ARGS', file);
  return unit;
}

/** deploy/systemd's defaults file, naming the packaged binary and where this package installs it. */
export function packagedDefaults(environmentFile) {
  const file = 'deploy/systemd/infiniband-exporter.default';
  const text = replaced(source(file), /\(installed as \/etc\/default\/infiniband-exporter\)/, `(installed as ${environmentFile})`, file);
  return replaced(text, /^# All flags: .*$/m, '# All flags: infiniband-exporter --help, or man infiniband-exporter', file);
}

/** Lines of roff for text shown as it is (a command's --help). */
const roffVerbatim = (text) =>
  [
    '.nf',
    ...text
      .trimEnd()
      .split('\n')
      .map((line) =>
        line
          .replaceAll('\\', '\\e')
          .replaceAll('-', '\\-')
          .replace(/^([.'])/, '\\&$1'),
      ),
    '.fi',
  ].join('\n');

/** The man page, by help2man from the binary's --help, with a section per command its usage names. */
async function manPage(binary, meta, work) {
  const help = await run(binary, ['--help'], { env: { NO_COLOR: '1' } });
  const commands = [...new Set([...help.matchAll(/^\s*(?:usage:\s*)?infiniband-exporter ([a-z][\w-]*)\b/gm)].map((match) => match[1]))];
  const sections = [];
  for (const command of commands)
    sections.push(`.SS "infiniband-exporter ${command}"`, roffVerbatim(await run(binary, [command, '--help'], { env: { NO_COLOR: '1' } })));
  const include = path.join(work, 'man.h2m');
  writeFileSync(
    include,
    [
      ...(commands.length > 0 ? ['[COMMANDS]', ...sections] : []),
      '[FILES]',
      '.TP',
      '/etc/default/infiniband-exporter (.deb), /etc/sysconfig/infiniband-exporter (.rpm)',
      'ARGS="...": the flags of the systemd unit infiniband-exporter.service.',
      '.TP',
      `/${SHARE}`,
      'Prometheus alerting rules (rules/), Grafana dashboards (dashboards/), the runbooks the alerts link to (runbooks.md), and a commented web config for --web.config.file: TLS and basic auth (examples/web-config.yml).',
      '[SEE ALSO]',
      `${meta.homepage}`,
      '',
    ].join('\n'),
  );
  const page = await run(
    'help2man',
    ['--no-info', '--section=1', `--name=${meta.summary}`, `--version-string=${meta.version}`, `--include=${include}`, binary],
    { env: { NO_COLOR: '1' } },
  );
  return gzipSync(page, { level: 9 });
}

function put(root, relative, content, mode = 0o644) {
  const file = path.join(root, relative);
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o755 });
  writeFileSync(file, content);
  chmodSync(file, mode);
}

/** The files both packages install; `environmentFile` and `license` are where each package's conventions put them. */
function stage(root, { binary, nodeFlags, man, environmentFile, license }) {
  mkdirSync(path.join(root, 'usr/bin'), { recursive: true });
  copyFileSync(binary, path.join(root, 'usr/bin/infiniband-exporter'));
  chmodSync(path.join(root, 'usr/bin/infiniband-exporter'), 0o755);
  put(root, `usr/lib/systemd/system/${UNIT}`, packagedUnit(environmentFile, nodeFlags));
  put(root, 'usr/lib/sysusers.d/infiniband-exporter.conf', source('deploy/systemd/infiniband-exporter.sysusers.conf'));
  put(root, environmentFile.slice(1), packagedDefaults(environmentFile));
  for (const [dir, pattern] of [
    ['rules', /\.ya?ml$/],
    ['dashboards', /\.json$/],
  ]) {
    for (const name of readdirSync(path.join(PROJECT, dir))
      .filter((n) => pattern.test(n) && statSync(path.join(PROJECT, dir, n)).isFile())
      .sort())
      put(root, `${SHARE}/${dir}/${name}`, source(`${dir}/${name}`));
  }
  put(root, `${SHARE}/runbooks.md`, source('docs/runbooks.md'));
  put(root, `${SHARE}/examples/web-config.yml`, source('deploy/web-config.example.yml'));
  put(root, 'usr/share/man/man1/infiniband-exporter.1.gz', man);
  put(root, license.slice(1), source('LICENSE'));
}

/** Every regular file under `root`, relative, sorted. */
function files(root, relative = '') {
  return readdirSync(path.join(root, relative), { withFileTypes: true })
    .sort((a, b) => a.name.localeCompare(b.name))
    .flatMap((entry) => (entry.isDirectory() ? files(root, path.join(relative, entry.name)) : [path.join(relative, entry.name)]));
}

const maintainerScript = (name) => source(`packaging/${name}`).replace('@CREATE_USER@', source('packaging/create-user.sh').trimEnd());

/**
 * The .deb's Depends: dpkg-shlibdeps's, except libc6's lower bound, which is the newest GLIBC_
 * symbol version the binary asks for (readelf): dpkg-shlibdeps counts the pthread and dl symbols,
 * which the binary takes from libpthread and libdl, as libc's since glibc 2.34 moved them there.
 */
async function debDepends(binary, work) {
  const dir = path.join(work, 'shlibdeps');
  put(dir, 'debian/control', 'Source: infiniband-exporter\n\nPackage: infiniband-exporter\nArchitecture: amd64\n');
  const shlibs = (await run('dpkg-shlibdeps', ['-O', `-e${binary}`], { cwd: dir })).replace(/^shlibs:Depends=/, '').trim();
  const glibc = [...(await run('readelf', ['--version-info', '--wide', binary])).matchAll(/Name: GLIBC_([\d.]+)/g)]
    .map((match) => match[1])
    .sort((a, b) => a.localeCompare(b, undefined, { numeric: true }))
    .at(-1);
  return shlibs.replace(/libc6 \(>= [^)]+\)/, `libc6 (>= ${glibc})`);
}

async function buildDeb({ work, out, meta, binary, nodeFlags, man }) {
  const root = path.join(work, 'deb');
  const environmentFile = '/etc/default/infiniband-exporter';
  stage(root, { binary, nodeFlags, man, environmentFile, license: '/usr/share/doc/infiniband-exporter/copyright' });
  const installed = files(root);
  const size = installed.reduce((sum, file) => sum + Math.ceil(statSync(path.join(root, file)).size / 1024), 0);
  const md5 = await run('md5sum', installed, { cwd: root });
  const control = [
    `Package: ${meta.name}`,
    `Version: ${meta.version}-1`,
    'Architecture: amd64',
    `Maintainer: infiniband-exporter developers <${meta.homepage}>`,
    `Installed-Size: ${size}`,
    // passwd: useradd for the postinst where systemd-sysusers is absent (a chroot, an image).
    `Depends: ${await debDepends(binary, work)}, passwd`,
    'Recommends: infiniband-diags',
    // mstlink (module collector): not recommended, since the unit's sandbox keeps it from the adapters.
    // ethtool (tso collector): only used on first-generation ConnectX (revision a0) adapters.
    'Suggests: mstflint, ethtool',
    'Section: net',
    'Priority: optional',
    `Homepage: ${meta.homepage}`,
    `Description: ${meta.summary}`,
    ...meta.description.match(/.{1,72}(\s|$)/g).map((line) => ` ${line.trim()}`),
    ' .',
    ` Built from revision ${meta.revision}.`,
    '',
  ].join('\n');
  put(root, 'DEBIAN/control', control);
  put(root, 'DEBIAN/conffiles', `${environmentFile}\n`);
  put(root, 'DEBIAN/md5sums', md5);
  for (const script of ['postinst', 'prerm', 'postrm']) put(root, `DEBIAN/${script}`, maintainerScript(script), 0o755);
  const deb = path.join(out, `${meta.name}_${meta.version}-1_amd64.deb`);
  await run('dpkg-deb', ['--root-owner-group', '-Zxz', `-z${XZ_LEVEL}`, '--build', root, deb]);
  return deb;
}

async function buildRpm({ work, out, meta, binary, nodeFlags, man }) {
  const stageRoot = path.join(work, 'rpm-stage');
  stage(stageRoot, {
    binary,
    nodeFlags,
    man,
    environmentFile: '/etc/sysconfig/infiniband-exporter',
    license: '/usr/share/licenses/infiniband-exporter/LICENSE',
  });
  const spec = path.join(work, `${meta.name}.spec`);
  const fill = {
    VERSION: meta.version,
    SUMMARY: meta.summary,
    LICENSE: meta.license,
    HOMEPAGE: meta.homepage,
    VCS: `git+${meta.homepage}#${meta.revision}`,
    DESCRIPTION: `${meta.description}\n\nBuilt from revision ${meta.revision}.`,
    STAGE: stageRoot,
  };
  writeFileSync(
    spec,
    maintainerScript('infiniband-exporter.spec').replace(/@([A-Z]+)@/g, (whole, key) => fill[key] ?? whole),
  );
  const topdir = path.join(work, 'rpmbuild');
  const defines = {
    _topdir: topdir,
    _rpmdir: out,
    _build_name_fmt: '%%{NAME}-%%{VERSION}-%%{RELEASE}.%%{ARCH}.rpm',
    // Reproducible: build time and file times from SOURCE_DATE_EPOCH, no host name.
    use_source_date_epoch_as_buildtime: '1',
    clamp_mtime_to_source_date_epoch: '1',
    _buildhost: 'reproducible',
    // xz, which every rpm since RHEL 6 reads (zstd needs rpm 4.14).
    _binary_payload: `w${XZ_LEVEL}.xzdio`,
  };
  await run('rpmbuild', [
    '-bb',
    '--quiet',
    '--target',
    'x86_64',
    ...Object.entries(defines).flatMap(([key, value]) => ['--define', `${key} ${value}`]),
    spec,
  ]);
  return path.join(out, `${meta.name}-${meta.version}-1.x86_64.rpm`);
}

/** Builds both packages into `out`; resolves with their paths. */
export async function buildPackages({ work, out, meta, binary, nodeFlags }) {
  mkdirSync(work, { recursive: true });
  const man = await manPage(binary, meta, work);
  const [deb, rpm] = await Promise.all([
    buildDeb({ work, out, meta, binary, nodeFlags, man }),
    buildRpm({ work, out, meta, binary, nodeFlags, man }),
  ]);
  return { deb, rpm };
}
