// There is no container engine here, so the Dockerfile is checked by what can be checked without
// one: the instructions themselves, the build context .dockerignore leaves, and the runtime stage's
// file layout assembled from its COPY lines and started with --demo.
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseServeCommandLine as parseCommandLine } from '../../src/commands/serve/command-line.js';
import { GLIBC_TUNABLES, NODE_FLAGS } from '../../src/startup/v8-flags.js';
import { buildOnce, PROJECT } from '../support/built.js';
import { demoMetrics } from '../support/demo-metrics.js';
import { SYSFS_PATH } from '../../src/collectors/host/host-reading.js';

interface Instruction {
  keyword: string;
  args: string;
  stage: number;
}

/** Dockerfile instructions, continuation lines joined and comments dropped, numbered by stage. */
function instructions(text: string): Instruction[] {
  const result: Instruction[] = [];
  let stage = -1;
  let pending = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line.startsWith('#') || line === '') continue;
    pending += `${line.replace(/\\$/, '').trim()} `;
    if (line.endsWith('\\')) continue;
    const [, keyword = '', args = ''] = /^(\S+)\s*(.*)$/.exec(pending.trim()) ?? [];
    pending = '';
    if (keyword.toUpperCase() === 'FROM') stage += 1;
    result.push({ keyword: keyword.toUpperCase(), args, stage });
  }
  return result;
}

/** Is a path of the build context sent to the builder? (.dockerignore: the last matching line wins.) */
function inContext(patterns: string[], file: string): boolean {
  let included = true;
  for (const pattern of patterns) {
    const negated = pattern.startsWith('!');
    const body = pattern.replace(/^!/, '').replace(/\/$/, '');
    const regex = new RegExp(
      `^${body
        .split('*')
        .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
        .join('[^/]*')}(/.*)?$`,
    );
    if (regex.test(file)) included = negated;
  }
  return included;
}

const dockerfile = instructions(readFileSync(path.join(PROJECT, 'Dockerfile'), 'utf8'));
const ignore = readFileSync(path.join(PROJECT, '.dockerignore'), 'utf8')
  .split('\n')
  .map((l) => l.trim())
  .filter((l) => l && !l.startsWith('#'));
const finalStage = Math.max(...dockerfile.map((i) => i.stage));
const runtime = dockerfile.filter((i) => i.stage === finalStage);
const defaultArgs = Object.fromEntries(
  dockerfile.filter((i) => i.keyword === 'ARG' && i.args.includes('=')).map((i) => i.args.split('=', 2) as [string, string]),
);
const expand = (text: string) => text.replace(/\$\{(\w+)\}/g, (_, name: string) => defaultArgs[name] ?? '');
const exec = (keyword: string) => JSON.parse(runtime.find((i) => i.keyword === keyword)!.args) as string[];

interface Copy {
  from: string | undefined;
  sources: string[];
  destination: string;
}
const copies = (list: Instruction[]): Copy[] =>
  list
    .filter((i) => i.keyword === 'COPY')
    .map((i) => {
      const words = i.args.split(/\s+/);
      const from = words.find((w) => w.startsWith('--from='))?.slice('--from='.length);
      const paths = words.filter((w) => !w.startsWith('--'));
      return { from, sources: paths.slice(0, -1), destination: paths.at(-1)! };
    });

