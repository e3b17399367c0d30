// The build's second step, after tsc (package.json "build"): dist/cli.js and every module it loads,
// dependencies included, in one CommonJS file, dist/exporter.cjs, which dist/main.js runs with V8's
// code cache (src/startup/bundle-loader.ts says why). Then, unless --no-code-cache, one short run of
// the exporter per way the project starts it (plain `node dist/main.js`, and with NODE_FLAGS of
// src/startup/v8-flags.ts: npm start, the systemd unit, the Dockerfile), scraped once with and once
// without gzip and stopped with SIGTERM, so that dist/code-cache holds their caches.
//
// Modules the program loads through createRequire (prom-client's parts, yaml, ajv, hash-wasm's
// bcrypt, bcryptjs) stay in node_modules, loaded from there when needed; the bundle is written
// whole or not at all (a test process may start the exporter while another builds). The release
// build (scripts/release/binary.mjs) uses the same two steps for the single executable, where
// nothing can stay outside: `standalone`.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { builtinModules, createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const PROJECT_DIST = fileURLToPath(new URL('../dist', import.meta.url));

// Our modules find files beside them from import.meta.url (metrics/build-info.ts the package root,
// commands/command-line.ts the demo host): in the bundle it becomes the URL of the compiled module it was, which
// stays in dist/ beside the bundle, so that every relative path still holds.
function importMetaUrl(dist, standalone) {
  return {
    name: 'import-meta-url',
    setup(builder) {
      builder.onLoad({ filter: /\.js$/ }, (args) => {
        if (!args.path.startsWith(dist + path.sep)) return undefined;
        const relative = `./${path.relative(dist, args.path).split(path.sep).join('/')}`;
        let contents = readFileSync(args.path, 'utf8');
        if (standalone) contents = inlineCreateRequire(contents, args.path);
        contents = contents.replaceAll('import.meta.url', `new URL(${JSON.stringify(relative)}, __bundle_url).href`);
        return { contents, loader: 'js', resolveDir: path.dirname(args.path) };
      });
    },
  };
}

// Standalone: a module's own `require = createRequire(import.meta.url)` goes, and a
// `createRequire(import.meta.url)(...)` becomes `require(...)`, so that its require() calls are the
// bundle's and esbuild takes their modules in. A require of a template naming files
// inside a package (prom-client's default metrics) becomes a relative one, which esbuild bundles
// whole (every file the template can name) where it leaves a package path alone.
function inlineCreateRequire(contents, file) {
  const local = createRequire(file);
  const inlined = contents
    .replace(/^const require = createRequire\(import\.meta\.url\);$/m, '')
    .replaceAll('createRequire(import.meta.url)(', 'require(')
    .replace(/require\(`((?:@[^/`]+\/)?[^./`][^/`]*)\//g, (_, name) => {
      const packageDir = path.dirname(local.resolve(`${name}/package.json`));
      return `require(\`./${path.relative(path.dirname(file), packageDir).split(path.sep).join('/')}/`;
    });
  // Any other form would leave a require() that the binary cannot serve, unseen by esbuild.
  if (inlined.includes('createRequire(import.meta.url)'))
    throw new Error(`${file}: createRequire(import.meta.url) in a form the standalone bundle does not inline`);
  return inlined;
}

const isBuiltin = (specifier) => specifier.startsWith('node:') || builtinModules.includes(specifier);

/**
 * Bundles `<dist>/<entry>` into `<dist>/<output>`. `standalone` ({version, revision}): every module
 * inside, none loaded from node_modules, and build-info.ts answers with these (a single executable
 * has no package.json or .git beside it).
 */
export async function bundle({ dist = PROJECT_DIST, entry = 'cli.js', output = 'exporter.cjs', standalone } = {}) {
  const result = await build({
    entryPoints: [path.join(dist, entry)],
    outfile: path.join(dist, output),
    // Module names in the bundle are relative to it: the same bundle from any checkout or scratch tree.
    absWorkingDir: path.dirname(dist),
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    plugins: [importMetaUrl(dist, standalone !== undefined)],
    banner: { js: 'const __bundle_url = require("node:url").pathToFileURL(__filename).href;' },
    define: standalone === undefined ? {} : { INFINIBAND_EXPORTER_RELEASE: JSON.stringify(standalone) },
    sourcemap: 'linked',
    minifyWhitespace: true,
    minifySyntax: true,
    write: false,
    metafile: standalone !== undefined,
    logLevel: 'warning',
  });
  if (standalone !== undefined) {
    const outside = Object.values(result.metafile.outputs)
      .flatMap((out) => out.imports)
      .filter((i) => i.external && !isBuiltin(i.path));
    if (outside.length > 0) throw new Error(`${entry}: not bundled: ${outside.map((i) => i.path).join(', ')}`);
  }
  for (const file of result.outputFiles) {
    const temporary = `${file.path}.${process.pid}.tmp`;
    writeFileSync(temporary, file.contents);
    renameSync(temporary, file.path);
  }
}

