// Fabric mode at AI-cluster scale, on generated fabrics (synthetic/fabric-generator/) replayed
// by fake tools through the exporter's real command runner: the 1 918-node fat tree of the ibsim
// section, a three-tier fat tree of 24 576 hosts on 64-port switches (1 920 switches, 122 880
// switch ports) whole, and one shard of four of it, each at --fabric.interval 60s and every other
// setting at its default (--diag.timeout 5s; the shard once more with 30s). For each: when the first ports cycle is done, the
// cycles' durations, the exporter's CPU over one interval (its ports cycle, its SA cycle and one
// gzip scrape), peak RSS, series per switch port (and by family), bytes and time of a scrape with
// and without gzip, the event loop's longest block (bench/event-loop-monitor.cjs, loaded with
// --require) and the commands killed at their time limit. `--cpu-prof` also profiles each run and
// sums its samples by function and by phase (discovery, iblinkinfo, the sweeps, render, gzip…).
// The fake tools' own CPU is theirs, not the exporter's (it is counted in its children's time).
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { CLK_TCK, MAIN, PROJECT, blockWhere, cpuTicks, fmt, freePort, log, memoryKiB, scrape, sleep, toolRuns } from '../support.mjs';
import { aiClusterSpec, fabricExporterArgs, launcherEnv, launcherFlags, toolsNice } from '../ai-cluster.mjs';
import { importTypeScript } from '../typescript.mjs';

const INTERVAL_S = 60;
const MONITOR = path.join(PROJECT, 'bench/event-loop-monitor.cjs');

/** The fabrics: the ibsim section's, as it is there (healthy, ibsim's port profile), and the AI cluster with a few faults. */
const FABRICS = {
  small: (g) => ({ shape: { tiers: 2, spines: 18, leaves: 100, hostsPerLeaf: 18 }, profile: g.ibsimProfile('QDR'), origin: 'H1_2' }),
  large: (g) => aiClusterSpec(g),
  // Issue 36's 250 000-port fabric: the generator at 50 000 hosts, in four shards (named runs only).
  huge: (g) => aiClusterSpec(g, 50_000),
};

const TREE_NAMES = { small: 'the 1 918-node tree', large: 'the 24 576-host tree', huge: 'the 50 000-host tree' };

/** Running jobs on a fabric (issue 34), printed by the fake squeue; the small fabric, as ibsim's section, has none. */
const JOBS = { large: { count: 2000, seed: 34 }, huge: { count: 2000, seed: 36 } };
const withJobs = (testCase) => JOBS[testCase.fabric] !== undefined && testCase.jobs !== false;

const CASES = [
  { id: 'small', name: '1 918 nodes (5 400 switch ports), whole', fabric: 'small', shard: undefined, flags: [] },
  { id: 'whole', name: '24 576 hosts (122 880 switch ports), whole', fabric: 'large', shard: undefined, flags: [] },
  { id: 'shard', name: '24 576 hosts, shard 1 of 4', fabric: 'large', shard: '1/4', flags: [] },
  // The same with a time limit long enough that the exporter's own pauses kill no command: what a
  // cycle costs when it completes.
  {
    id: 'shard-30s',
    name: '24 576 hosts, shard 1 of 4, `--diag.timeout 30s`',
    fabric: 'large',
    shard: '1/4',
    flags: ['--diag.timeout', '30s'],
  },
  // The shard without --squeue.path, beside the shard in one run: what the jobs cost (only when named).
  { id: 'shard-no-jobs', name: '24 576 hosts, shard 1 of 4, no jobs', fabric: 'large', shard: '1/4', flags: [], jobs: false, named: true },
  // Each shard of the 250 000-port fabric, within the goals of one whole 122 880-port instance.
  ...[1, 2, 3, 4].map((index) => ({
    id: `huge-${index}`,
    name: `50 000 hosts, shard ${index} of 4`,
    fabric: 'huge',
    shard: `${index}/4`,
    flags: [],
    named: true,
  })),
];

/** The generator, the fake tools and the ibsim harness, from their TypeScript. */
async function harness() {
  const [generator, { Lab }] = await Promise.all([
    importTypeScript('synthetic/fabric-generator/index.ts'),
    importTypeScript('synthetic/ibsim-lab.ts'),
  ]);
  return { ...generator, Lab };
}