describe('Dockerfile', () => {
  it('builds on a maintained Node LTS slim image in two stages', () => {
    const images = dockerfile.filter((i) => i.keyword === 'FROM').map((i) => expand(i.args.split(/\s+/)[0]!));
    expect(images).toHaveLength(2);
    for (const image of images) {
      expect(image).toMatch(/^node:(22|24)-bookworm-slim$/);
      expect(image).not.toMatch(/^node:20/);
    }
    const build = dockerfile.filter((i) => i.stage === 0 && i.keyword === 'RUN').map((i) => i.args);
    expect(build).toEqual(['npm ci --no-audit --no-fund', 'npm run build']);
    expect(runtime.filter((i) => i.keyword === 'RUN').map((i) => i.args)).toContain(
      'npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force',
    );
  });

  it('installs infiniband-diags and tini without recommends, runs as a non-root user, exposes 10460', () => {
    const apt = runtime.find((i) => i.keyword === 'RUN' && i.args.includes('apt-get install'))!.args;
    expect(apt).toMatch(/apt-get install -y --no-install-recommends infiniband-diags tini/);
    expect(apt).toMatch(/rm -rf \/var\/lib\/apt\/lists\/\*$/);
    const user = runtime.filter((i) => i.keyword === 'USER').at(-1)!.args;
    expect(user).not.toMatch(/^(root|0)(:|$)/);
    expect(runtime.map((i) => `${i.keyword} ${i.args}`)).toContain('EXPOSE 10460');
    const labels = runtime
      .filter((i) => i.keyword === 'LABEL')
      .map((i) => i.args)
      .join(' ');
    for (const key of ['title', 'description', 'licenses', 'version', 'revision'])
      expect(labels).toContain(`org.opencontainers.image.${key}=`);
    expect(labels).toContain('org.opencontainers.image.licenses="Apache-2.0"');
  });

  it('starts node directly under tini (exec form, no npm), with arguments the exporter accepts', () => {
    const entrypoint = exec('ENTRYPOINT');
    expect(entrypoint).toEqual(['/usr/bin/tini', '--', 'node', ...NODE_FLAGS, 'dist/main.js']);
    const command = parseCommandLine(exec('CMD'));
    expect(command.action === 'run' && command.settings.get(SYSFS_PATH)).toBe('/host/sys');
  });

  it("gives glibc's malloc the settings of the systemd unit (src/startup/v8-flags.ts)", () => {
    const env = runtime
      .filter((i) => i.keyword === 'ENV')
      .map((i) => i.args)
      .join(' ');
    expect(env.split(/\s+/)).toContain(`GLIBC_TUNABLES=${GLIBC_TUNABLES}`);
  });

  it('gives node the same flags as npm start and the systemd unit (src/startup/v8-flags.ts)', () => {
    const { scripts } = JSON.parse(readFileSync(path.join(PROJECT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(scripts.start).toBe(`node ${NODE_FLAGS.join(' ')} dist/main.js`);
  });

  it('copies only what the build context holds', () => {
    for (const copy of copies(dockerfile).filter((c) => c.from === undefined)) {
      for (const source of copy.sources) {
        const relative = source.replace(/\/$/, '');
        expect(existsSync(path.join(PROJECT, relative)), source).toBe(true);
        expect(inContext(ignore, relative), `${source} is left out by .dockerignore`).toBe(true);
      }
    }
    for (const secret of ['node_modules', 'dist', '.git', 'deploy/web-config.example.yml', 'test/server/web-config.test.ts']) {
      expect(inContext(ignore, secret), secret).toBe(false);
    }
  });

  it('needs no development dependency at run time', () => {
    buildOnce();
    const pkg = JSON.parse(readFileSync(path.join(PROJECT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    const walk = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? walk(path.join(dir, e.name)) : e.name.endsWith('.js') ? [path.join(dir, e.name)] : [],
      );
    const imported = new Set<string>();
    for (const file of walk(path.join(PROJECT, 'dist'))) {
      // Static imports, dynamic imports and createRequire()'s require (modules loaded only when used).
      for (const [, specifier] of readFileSync(file, 'utf8').matchAll(/(?:from|import\(|require\()\s*'([^'.][^']*)'/g)) {
        if (specifier!.startsWith('node:')) continue;
        const parts = specifier!.split('/');
        imported.add(specifier!.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!);
      }
    }
    expect(imported.size).toBeGreaterThan(3);
    for (const name of imported) expect(Object.keys(pkg.dependencies), name).toContain(name);
  }, 120_000); // the build (tsc and the bundle) alone takes most of a minute on two busy cores

  describe('the runtime stage, assembled from its COPY lines', () => {
    let root: string;
    beforeAll(() => {
      buildOnce();
      root = mkdtempSync(path.join(tmpdir(), 'ibx-image-'));
      const workdir = path.join(root, runtime.filter((i) => i.keyword === 'WORKDIR').at(-1)!.args);
      mkdirSync(workdir, { recursive: true });
      for (const copy of copies(runtime)) {
        for (const source of copy.sources) {
          // The build stage's /app/dist is this checkout's dist after `npm run build`.
          const from = copy.from === undefined ? path.join(PROJECT, source) : path.join(PROJECT, source.replace(/^\/app\//, ''));
          const to = path.resolve(workdir, copy.destination);
          const target = copy.destination.endsWith('/') && !statSync(from).isDirectory() ? path.join(to, path.basename(from)) : to;
          cpSync(from, target, { recursive: true, verbatimSymlinks: true });
        }
      }
      // npm ci --omit=dev cannot run offline here; the checked dependency list stands in for it.
      symlinkSync(path.join(PROJECT, 'node_modules'), path.join(workdir, 'node_modules'));
    });
    afterAll(() => rmSync(root, { recursive: true, force: true }));

    it('serves the demo host with --demo', async () => {
      const workdir = path.join(root, 'app');
      const [, , node, ...rest] = exec('ENTRYPOINT');
      expect(node).toBe('node');
      const body = await demoMetrics(rest, workdir);
      expect(body).toMatch(/^infiniband_device_info\{device="mlx5_0",/m);
      // The version comes from the copied package.json, next to dist/.
      const { version } = JSON.parse(readFileSync(path.join(PROJECT, 'package.json'), 'utf8')) as { version: string };
      expect(body).toContain(`infiniband_exporter_build_info{version="${version}"`);
    });
  });
});