/** One GET of `url`; rejects after `ms` without a whole answer (a stuck connection cannot hold the build). */
function fetchOnce(url, headers, ms) {
  return new Promise((resolve, reject) => {
    const request = get(url, { headers, timeout: ms }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode));
      response.on('error', reject);
    });
    request.on('timeout', () => request.destroy(new Error(`no answer from ${url} within ${ms} ms`)));
    request.on('error', reject);
  });
}

/** How long one warm-up may take, start to exit: far more than it needs (under a second alone). */
const WARM_UP_MS = 30_000;

/**
 * Starts `node <flags> <dist>/<main> <args>` in `env` on a port the kernel picks (127.0.0.1:0, read
 * from its "listening" log line: no port chosen here that another process could take meanwhile),
 * scrapes it twice, stops it; resolves at its exit. Past WARM_UP_MS it is killed and the step fails
 * with the end of its log.
 */
async function warmUp(dist, main, flags, args, env) {
  const child = spawn(
    process.execPath,
    [...flags, path.join(dist, main), ...args, '--web.listen-address=127.0.0.1:0', '--log.level=info'],
    { cwd: path.dirname(dist), env, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  // Stopped with this script (a build killed by a timeout leaves no exporter behind): the child
  // killed, then the signal raised again for its default action.
  const onSignal = (signal) => {
    child.kill('SIGKILL');
    process.kill(process.pid, signal);
  };
  for (const signal of ['SIGTERM', 'SIGINT']) process.once(signal, onSignal);
  const what = `node ${[...flags, main].join(' ')}`;
  let log = '';
  child.stderr.setEncoding('utf8');
  // The log's last 16 KiB, for the error message.
  child.stderr.on('data', (chunk) => (log = (log + chunk).slice(-16_384)));
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  let timer;
  const deadline = new Promise((_, reject) => {
    timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the warm-up took over ${WARM_UP_MS} ms`));
    }, WARM_UP_MS);
  });
  const scrape = async () => {
    const address = await new Promise((resolve, reject) => {
      const look = () => {
        const found = /"address":"(http:\/\/[^"]+)","telemetryPath"/.exec(log);
        if (found) resolve(found[1]);
      };
      child.stderr.on('data', look);
      exited.then(({ code, signal }) => reject(new Error(`the exporter ended with ${signal ?? `exit code ${code}`} before listening`)));
    });
    const url = `${address}/metrics`;
    const status = await fetchOnce(url, {}, WARM_UP_MS);
    if (status !== 200) throw new Error(`${url} answered ${status}`);
    await fetchOnce(url, { 'accept-encoding': 'gzip' }, WARM_UP_MS);
  };
  try {
    await Promise.race([scrape(), deadline]);
    child.kill('SIGTERM');
    const { code, signal } = await Promise.race([exited, deadline]);
    if (code !== 0) throw new Error(`the exporter ended with ${signal ?? `exit code ${code}`}`);
  } catch (error) {
    child.kill('SIGKILL');
    throw new Error(`${error.message} (${what})\n${log}`);
  } finally {
    clearTimeout(timer);
    for (const signal of ['SIGTERM', 'SIGINT']) process.off(signal, onSignal);
  }
}

/**
 * Empties `<dist>/code-cache` and runs `<dist>/<main>` once per list of Node.js flags in `starts`
 * (by default none and NODE_FLAGS, as `<dist>/startup/v8-flags.js` has them), with the exporter's
 * arguments `args` and the environment `env`, so that the bundle loader writes a cache for each. On
 * the demo host when the tree has it beside dist/ (a checkout, the image's build stage, the release
 * build), else a host without devices (an install that copied only what the build needs): the cache
 * then lacks the reading of ports, which the exporter compiles as it goes.
 */
export async function writeCodeCaches({ dist = PROJECT_DIST, main = 'main.js', starts, args = [], env = process.env } = {}) {
  starts ??= [[], (await import(pathToFileURL(path.join(dist, 'startup/v8-flags.js')).href)).NODE_FLAGS];
  const caches = path.join(dist, 'code-cache');
  rmSync(caches, { recursive: true, force: true });
  mkdirSync(caches);
  const demo = existsSync(path.join(path.dirname(dist), 'demo/host/sys'));
  const empty = demo ? undefined : mkdtempSync(path.join(tmpdir(), 'infiniband-exporter-build-'));
  // A sysfs root without InfiniBand: class/ and nothing in it (a root without class/ is a usage error).
  if (empty !== undefined) mkdirSync(path.join(empty, 'class'));
  try {
    const host = empty === undefined ? ['--demo'] : ['--path.sysfs', empty, '--no-collector.diag'];
    for (const flags of starts) await warmUp(dist, main, flags, [...host, ...args], env);
  } finally {
    if (empty !== undefined) rmSync(empty, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  // --dist=<dir>: another compiled tree than the project's dist/ (a test's copy, beside which the
  // package's node_modules, package.json and demo host are found as beside dist/).
  const given = process.argv.find((arg) => arg.startsWith('--dist='))?.slice('--dist='.length);
  const dist = given === undefined ? PROJECT_DIST : path.resolve(given);
  await bundle({ dist });
  if (process.argv.includes('--no-code-cache')) {
    rmSync(path.join(dist, 'code-cache'), { recursive: true, force: true });
    mkdirSync(path.join(dist, 'code-cache'));
  } else await writeCodeCaches({ dist });
}