/**
 * The real tools' printing code on the generated cache of the large fabric: `ibnetdiscover
 * --load-cache` prints the topology from it, `iblinkinfo --load-cache` the ports (it needs a umad
 * port: a small ibsim lab gives it one). Each must be the generated text, byte for byte.
 */
async function fullSizeFormats(g, scenario) {
  const undated = (text) => text.replace(/^# Topology file: generated on .*$/m, '');
  const cache = path.join(scenario, 'topology.cache');
  const lab = await g.Lab.start(path.join(PROJECT, 'test/fixtures/ibsim-topologies/two-hosts.net')).catch(() => undefined);
  if (!lab) return 'not checked: ibsim is not installed';
  try {
    const discovered = await lab.run('Hca1', 'ibnetdiscover', ['--load-cache', cache], 300_000);
    const scanned = await lab.run('Hca1', 'iblinkinfo', ['--line', '--switches-only', '--load-cache', cache], 300_000);
    const same = [
      undated(discovered.stdout) === undated(await readFile(path.join(scenario, 'ibnetdiscover.stdout'), 'utf8')),
      scanned.stdout === (await readFile(path.join(scenario, 'iblinkinfo-switches.stdout'), 'utf8')),
    ];
    return `\`ibnetdiscover --load-cache\` ${same[0] ? 'identical' : '**differs**'}, \`iblinkinfo --line --switches-only --load-cache\` ${same[1] ? 'identical' : '**differs**'}`;
  } finally {
    await lab.stop();
  }
}

async function waitUntil(what, probe, timeoutMs, everyMs = 100) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`fabric-scale: timed out waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** One timed scrape. */
async function timedScrape(url, plain) {
  const started = performance.now();
  const result = await scrape(url, { plain });
  return { ...result, ms: performance.now() - started };
}

const sampleLines = (text) => text.split('\n').filter((line) => line !== '' && !line.startsWith('#'));
const sampleValue = (text, series) => Number(new RegExp(`^${series.replace(/[{}"]/g, (c) => `\\${c}`)} (\\S+)$`, 'm').exec(text)?.[1]);

/** Series by metric family (histogram/summary suffixes folded into their family). */
function families(text) {
  const counts = new Map();
  for (const line of sampleLines(text)) {
    const name = line.slice(0, line.search(/[{ ]/));
    counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  return counts;
}

/**
 * What a profile's samples were doing: the first frame, walking up the stack from the sampled
 * function, that names a phase. A garbage-collector sample goes to the phase of the sample before
 * it (the code whose allocations started the collection).
 */
const PHASES = [
  ['link expectations', /^(expectationsOf|discoveredExpectations|expectationOf|bestCommonEnabled|forLink)$/],
  ['discovery: ibnetdiscover text parse', /^(parseIbnetdiscover|IbnetdiscoverParser)$/],
  [
    'discovery: cache parse and topology',
    /^(parseDiscoveryCache|parseDiscoveryCacheSteps|buildTopology|buildTopologySteps|discoveryGapsSteps|countDuplicateLids|nodesByPortGuid|nodesByPortGuidSteps|discoverFabric|discover)$/,
  ],
  ['ports: iblinkinfo parse', /^(parseIblinkinfo|IblinkinfoParser)$/],
  ['ports: ibqueryerrors parse', /^(parseIbqueryerrors|IbqueryerrorsParser)$/],
  [
    'ports: readings from the scan and sweeps',
    /^(scanPorts|scanOf|scanGapsSteps|portReadings|portTrend|sweepCounters|sweepCache|pruneDiscoveryCache|pruneDiscoveryCacheSteps|valuesByPort|failedQueries|trafficCounters|errorCounter|readFabricPorts|readPorts)$/,
  ],
  [
    'SA cycle',
    /^(readSubnetAdministration|readSubnetManagers|readMulticastGroups|parseMemberCounts|parseMulticastGroups|parseSmInfoRecords)$/,
  ],
  ['render: exposition parts', /^(writeMetrics|writeSteps|each|render|of)$/],
  ['gzip', /^(gzipSync|compress|zlibBufferSync|processChunkSync|deflateAside|crc32)$/],
  ['scrape: joining the parts', /^joinParts$/],
  ['snapshot publication', /^(publish|setFabric)$/],
  [
    'landing page (the benchmark polls it until the first ports cycle)',
    /^(fabricOverview|fabricOverviewSteps|landingPage|landingPageSteps|findingsSteps|portFindingsSteps)$/,
  ],
  ['commands: spawning, reading their output', /^(spawn|onStreamRead|getStreamContents|execaCoreAsync|handleEarlyError)$/],
];

async function summariseProfile(dir) {
  const files = (await readdir(dir)).filter((file) => file.endsWith('.cpuprofile'));
  if (files.length === 0) return undefined;
  const profile = JSON.parse(await readFile(path.join(dir, files[0]), 'utf8'));
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const phaseOf = new Map();
  const phase = (id) => {
    if (!phaseOf.has(id)) {
      let found;
      for (let at = id; found === undefined && at !== undefined; at = parent.get(at))
        found = PHASES.find(([, pattern]) => pattern.test(nodes.get(at).callFrame.functionName))?.[0];
      phaseOf.set(id, found ?? 'other');
    }
    return phaseOf.get(id);
  };
  const self = new Map();
  const phases = new Map();
  let busy = 0;
  let previous = 'other';
  profile.samples.forEach((id, i) => {
    const ms = (profile.timeDeltas[i] ?? 0) / 1000;
    const frame = nodes.get(id).callFrame;
    const name = frame.functionName || '(anonymous)';
    if (name === '(idle)') return;
    busy += ms;
    const key = `${name} ${frame.url ? `${path.basename(frame.url)}:${frame.lineNumber + 1}` : ''}`.trim();
    self.set(key, (self.get(key) ?? 0) + ms);
    const current = name === '(garbage collector)' ? previous : name === '(program)' ? 'V8 and Node.js internals' : phase(id);
    if (name !== '(garbage collector)' && name !== '(program)') previous = current;
    phases.set(current, (phases.get(current) ?? 0) + ms);
  });
  return {
    busy,
    gc: self.get('(garbage collector)') ?? 0,
    self: [...self].sort((a, b) => b[1] - a[1]).slice(0, 25),
    phases: [...phases].sort((a, b) => b[1] - a[1]),
  };
}

/** One exporter run on a scenario. */
async function measure(g, testCase, scenario, dir, cpuProf) {
  const work = await mkdtemp(path.join(dir, 'run-'));
  const toolsLog = path.join(work, 'tools.log');
  const tools = await g.fakeFabricTools(scenario, path.join(work, 'bin'), { log: toolsLog, nice: toolsNice() });
  const monitor = path.join(work, 'event-loop.json');
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const args = [
    // With --launcher-flags: the Node.js flags the launchers pass (bench/ai-cluster.mjs says why not by default).
    ...(await launcherFlags(path.dirname(MAIN))),
    '--require',
    MONITOR,
    ...(cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${path.join(work, 'profile')}`] : []),
    ...(await fabricExporterArgs(g, { main: MAIN, work, tools, port, interval: `${INTERVAL_S}s`, shard: testCase.shard })),
    ...testCase.flags,
    // As a site would: Slurm's squeue by its path, every other jobs flag at its default (--jobs.interval 30s).
    ...(withJobs(testCase) ? ['--squeue.path', tools.squeue] : []),
  ];
  const started = Date.now();
  const child = spawn(process.execPath, args, {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, ...(await launcherEnv(path.dirname(MAIN))), IBX_EVENT_LOOP_REPORT: monitor },
  });
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr = (stderr + chunk).slice(-4000)));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const scrapes = [];
  try {
    // The first ports cycle is over when the landing page counts ports read; it is asked (an
    // overview of every port, not free) only once the cycle's three commands are done.
    await waitUntil(
      "the first ports cycle's commands",
      async () => {
        if (child.exitCode !== null) throw new Error('exporter exited');
        const runs = await toolRuns(toolsLog);
        return runs.some((run) => run.command.startsWith('iblinkinfo')) &&
          runs.filter((run) => run.command.startsWith('ibqueryerrors')).length >= 2
          ? true
          : undefined;
      },
      600_000,
      250,
    );
    await waitUntil(
      'the first ports cycle',
      async () => {
        const page = await fetch(`${url}/`).then(
          (response) => response.text(),
          () => '',
        );
        return Number(/<dt>ports read<\/dt><dd>(\d+)/.exec(page)?.[1] ?? 0) > 0 ? true : undefined;
      },
      600_000,
      1000,
    );
    // With jobs, the first jobs reading (every footprint computed) is done too.
    if (withJobs(testCase))
      await waitUntil(
        'the first jobs reading',
        async () =>
          (await scrape(`${url}/metrics`, {})).text.includes('infiniband_exporter_collector_duration_seconds{collector="jobs"}')
            ? true
            : undefined,
        600_000,
        1000,
      );
    const plainStart = Date.now();
    const plain = await timedScrape(`${url}/metrics`, true);
    scrapes.push([plainStart, Date.now(), 'plain scrape']);
    const firstCycleS =
      sampleValue(plain.text, 'infiniband_exporter_last_collection_timestamp_seconds{collector="fabric_ports"}') - started / 1000;

    // One interval, from the start of a ports cycle (its iblinkinfo) to the start of the next.
    const cycleStarts = async () =>
      (await toolRuns(toolsLog)).filter((run) => run.command.startsWith('iblinkinfo')).map((run) => run.start);
    const seen = (await cycleStarts()).length;
    const first = await waitUntil(
      'the next ports cycle',
      async () => ((await cycleStarts()).length > seen ? (await cycleStarts())[seen] : undefined),
      180_000,
    );
    const cpuBefore = await cpuTicks(child.pid);
    await sleep(Math.max(0, first + 45_000 - Date.now()));
    const gzipStart = Date.now();
    const gzip = await timedScrape(`${url}/metrics`, false);
    scrapes.push([gzipStart, Date.now(), 'gzip scrape']);
    const second = await waitUntil(
      'the ports cycle after',
      async () => ((await cycleStarts()).length > seen + 1 ? (await cycleStarts())[seen + 1] : undefined),
      180_000,
    );
    const cpuAfter = await cpuTicks(child.pid);
    const windowS = (second - first) / 1000;
    const hwm = (await memoryKiB(child.pid)).hwm / 1024;
    const final = await scrape(`${url}/metrics`, { plain: true });

    const switchPorts = sampleLines(plain.text).filter((line) => line.startsWith('infiniband_fabric_port_state_id{')).length;
    const timeouts = sampleLines(final.text).filter(
      (line) => line.startsWith('infiniband_exporter_command_timeouts_total{') && !line.endsWith(' 0'),
    );
    const success = Object.fromEntries(
      ['fabric_discovery', 'fabric_ports', 'fabric_sa'].map((collector) => [
        collector,
        sampleValue(final.text, `infiniband_exporter_collector_success{collector="${collector}"}`),
      ]),
    );
    const jobLines = sampleLines(plain.text).filter((line) => line.startsWith('infiniband_job_'));
    const hostsIn = (state) =>
      jobLines
        .filter((line) => line.startsWith('infiniband_job_hosts{') && line.includes(`state="${state}"`))
        .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
    const squeueRuns = (await toolRuns(toolsLog)).filter((run) => run.command.startsWith('squeue'));
    return {
      testCase,
      jobs: withJobs(testCase) && {
        generated: JOBS[testCase.fabric].count,
        served: jobLines.filter((line) => line.startsWith('infiniband_job_info{')).length,
        onFabric: hostsIn('on_fabric'),
        notFound: hostsIn('not_found'),
        series: jobLines.length,
        firstReadingS: sampleValue(plain.text, 'infiniband_exporter_collector_duration_seconds{collector="jobs"}'),
        laterReadingS: sampleValue(final.text, 'infiniband_exporter_collector_duration_seconds{collector="jobs"}'),
        squeueS: squeueRuns.length > 0 ? (squeueRuns[0].end - squeueRuns[0].start) / 1000 : undefined,
        readings: squeueRuns.length,
        success: sampleValue(final.text, 'infiniband_exporter_collector_success{collector="jobs"}'),
      },
      switchPorts,
      firstCycleS,
      discoveryS: sampleValue(final.text, 'infiniband_exporter_collector_duration_seconds{collector="fabric_discovery"}'),
      portsS: sampleValue(final.text, 'infiniband_exporter_collector_duration_seconds{collector="fabric_ports"}'),
      saS: sampleValue(final.text, 'infiniband_exporter_collector_duration_seconds{collector="fabric_sa"}'),
      cpuPerInterval: ((cpuAfter.own - cpuBefore.own) / CLK_TCK) * (INTERVAL_S / windowS),
      windowS,
      hwm,
      series: sampleLines(plain.text).length,
      families: families(plain.text),
      plainBytes: plain.bytes,
      plainMs: plain.ms,
      gzipBytes: gzip.bytes,
      gzipMs: gzip.ms,
      gzipped: gzip.gzip,
      timeouts,
      success,
      scrapes,
      // Blocks from here on are the steady state's: discovery, the first ports cycle (and the first jobs reading) are done.
      steadyFrom: plainStart,
      toolsLog,
      monitor,
      work,
      profileDir: cpuProf ? path.join(work, 'profile') : undefined,
    };
  } catch (error) {
    // A scrape's "socket hang up" says nothing of why: the exporter's last words (or that it still ran) do.
    const state =
      child.exitCode !== null || child.signalCode !== null
        ? `exporter ended (${child.exitCode ?? child.signalCode})`
        : 'exporter still running';
    throw new Error(`${testCase.name}: ${error.message}; ${state}; its last output:\n${stderr}`, { cause: error });
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
}

/**
 * The event loop's blocks of a run, each named by what it most likely was: a scrape it fell in, or
 * the parse of the largest output that came in during the 5 s before it (cycles overlap: the last
 * command to end is often a small one).
 */
async function eventLoop(result) {
  const report = JSON.parse(await readFile(result.monitor, 'utf8'));
  const runs = await toolRuns(result.toolsLog);
  const named = report.blocks.map((block) => {
    const scrapeAt = result.scrapes.find(([from, to]) => block.at >= from - 50 && block.at <= to);
    if (scrapeAt) return { ...block, after: scrapeAt[2] };
    const before = runs.filter((run) => run.end <= block.at + 50 && run.end >= block.at - 5000).sort((a, b) => b.bytes - a.bytes)[0];
    return { ...block, after: before ? `after \`${before.command.replace(/ \/\S+/g, ' …')}\`` : 'no command before it' };
  });
  named.sort((a, b) => b.ms - a.ms);
  return { maxMs: report.maxMs, startMs: report.startMs, blocks: named };
}

/** `--case=shard[,shard-no-jobs…]`: only those runs (ids of CASES), written between markers of their own (`fabric-scale-cases`). */
export async function fabricScale({ quick, cpuProf, cases }) {
  const loadBefore = os.loadavg()[0];
  log('fabric-scale: loading the fabric generator and the fake tools');
  const g = await harness();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'ibx-fabric-scale-'));
  const results = [];
  const sizes = {};
  const scenarios = {};
  const chosen = cases ? CASES.filter((one) => cases.includes(one.id)) : quick ? CASES.slice(0, 1) : CASES.filter((one) => !one.named);
  // The real tools' check of the 24 576-host tree's outputs, where a run writes it.
  let formats = chosen.some((one) => one.fabric === 'large') ? 'not checked' : undefined;
  try {
    if (cases && chosen.length !== cases.length)
      throw new Error(`fabric-scale: unknown case in ${cases.join(',')}; cases: ${CASES.map((one) => one.id).join(', ')}`);
    for (const testCase of chosen) {
      if (!scenarios[testCase.fabric]) {
        const started = performance.now();
        const fabric = g.generateFabric(FABRICS[testCase.fabric](g));
        const jobs = JOBS[testCase.fabric] && g.generateJobs(fabric, JOBS[testCase.fabric]);
        const written = g.writeScenario(fabric, path.join(dir, testCase.fabric), { jobs });
        sizes[testCase.fabric] = { seconds: (performance.now() - started) / 1000, bytes: written.bytes, ...g.shapeSize(fabric.spec.shape) };
        scenarios[testCase.fabric] = written.dir;
        log(`fabric-scale: ${testCase.fabric} fabric written in ${sizes[testCase.fabric].seconds.toFixed(1)} s`);
        if (testCase.fabric === 'large') formats = await fullSizeFormats(g, written.dir);
      }
      log(`fabric-scale: ${testCase.name}`);
      const result = await measure(g, testCase, scenarios[testCase.fabric], dir, cpuProf);
      result.eventLoop = await eventLoop(result);
      if (result.profileDir) result.profile = await summariseProfile(result.profileDir);
      results.push(result);
    }
    const text = markdown(results, sizes, formats, machine(loadBefore, os.loadavg()[0]), cpuProf);
    return cases ? { marker: 'fabric-scale-cases', markdown: text } : text;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function machine(loadBefore, loadAfter) {
  return `Machine: ${os.cpus()[0]?.model ?? 'unknown'}, ${os.cpus().length} cores, ${fmt(os.totalmem() / 2 ** 30)} GiB; Node.js ${process.version}; load average (1 min) before / after: ${loadBefore.toFixed(2)} / ${loadAfter.toFixed(2)}; ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC.`;
}

const s = (seconds) => `${fmt(seconds)} s`;
const mib = (bytes) => `${fmt(bytes / 2 ** 20)} MiB`;
const n = (value) => Math.round(value).toLocaleString('en-US').replace(/,/g, ' ');

/** The jobs of each run with jobs: what shard 1 serves of them, and what reading them cost. */
function jobsTable(results) {
  const withJobs = results.filter((r) => r.jobs);
  if (withJobs.length === 0) return [];
  return [
    "Jobs per run (from the scrape after the first ports cycle; the jobs collector's own durations, the first reading computing every footprint, a later one none):",
    '',
    '| run | jobs in squeue | jobs served (at least 2 hosts) | hosts on the fabric / not found | job series | first jobs reading (of it squeue) | a later reading | squeue runs in the run | jobs collector succeeded |',
    '|---|---|---|---|---|---|---|---|---|',
    ...withJobs.map(
      ({ testCase, jobs: j }) =>
        `| ${testCase.name} | ${n(j.generated)} | ${n(j.served)} | ${n(j.onFabric)} / ${n(j.notFound)} | ${n(j.series)} | ${s(j.firstReadingS)} (${j.squeueS === undefined ? '?' : s(j.squeueS)}) | ${s(j.laterReadingS)} | ${j.readings} | ${j.success === 1 ? 'yes' : '**no**'} |`,
    ),
    '',
  ];
}

function markdown(results, sizes, formats, machine, cpuProf) {
  const shard = results.find((r) => r.testCase.shard && r.success.fabric_ports === 1) ?? results.at(-1);
  const rows = results.map((r) => {
    const block = r.eventLoop.blocks[0];
    const killed =
      r.timeouts.length === 0
        ? 'none'
        : r.timeouts.map((line) => line.replace(/^infiniband_exporter_command_timeouts_total\{command="([^"]+)"\} /, '$1 ×')).join(', ');
    // A collector without a success series did not run there (the SA cycle runs in shard 1 only).
    const failed = Object.entries(r.success)
      .filter(([, ok]) => ok !== 1 && !Number.isNaN(ok))
      .map(([collector]) => collector);
    return `| ${r.testCase.name} | ${n(r.switchPorts)} | ${s(r.firstCycleS)} (discovery ${s(r.discoveryS)}) | ${s(r.portsS)} | ${Number.isNaN(r.saS) ? '— (shard 1 reads it)' : s(r.saS)} | ${fmt(r.cpuPerInterval)} s | ${fmt(r.hwm)} MiB | ${fmt(r.series / r.switchPorts)} (${n(r.series)}) | ${mib(r.gzipBytes)} in ${s(r.gzipMs / 1000)} | ${mib(r.plainBytes)} in ${s(r.plainMs / 1000)} | ${block ? `${s(block.ms / 1000)}, ${block.after}` : `none over 100 ms (max delay ${fmt(r.eventLoop.maxMs)} ms)`} | ${killed}${failed.length ? `; failed: ${failed.join(', ')}` : ''} |`;
  });
  const byFamily = [...shard.families].sort((a, b) => b[1] - a[1]);
  const lines = [
    `Fabrics written by the generator: ${Object.entries(sizes)
      .map(
        ([name, size]) =>
          `${TREE_NAMES[name]} (${n(size.switches)} switches, ${n(size.switchPorts)} switch ports) in ${s(size.seconds)}, its counters sweep ${mib(size.bytes.get('counters-switches'))}, \`iblinkinfo\` ${mib(size.bytes.get('iblinkinfo-switches'))}, \`ibnetdiscover\` ${mib(size.bytes.get('ibnetdiscover'))}`,
      )
      .join('; ')}.`,
    ...(formats === undefined ? [] : [`Real tools on the generated cache of the 24 576-host tree: ${formats}.`]),
    ...Object.keys(sizes)
      .filter((name) => JOBS[name] !== undefined)
      .map(
        (name) =>
          `Running jobs on ${TREE_NAMES[name]}: ${n(JOBS[name].count)}, generated by \`synthetic/fabric-generator/jobs.ts\` (seed ${JOBS[name].seed}), printed by a fake \`squeue\` (${mib(sizes[name].bytes.get('squeue'))}) that the exporter runs with \`--squeue.path\`.`,
      ),
    '',
    `\`node dist/main.js --collector.fabric --fabric.interval ${INTERVAL_S}s [--fabric.shard 1/4]\`, every other flag at its default (\`--diag.timeout 5s\`) unless the run says otherwise; the fake tools replay the fabric through the exporter's command runner, at niceness 19 (and their sessions' autogroups too). The CPU is over the interval from the start of the second ports cycle to the start of the third, the cycle durations and failures are the exporter's own for the last cycle done, the killed commands those of the whole run. A block is a turn of the monitor's 20-ms timer more than 100 ms late; "max delay" is the largest value of perf_hooks' event-loop delay histogram, the longest gap between the turns of its 10-ms timer, those 10 ms included (an idle loop reads 10 ms).`,
    '',
    '| run | switch ports | first ports cycle done after | ports cycle | SA cycle | exporter CPU per 60-s interval | peak RSS | series per switch port | gzip scrape | plain scrape | longest event-loop block | commands killed at their time limit |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
    `Series per switch port by family (${shard.testCase.name}; ${n(shard.series)} series for ${n(shard.switchPorts)} switch ports):`,
    '',
    '| family | series | per switch port |',
    '|---|---|---|',
    ...byFamily
      .filter(([, count]) => count / shard.switchPorts >= 0.01)
      .map(([name, count]) => `| \`${name}\` | ${n(count)} | ${(count / shard.switchPorts).toFixed(2)} |`),
    `| the other ${byFamily.filter(([, count]) => count / shard.switchPorts < 0.01).length} families | ${n(byFamily.filter(([, count]) => count / shard.switchPorts < 0.01).reduce((sum, [, count]) => sum + count, 0))} | |`,
    '',
    ...jobsTable(results),
    'Event-loop blocks over 100 ms per run (the five longest, and what each came after):',
    '',
    ...results.map(
      (r) =>
        `- ${r.testCase.name}: start-up to the first turn of the event loop ${s(r.eventLoop.startMs / 1000)} (before anything listens; not counted); ${r.eventLoop.blocks.length} blocks (${r.eventLoop.blocks.filter((b) => b.at >= r.steadyFrom).length} after the first ports cycle), ${fmt(r.eventLoop.blocks.reduce((sum, b) => sum + b.ms, 0) / 1000)} s in all; ${
          r.eventLoop.blocks
            .slice(0, 5)
            .map((b) => `${s(b.ms / 1000)} ${b.after}${blockWhere(b)}`)
            .join('; ') || 'none'
        }`,
    ),
  ];
  if (cpuProf) {
    for (const r of results.filter((one) => one.profile)) {
      lines.push(
        '',
        `CPU profile of the whole run (\`node --cpu-prof\`), ${r.testCase.name}: ${s(r.profile.busy / 1000)} busy, ${s(r.profile.gc / 1000)} of it garbage collection. By phase (a collection counted in the phase that ran before it):`,
        '',
        '| phase | CPU |',
        '|---|---|',
      );
      lines.push(...r.profile.phases.map(([name, ms]) => `| ${name} | ${s(ms / 1000)} |`));
      lines.push(
        '',
        'Functions by self time:',
        '',
        '| function | self |',
        '|---|---|',
        ...r.profile.self.map(([name, ms]) => `| \`${name}\` | ${s(ms / 1000)} |`),
      );
    }
  }
  lines.push('', machine);
  return lines.join('\n');
}
