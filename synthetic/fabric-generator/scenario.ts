// A generated fabric written as a replayable scenario, in the layout of the recordings of
// test/fixtures/fabric-recordings/ (see ../fabric-replay.ts): every output of the tools fabric mode runs, with
// the command lines it runs them with, written once per fabric. Large outputs go to their files in
// chunks of one node, so that a 120 000-port fabric is written in seconds without being held whole.
import { closeSync, mkdirSync, openSync, writeFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import { discoveryCache } from './cache.js';
import {
  ibnetdiscover,
  iblinkinfo,
  ibqueryerrorsCounters,
  ibqueryerrorsErrors,
  perfquery,
  saqueryGroups,
  saqueryMembers,
  saquerySmInfo,
  sminfo,
  type Sink,
} from './outputs.js';
import { SQUEUE_ARGS } from '../../src/sources/jobs/squeue.js';
import { squeueOutput, type GeneratedJob } from './jobs.js';
import type { GeneratedFabric } from './topology.js';

export interface ScenarioOptions {
  /** Also `perfquery -l`/`-x -l` of every switch (the per-switch fallback): 2 outputs per switch. */
  perSwitch?: boolean;
  /** The date in ibnetdiscover's header. */
  date?: Date;
  /** Running jobs: what `squeue` prints for them, as the jobs collector runs it. */
  jobs?: readonly GeneratedJob[];
}

/** The jobs collector's squeue command line. */
export const SQUEUE_COMMAND = ['squeue', ...SQUEUE_ARGS].join(' ');

const BUFFER_BYTES = 4 << 20;

/** Writes one output file through a buffer (the outputs are ASCII: one byte per character). */
class FileSink {
  private readonly fd: number;
  private readonly buffer = Buffer.allocUnsafe(BUFFER_BYTES);
  private used = 0;
  bytes = 0;

  constructor(file: string) {
    this.fd = openSync(file, 'w');
  }

  readonly write: Sink = (text) => {
    if (this.used + text.length > BUFFER_BYTES) this.flush();
    if (text.length > BUFFER_BYTES) {
      this.bytes += writeSync(this.fd, text, null, 'latin1');
      return;
    }
    this.used += this.buffer.write(text, this.used, 'latin1');
  };

  private flush(): void {
    let written = 0;
    while (written < this.used) written += writeSync(this.fd, this.buffer, written, this.used - written);
    this.bytes += this.used;
    this.used = 0;
  }

  close(): void {
    this.flush();
    closeSync(this.fd);
  }
}

/** The scenario's commands, as fabric mode runs them: stem → command line (cache paths as `<cache>`). */
export function scenarioCommands(fabric: GeneratedFabric, options: ScenarioOptions = {}): [string, string][] {
  const commands: [string, string][] = [
    ['ibnetdiscover', 'ibnetdiscover --cache <cache>'],
    ['iblinkinfo-switches', 'iblinkinfo --line --switches-only'],
    ['iblinkinfo-all', 'iblinkinfo --line'],
    ['errors-switches', 'ibqueryerrors --skip-sl --threshold-file /dev/null --load-cache <cache> --switch'],
    ['counters-switches', 'ibqueryerrors --skip-sl --counters --load-cache <cache> --switch'],
    ['errors-all', 'ibqueryerrors --skip-sl --threshold-file /dev/null --load-cache <cache>'],
    ['counters-all', 'ibqueryerrors --skip-sl --counters --load-cache <cache>'],
    ['smir', 'saquery SMIR'],
    ['groups', 'saquery -g'],
    ['members', 'saquery -m'],
    ...fabric.subnetManagers.map((sm): [string, string] => [`sminfo-${sm.port.node.lid}`, `sminfo ${sm.port.node.lid}`]),
  ];
  if (options.jobs) commands.push(['squeue', SQUEUE_COMMAND]);
  if (options.perSwitch) {
    for (const node of fabric.listed) {
      if (node.kind !== 'switch') continue;
      commands.push([`perfquery-${node.lid}-basic`, `perfquery -l ${node.lid} 1-${node.portCount}`]);
      commands.push([`perfquery-${node.lid}-extended`, `perfquery -x -l ${node.lid} 1-${node.portCount}`]);
    }
  }
  return commands;
}

export interface WrittenScenario {
  dir: string;
  /** Bytes of each output, by stem. */
  bytes: Map<string, number>;
}

/** Write every output of `fabric` under `dir` (created). */
export function writeScenario(fabric: GeneratedFabric, dir: string, options: ScenarioOptions = {}): WrittenScenario {
  mkdirSync(dir, { recursive: true });
  const bytes = new Map<string, number>();
  const output = (stem: string, render: (sink: Sink) => number | void): void => {
    const sink = new FileSink(path.join(dir, `${stem}.stdout`));
    const exitCode = render(sink.write) ?? 0;
    sink.close();
    bytes.set(stem, sink.bytes);
    writeFileSync(path.join(dir, `${stem}.stderr`), '');
    writeFileSync(path.join(dir, `${stem}.exit`), `${exitCode}\n`);
  };
  output('ibnetdiscover', (sink) => ibnetdiscover(fabric, sink, options.date));
  writeFileSync(path.join(dir, 'topology.cache'), discoveryCache(fabric));
  output('iblinkinfo-switches', (sink) => iblinkinfo(fabric, sink, { switchesOnly: true }));
  output('iblinkinfo-all', (sink) => iblinkinfo(fabric, sink, { switchesOnly: false }));
  output('errors-switches', (sink) => ibqueryerrorsErrors(fabric, sink, { switchesOnly: true }));
  output('counters-switches', (sink) => ibqueryerrorsCounters(fabric, sink, { switchesOnly: true }));
  output('errors-all', (sink) => ibqueryerrorsErrors(fabric, sink, { switchesOnly: false }));
  output('counters-all', (sink) => ibqueryerrorsCounters(fabric, sink, { switchesOnly: false }));
  output('smir', (sink) => saquerySmInfo(fabric, sink));
  output('groups', (sink) => saqueryGroups(fabric, sink));
  output('members', (sink) => saqueryMembers(fabric, sink));
  for (const [lid, text] of sminfo(fabric)) output(`sminfo-${lid}`, (sink) => sink(text));
  if (options.jobs) output('squeue', (sink) => sink(squeueOutput(options.jobs!)));
  if (options.perSwitch) {
    for (const node of fabric.listed) {
      if (node.kind !== 'switch') continue;
      output(`perfquery-${node.lid}-basic`, (sink) => sink(perfquery(fabric, node, false)));
      output(`perfquery-${node.lid}-extended`, (sink) => sink(perfquery(fabric, node, true)));
    }
  }
  writeFileSync(
    path.join(dir, 'commands.tsv'),
    scenarioCommands(fabric, options)
      .map(([stem, line]) => `${stem}\t${line}\n`)
      .join(''),
  );
  return { dir, bytes };
}
