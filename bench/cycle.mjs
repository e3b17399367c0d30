// One process, one sysfs tree: the exporter's collection cycle (sources read, snapshot published)
// against a baseline that does nothing but the same file-system calls on the same paths. Prints
// JSON. Run by bench/run.mjs, pinned to the same CPU as the servers.
import { accessSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import { access, readdir, readFile, realpath } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import pino from 'pino';
import { Collectors } from '../dist/collection/scheduler.js';
import { HOST_READING, SYSFS_FILES } from '../dist/collectors/host/host-reading.js';
import { IPOIB } from '../dist/collectors/host/ipoib.js';
import { SYSFS } from '../dist/collectors/host/sysfs/index.js';
import { parseServeCommandLine } from '../dist/commands/serve/command-line.js';
import { ExpositionBuffer } from '../dist/exposition/buffer.js';
import { buildInfo } from '../dist/metrics/build-info.js';
import { exposition } from '../dist/metrics/snapshot-metrics.js';
import { RECENT_CHANGE_MS } from '../dist/sources/sysfs-attribute.js';
import { SysfsFiles } from '../dist/sources/sysfs-files.js';

const [root, roundsText = '15'] = process.argv.slice(2);
const rounds = Number(roundsText);

/** SysfsFiles that writes down every call of one cycle: the baseline replays exactly these. */
class RecordingFiles extends SysfsFiles {
  calls = [];
  recording = false;
  read(relative, keep) {
    if (this.recording) this.calls.push(['read', this.resolve(relative)]);
    return super.read(relative, keep);
  }
  readDecimal(relative, keep) {
    if (this.recording) this.calls.push(['read', this.resolve(relative)]);
    return super.readDecimal(relative, keep);
  }
  readDecimals(directory, names, keep, values, others) {
    if (this.recording) for (const name of names) this.calls.push(['read', this.resolve(`${directory}/${name}`)]);
    super.readDecimals(directory, names, keep, values, others);
  }
  list(relative, options) {
    if (this.recording) this.calls.push(['list', this.resolve(relative)]);
    return super.list(relative, options);
  }
  directoryPresent(relative) {
    if (this.recording) this.calls.push(['access', `${this.resolve(relative)}/`]);
    return super.directoryPresent(relative);
  }
  target(relative) {
    if (this.recording) this.calls.push(['target', this.resolve(relative)]);
    return super.target(relative);
  }
}

const logger = pino({ level: 'silent' });
// As the exporter reads: files read every pass kept open. The tree was generated a moment ago; a
// host's sysfs directories have been there since boot, so the clock is set past RECENT_CHANGE_MS.
const files = new RecordingFiles(root, { keepOpen: true, now: () => Date.now() + RECENT_CHANGE_MS });
const { settings } = parseServeCommandLine(['--path.sysfs', root]);
const registry = [SYSFS, IPOIB];
const collection = new Collectors(registry, { settings, logger, mode: 'serve', provided: new Map([[SYSFS_FILES, files]]) });
const readHost = () => collection.runCycle(HOST_READING);

files.recording = true;
await readHost();
files.recording = false;
const calls = files.calls;

function baselineSync() {
  for (const [kind, file] of calls) {
    try {
      if (kind === 'read') readFileSync(file);
      else if (kind === 'list') readdirSync(file, { withFileTypes: true });
      else if (kind === 'access') accessSync(file);
      else realpathSync(file);
    } catch {
      // same outcome as the exporter's read of a missing file
    }
  }
}

async function baselineAsync() {
  for (const [kind, file] of calls) {
    try {
      if (kind === 'read') await readFile(file);
      else if (kind === 'list') await readdir(file, { withFileTypes: true });
      else if (kind === 'access') await access(file);
      else await realpath(file);
    } catch {
      // as above
    }
  }
}

async function time(run) {
  const start = performance.now();
  await run();
  return performance.now() - start;
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const samples = { cycle: [], render: [], sync: [], async: [] };
const out = new ExpositionBuffer();
for (let round = 0; round < rounds + 3; round++) {
  // Interleaved, so that a noisy moment hits all four alike; the first three rounds warm up.
  const cycle = await time(readHost);
  // As the exporter renders the host's parts: each into one buffer kept from one snapshot to the next.
  const render = await time(() => {
    for (const collector of registry) {
      out.reset();
      collector.metrics.write(collection.snapshot, out, settings);
    }
  });
  const sync = await time(baselineSync);
  const async = await time(baselineAsync);
  if (round < 3) continue;
  samples.cycle.push(cycle);
  samples.render.push(render);
  samples.sync.push(sync);
  samples.async.push(async);
}
const text = exposition(registry, settings, buildInfo(), collection.snapshot);
process.stdout.write(
  JSON.stringify({
    calls: calls.length,
    reads: calls.filter(([kind]) => kind === 'read').length,
    cycleMs: median(samples.cycle),
    renderMs: median(samples.render),
    baselineSyncMs: median(samples.sync),
    baselineAsyncMs: median(samples.async),
    exposedBytes: Buffer.byteLength(text),
  }) + '\n',
);
