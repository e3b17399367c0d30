// The build's second step, after tsc (package.json "build"): dist/cli.js and every module it loads,
// dependencies included, in one CommonJS file, dist/exporter.cjs, which dist/main.js runs with V8's
// code cache (src/bundle-loader.ts says why). Then, unless --no-code-cache, one short run of the
// exporter per way the project starts it (plain `node dist/main.js`, and with the flags of
// NODE_FLAGS of src/startup/v8-flags.ts: npm start, the systemd unit, the Dockerfile), scraped once with and once without
// gzip and stopped with SIGTERM, so that dist/code-cache holds their caches.
//
// Modules the program loads through createRequire (prom-client's parts, yaml, bcryptjs) stay in
// node_modules, loaded from there when needed; the bundle is written whole or not at all (a test
// process may start the exporter while another builds).
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { NODE_FLAGS } from '../dist/startup/v8-flags.js';

// --dist=<dir>: another compiled tree than the project's dist/ (a test's copy, beside which the
// package's node_modules, package.json and demo host are found as beside dist/).
const given = process.argv.find((arg) => arg.startsWith('--dist='))?.slice('--dist='.length);
const DIST = path.resolve(given ?? fileURLToPath(new URL('../dist', import.meta.url)));
const BUNDLE = path.join(DIST, 'exporter.cjs');
const CACHES = path.join(DIST, 'code-cache');
const STARTS = [[], NODE_FLAGS];

// Our modules find files beside them from import.meta.url (build-info.ts the package root,
// settings.ts the demo host): in the bundle it becomes the URL of the compiled module it was, which
// stays in dist/ beside the bundle, so that every relative path still holds.
const importMetaUrl = {
  name: 'import-meta-url',
  setup(builder) {
    builder.onLoad({ filter: /\.js$/ }, (args) => {
      if (!args.path.startsWith(DIST + path.sep)) return undefined;
      const relative = `./${path.relative(DIST, args.path).split(path.sep).join('/')}`;
      const contents = readFileSync(args.path, 'utf8').replaceAll('import.meta.url', `new URL(${JSON.stringify(relative)}, __bundle_url).href`);
      return { contents, loader: 'js', resolveDir: path.dirname(args.path) };
    });
  },
};

async function bundle() {
  const result = await build({
    entryPoints: [path.join(DIST, 'cli.js')],
    outfile: BUNDLE,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    plugins: [importMetaUrl],
    banner: { js: 'const __bundle_url = require("node:url").pathToFileURL(__filename).href;' },
    sourcemap: 'linked',
    minifyWhitespace: true,
    minifySyntax: true,
    write: false,
    logLevel: 'warning',
  });
  for (const output of result.outputFiles) {
    const temporary = `${output.path}.${process.pid}.tmp`;
    writeFileSync(temporary, output.contents);
    renameSync(temporary, output.path);
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

function fetchOnce(url, headers) {
  return new Promise((resolve, reject) => {
    get(url, { headers }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode));
    }).on('error', reject);
  });
}

// The demo host when the tree has it (a checkout, the image's build stage), else a host without
// devices (an install that copied only what the build needs): the cache then lacks the reading of
// ports, which the exporter compiles as it goes.
const DEMO = path.join(path.dirname(DIST), 'test/fixtures/sys/zoo');

/** Starts the exporter with `flags`, scrapes it twice, stops it; resolves at its exit. */
async function warmUp(flags, host) {
  const port = await freePort();
  const child = spawn(process.execPath, [...flags, path.join(DIST, 'main.js'), ...host, `--web.listen-address=127.0.0.1:${port}`, '--log.level=error'], {
    cwd: path.dirname(DIST),
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const url = `http://127.0.0.1:${port}/metrics`;
  try {
    for (let attempt = 0; ; attempt++) {
      const status = await fetchOnce(url, {}).catch(() => undefined);
      if (status === 200) break;
      if (child.exitCode !== null || attempt === 200) throw new Error(`the exporter did not answer on ${url} (node ${flags.join(' ')} dist/main.js)`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await fetchOnce(url, { 'accept-encoding': 'gzip' });
  } finally {
    child.kill('SIGTERM');
  }
  const { code, signal } = await exited;
  if (code !== 0) throw new Error(`the exporter ended with ${signal ?? `exit code ${code}`} (node ${flags.join(' ')} dist/main.js)`);
}

await bundle();
rmSync(CACHES, { recursive: true, force: true });
mkdirSync(CACHES);
if (!process.argv.includes('--no-code-cache')) {
  const empty = existsSync(DEMO) ? undefined : mkdtempSync(path.join(tmpdir(), 'infiniband-exporter-build-'));
  // A sysfs root without InfiniBand: class/ and nothing in it (a root without class/ is a usage error).
  if (empty !== undefined) mkdirSync(path.join(empty, 'class'));
  try {
    for (const flags of STARTS) await warmUp(flags, empty === undefined ? ['--demo'] : ['--path.sysfs', empty, '--no-collector.diag']);
  } finally {
    if (empty !== undefined) rmSync(empty, { recursive: true, force: true });
  }
}
