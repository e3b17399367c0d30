// Replaying the fabric-mode tools from recorded or generated outputs, in the layout of
// test/fixtures/fabric-recordings/<scenario>/ (stems' .stdout/.stderr/.exit, commands.tsv: stem → command
// line with the cache path written `<cache>`, topology.cache: the file `ibnetdiscover --cache`
// wrote). One lookup serves both ways of replaying: ReplayRunner (replay.ts), a CommandRunner inside
// the test process, and the fake tools (fabric-generator/fake-tools.ts), executables the exporter's
// real command runner starts. As the real tools do, a replayed `ibnetdiscover --cache FILE` writes the
// scenario's cache to FILE, and a replayed ibqueryerrors sweep reports only the nodes of the cache
// it is given (a shard's pruned copy).
import { copyFileSync, existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseDiscoveryCache } from '../src/sources/fabric/discovery-cache.js';

export const FABRIC_FIXTURES = fileURLToPath(new URL('../test/fixtures/fabric-recordings/', import.meta.url));

/** The command line as commands.tsv records it: the path after `--cache`/`--load-cache` as `<cache>`. */
export function normalisedCommand(command: string, args: readonly string[]): string {
  const words = [command];
  for (let i = 0; i < args.length; i++) {
    words.push(args[i]!);
    if (args[i] === '--cache' || args[i] === '--load-cache') words.push('<cache>'), i++;
  }
  return words.join(' ');
}

/** A scenario's command lines: line → stem. */
export function recordedCommands(dir: string): Map<string, string> {
  const table = readFileSync(path.join(dir, 'commands.tsv'), 'utf8');
  return new Map(
    table
      .split('\n')
      .filter(Boolean)
      .map((line) => {
        const [stem, command] = line.split('\t');
        return [command!, stem!];
      }),
  );
}

export interface Replayed {
  stdout: Buffer;
  stderr: string;
  exitCode: number;
}

const commandTables = new Map<string, Map<string, string>>();

/**
 * What the tool prints for `args`, from the first of `dirs` that recorded the command; undefined
 * when none did. Side effects as the tool's: `--cache FILE` gets the scenario's cache.
 */
export function replay(dirs: readonly string[], command: string, args: readonly string[]): Replayed | undefined {
  const line = normalisedCommand(command, args);
  for (const dir of dirs) {
    let table = commandTables.get(dir);
    if (!table) commandTables.set(dir, (table = recordedCommands(dir)));
    const stem = table.get(line);
    if (stem === undefined) continue;
    const base = path.join(dir, stem);
    const cacheAt = args.indexOf('--cache');
    const cache = path.join(dir, 'topology.cache');
    if (cacheAt >= 0 && existsSync(cache)) copyFileSync(cache, args[cacheAt + 1]!);
    const replayed: Replayed = {
      stdout: readFileSync(`${base}.stdout`),
      stderr: readFileSync(`${base}.stderr`, 'utf8'),
      exitCode: Number(readFileSync(`${base}.exit`, 'utf8').trim()),
    };
    const loadAt = args.indexOf('--load-cache');
    if (command === 'ibqueryerrors' && loadAt >= 0 && existsSync(args[loadAt + 1]!)) {
      return sweepOf(replayed, new Uint8Array(readFileSync(args[loadAt + 1]!)), {
        counters: args.includes('--counters'),
        switchesOnly: args.includes('--switch'),
      });
    }
    return replayed;
  }
  if (command === 'perfquery' && args[0] === '-c') return samplesControlAsIbsim(args[1] ?? '');
  return undefined;
}

/**
 * `perfquery -c <lid> …` where nobody recorded it: ibsim does not implement PortSamplesControl,
 * and every recording and generated fabric is modelled on it, so it answers as ibsim does.
 */
export function samplesControlAsIbsim(lid: string): Replayed {
  return {
    stdout: Buffer.alloc(0),
    stderr: `ibwarn: [1232] mad_rpc: _do_madrpc failed; dport (Lid ${lid})\nperfquery: iberror: failed: sampctlquery\n`,
    exitCode: 255,
  };
}

