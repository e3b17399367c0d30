// What every benchmark section shares: starting and stopping servers (127.0.0.1 only, stopped by
// PID), reading a process's CPU, context switches and memory from /proc, the tree generator, and
// the facts about the machine a run happened on.
import { execFileSync, spawn } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { request } from 'node:http';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { importTypeScript } from './typescript.mjs';

export const PROJECT = fileURLToPath(new URL('..', import.meta.url));
export const MAIN = path.join(PROJECT, 'dist/main.js');
export const PORTS_PER_DEVICE = 2;
export const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
const RUN_LIMIT_MS = 180_000;

const children = new Set();

export function log(message) {
  process.stderr.write(`bench: ${message}\n`);
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Run a command to its end (with a time limit); resolves with its stdout. */
export function run(command, args, { env, cwd, limitMs = RUN_LIMIT_MS } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env }, cwd });
    children.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), limitMs);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      children.delete(child);
      if (code === 0) resolve(stdout);
      else reject(new Error(`${command} ${args.join(' ')} ended with ${code ?? signal}: ${stderr.slice(-2000)}`));
    });
  });
}

/**
 * Start a server and wait until `readyPath` answers 200 (asked with `headers`; `ready` says what
 * else counts as an answer). `cpu` pins it with taskset. The returned pid is the server's own
 * (taskset execs it).
 */
export async function startServer(
  name,
  command,
  args,
  port,
  readyPath,
  { env = {}, cpu, headers = {}, ready = (response) => response.ok } = {},
) {
  const [file, argv] = cpu === undefined ? [command, args] : ['taskset', ['-c', String(cpu), command, ...args]];
  const child = spawn(file, argv, { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } });
  children.add(child);
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr = (stderr + chunk).slice(-4000)));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const startedAt = Date.now();
  const deadline = startedAt + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited: ${stderr}`);
    try {
      if (ready(await fetch(`http://127.0.0.1:${port}${readyPath}`, { headers }))) break;
    } catch {
      // not yet
    }
    if (Date.now() > deadline) throw new Error(`${name} not ready: ${stderr}`);
    await sleep(100);
  }
  return {
    name,
    pid: child.pid,
    url: `http://127.0.0.1:${port}/metrics`,
    readyAfterMs: Date.now() - startedAt,
    stderr: () => stderr,
    async stop() {
      if (child.exitCode === null) process.kill(child.pid, 'SIGTERM');
      const timer = setTimeout(() => child.exitCode === null && process.kill(child.pid, 'SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
      children.delete(child);
    },
  };
}

/** Kill whatever is still running (on error or Ctrl-C). */
export function stopAll() {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
}

/** CPU of the process, all its threads, since it started: own and that of its reaped children. */
export async function cpuTicks(pid) {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { own: Number(fields[11]) + Number(fields[12]), children: Number(fields[13]) + Number(fields[14]) };
}

export async function cpuSeconds(pid) {
  return (await cpuTicks(pid)).own / CLK_TCK;
}

export async function memoryKiB(pid) {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const field = (name) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)[1]);
  return { rss: field('VmRSS'), hwm: field('VmHWM') };
}

/** Context switches (voluntary + involuntary) summed over every live thread, and the thread count. */
export async function contextSwitches(pid) {
  let total = 0;
  let threads = 0;
  for (const task of await readdir(`/proc/${pid}/task`)) {
    let status;
    try {
      status = await readFile(`/proc/${pid}/task/${task}/status`, 'utf8');
    } catch {
      continue; // the thread ended in between
    }
    threads += 1;
    for (const name of ['voluntary_ctxt_switches', 'nonvoluntary_ctxt_switches'])
      total += Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(status)[1]);
  }
  return { total, threads };
}

/**
 * One scrape as Prometheus makes it (Accept-Encoding: gzip unless `plain`): status, the bytes on
 * the wire, and the text.
 */
export function scrape(url, { plain = false } = {}) {
  return new Promise((resolve, reject) => {
    const headers = plain ? {} : { 'accept-encoding': 'gzip' };
    const req = request(url, { headers, agent: false }, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        const body = Buffer.concat(chunks);
        const gzip = res.headers['content-encoding'] === 'gzip';
        resolve({ status: res.statusCode, bytes: body.length, gzip, text: (gzip ? gunzipSync(body) : body).toString('utf8') });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

export function nodeExporterVersion() {
  try {
    return execFileSync('prometheus-node-exporter', ['--version'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).split('\n')[0];
  } catch {
    throw new Error('prometheus-node-exporter is not installed: apt-get install -y prometheus-node-exporter');
  }
}

/** node_exporter with only its InfiniBand collector, on `root`. */
export function startNodeExporter(root, port, options) {
  return startServer(
    'node_exporter',
    'prometheus-node-exporter',
    ['--collector.disable-defaults', '--collector.infiniband', `--path.sysfs=${root}`, `--web.listen-address=127.0.0.1:${port}`],
    port,
    '/metrics',
    options,
  );
}

/** Build dist/; returns the tree generator, generateTree(root, devices, portsPerDevice). */
export async function prepare() {
  log('building dist/');
  await run('npm', ['run', 'build', '--silent'], { limitMs: 300_000 });
  const { generateTree } = await importTypeScript('synthetic/generate-tree.ts');
  return generateTree;
}

/** The machine, for a section's footer; `nodeExporter: false` for sections that do not run it. */
export function machineFacts(loadBefore, loadAfter, extra = [], { nodeExporter = true } = {}) {
  const cpus = os.cpus();
  return [
    `- CPU: ${cpus[0]?.model ?? 'unknown'}, ${cpus.length} cores`,
    `- Memory: ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB; kernel ${os.release()}; sysfs trees on ${execFileSync('df', ['--output=fstype', os.tmpdir()], { encoding: 'utf8' }).split('\n')[1]?.trim()} (${os.tmpdir()})`,
    nodeExporter
      ? `- Node.js ${process.version}; ${nodeExporterVersion()} (Debian package, \`--collector.disable-defaults --collector.infiniband\`)`
      : `- Node.js ${process.version}`,
    ...extra,
    `- Load average (1 min) at the start / end of the section: ${loadBefore.toFixed(2)} / ${loadAfter.toFixed(2)}`,
    `- Date: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC`,
  ].join('\n');
}

/**
 * Where the exporter's main thread was during an event-loop block (event-loop-monitor.cjs): on a
 * CPU, waiting for one (runnable, the cores taken by other processes), and its threads' CPU.
 */
export function blockWhere(block) {
  if (block.cpuMs === undefined) return '';
  return ` (main thread on a CPU ${block.cpuMs} ms, waiting for one ${block.waitMs} ms; all threads ${block.processCpuMs} ms of CPU)`;
}

/** The runs of the fake tools, from the log they append to (FAKE_TOOLS_LOG: start and end in ms, the command, what it printed); none before the file exists. */
export async function toolRuns(file) {
  const text = await readFile(file, 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [start, end, command, printed] = line.split('\t');
      return { start: Number(start), end: Number(end), command, bytes: Number(/bytes=(\d+)/.exec(printed)?.[1] ?? 0) };
    });
}

/** The value of an unlabelled sample `name` in exposition `text`; NaN when it is not there. */
export const sampleValue = (text, name) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);

export const fmt = (v, digits = 1) => (v >= 100 ? v.toFixed(0) : v.toFixed(digits));
export const mark = (ok) => (ok ? 'met' : '**missed**');