const SUMMARY = /^\n## Summary: (\d+) nodes checked, \d+ bad nodes found\n##\s+\d+ ports checked, \d+ ports have errors beyond threshold\n/;
const BLOCK_STARTS = ['Errors for ', 'Data Counters for '];
const GUID = /0x([0-9a-f]{1,16})/;
const BAD_PORT = /^ {3}GUID 0x[0-9a-f]+ port \d+:/gm;

/**
 * A sweep's output limited to the nodes of `cacheBytes`, as ibqueryerrors prints it when it loads
 * that cache: the blocks of those nodes, in order, and a summary counted over them. Cut from the
 * bytes, block by block (a block starts at a line `Errors for …` or `Data Counters for …`): a fake
 * tool at 250 000 ports otherwise spent half a second of CPU and 400 MB splitting the lines of an
 * 88-MiB output, beside the exporter on the benchmark's two cores.
 */
function sweepOf(full: Replayed, cacheBytes: Uint8Array, mode: { counters: boolean; switchesOnly: boolean }): Replayed {
  const cache = parseDiscoveryCache(cacheBytes);
  const swept = cache.nodes.filter((node) => !mode.switchesOnly || node.type === 'switch');
  const bytes = full.stdout;
  const summaryAt = bytes.lastIndexOf('\n## Summary: ');
  const summary = summaryAt < 0 ? null : SUMMARY.exec(bytes.toString('latin1', summaryAt));
  if (!summary || Number(summary[1]) === swept.length) return full;
  const nodeOf = new Map<string, string>();
  for (const node of cache.nodes) nodeOf.set(node.guid.slice(2).replace(/^0+/, ''), node.guid);
  for (const port of cache.ports) nodeOf.set(port.guid.slice(2).replace(/^0+/, ''), port.nodeGuid);
  const kept = new Set(swept.map((node) => node.guid));
  // Where each kind of block next starts (the line after a newline), searched again only once passed.
  const found = BLOCK_STARTS.map(() => 0);
  /** Where the next block starts after `from` (at a line's start), or `summaryAt`. */
  const nextBlock = (from: number): number => {
    let next = summaryAt;
    BLOCK_STARTS.forEach((start, i) => {
      if (found[i]! >= 0 && found[i]! <= from) found[i] = bytes.indexOf(`\n${start}`, from);
      if (found[i]! >= 0 && found[i]! + 1 < next) next = found[i]! + 1;
    });
    return next;
  };
  const first = BLOCK_STARTS.some((start) => bytes.subarray(0, start.length).toString('latin1') === start) ? 0 : nextBlock(0);
  const out: Buffer[] = [];
  let badNodes = 0;
  let badPorts = 0;
  for (let start = first; start < summaryAt; ) {
    const end = nextBlock(start);
    const block = bytes.toString('latin1', start, end);
    // A CA's errors header has no GUID: its first port line has the port's.
    const newline = block.indexOf('\n');
    const guid = GUID.exec(newline < 0 ? block : block.slice(0, newline)) ?? GUID.exec(block.slice(newline + 1).split('\n', 1)[0] ?? '');
    if (guid !== null && kept.has(nodeOf.get(guid[1]!.replace(/^0+/, '')) ?? '')) {
      out.push(bytes.subarray(start, end));
      if (!mode.counters) {
        badNodes += 1;
        badPorts += block.match(BAD_PORT)?.length ?? 0;
      }
    }
    start = end;
  }
  const ports = swept.reduce((sum, node) => sum + node.portCount, 0);
  const tail = bytes.subarray(summaryAt + summary[0].length);
  const stdout = Buffer.concat([
    ...out,
    Buffer.from(
      `\n## Summary: ${swept.length} nodes checked, ${badNodes} bad nodes found\n##          ${ports} ports checked, ${badPorts} ports have errors beyond threshold\n`,
      'latin1',
    ),
    tail,
  ]);
  return { stdout, stderr: full.stderr, exitCode: badPorts > 0 ? 1 : 0 };
}
