// Executables that stand in for the fabric-mode tools, replaying a scenario (a generated fabric
// written by scenario.ts, or a recorded one): the exporter runs them through its real command
// runner with --ibnetdiscover.path … like the real ones. One bundled program (replay-tool.ts) does
// the replaying; each tool is a shell wrapper that runs it with the scenario and the tool's name.
import { existsSync, readFileSync } from 'node:fs';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { recordedCommands, samplesControlAsIbsim } from '../fabric-replay.js';

export const FAKE_TOOLS = ['ibnetdiscover', 'iblinkinfo', 'ibqueryerrors', 'saquery', 'sminfo', 'perfquery'] as const;
export type FakeTool = (typeof FAKE_TOOLS)[number];
/** Slurm's squeue, replaying a scenario written with jobs; not among the fabric flags of fakeToolFlags (a site gives --squeue.path itself). */
export const FAKE_JOB_TOOLS = ['squeue'] as const;

/** The project's root: found upwards from this module, whether it runs from source or from a bundle. */
function projectRoot(): string {
  for (let dir = path.dirname(fileURLToPath(import.meta.url)); dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const manifest = path.join(dir, 'package.json');
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === 'infiniband-exporter')
      return dir;
  }
  throw new Error('the infiniband-exporter project root is not above this module');
}

const quote = (text: string): string => `'${text.replaceAll("'", "'\\''")}'`;

export interface FakeToolOptions {
  /** Append a line per run (start and end in ms since the epoch, the command, what it printed) to this file. */
  log?: string;
  /**
   * Run the replaying program at this niceness (`nice -n`, and its autogroup's: autogroupNice).
   * The benchmarks pass 19: the real tools are C programs that mostly wait on the fabric's answers,
   * where the replay is a Node.js process busy for a fraction of a second (a sweep at 250 000
   * ports: 0.37 s of CPU), which on the benchmark's two cores otherwise takes the CPU from the
   * exporter it stands beside.
   */
  nice?: number;
}

/**
 * Write `<bin>/replay-tool.mjs` and one wrapper per tool in `bin` (created); returns the tools'
 * paths, for the exporter's `--<tool>.path` flags.
 */
export async function fakeFabricTools(
  scenarioDir: string,
  bin: string,
  options: FakeToolOptions = {},
): Promise<Record<FakeTool | (typeof FAKE_JOB_TOOLS)[number], string>> {
  await mkdir(bin, { recursive: true });
  const program = path.join(bin, 'replay-tool.mjs');
  await build({
    entryPoints: [path.join(projectRoot(), 'synthetic/fabric-generator/replay-tool.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile: program,
    logLevel: 'warning',
  });
  const paths = {} as Record<FakeTool | (typeof FAKE_JOB_TOOLS)[number], string>;
  const samplesControlRecorded = [...recordedCommands(scenarioDir).keys()].some((line) => line.startsWith('perfquery -c '));
  for (const tool of [...FAKE_TOOLS, ...FAKE_JOB_TOOLS]) {
    paths[tool] = path.join(bin, tool);
    // The exporter's Node.js options are not the tools' (a profiler or preload of the exporter's own).
    const env = `NODE_OPTIONS=${options.log ? ` FAKE_TOOLS_LOG=${quote(options.log)}` : ''}`;
    const nice = options.nice === undefined ? '' : `nice -n ${options.nice} `;
    await writeFile(
      paths[tool],
      `#!/bin/sh\n${tool === 'perfquery' && !samplesControlRecorded ? samplesControlInShell() : ''}${options.nice === undefined ? '' : autogroupNice(options.nice)}${env} exec ${nice}${quote(process.execPath)} ${quote(program)} ${quote(scenarioDir)} ${tool} "$@"\n`,
    );
    await chmod(paths[tool], 0o755);
  }
  return paths;
}

/**
 * Shell lines that give the wrapper's autogroup the niceness `nice`, where the wrapper leads its own
 * session. The exporter starts every tool detached, in a session of its own (so that a timeout
 * kills the tool's whole process group), and where the kernel groups processes by session
 * (`/proc/sys/kernel/sched_autogroup_enabled`, on by default in Debian's kernels) each session is
 * scheduled as one: its processes' own niceness weighs only among themselves. A tool niced to 19
 * in a session of its own still took as much CPU as the exporter's whole session; three or four
 * at once kept the exporter's main thread waiting for a core for 130 ms (docs/benchmarks.md).
 * Writing the autogroup's niceness (proc(5), `/proc/[pid]/autogroup`) makes the tool yield as
 * `nice` says. Only a session leader writes it: a wrapper run in its caller's session would renice
 * the caller. Silent where the kernel has no autogroups.
 */
export function autogroupNice(nice: number): string {
  return `{ read -r _ _ _ _ _ session _ < /proc/$$/stat && [ "$session" = "$$" ] && echo ${nice} > /proc/$$/autogroup; } 2>/dev/null\n`;
}

/**
 * `perfquery -c <lid> <port>` answered by the wrapper itself, as the replay answers it where the
 * scenario has no recording of it (as ibsim does: samplesControlAsIbsim), without starting Node.js:
 * a discovery asks it once per switch, 1 920 times at 122 880 switch ports, and a Node.js process
 * per query (about 30 ms of CPU; the real tool, a C program, takes a millisecond or two) kept both
 * cores of the benchmark machine busy for seconds, slowing the exporter's own process starts.
 */
function samplesControlInShell(): string {
  const answer = samplesControlAsIbsim('%s');
  const format = answer.stderr.replaceAll('\\', '\\\\').replaceAll('\n', '\\n');
  return `if [ "$1" = "-c" ]; then printf ${quote(format)} "$2" >&2; exit ${answer.exitCode}; fi\n`;
}

/** The exporter's flags for the fake tools. */
export function fakeToolFlags(paths: Readonly<Record<FakeTool, string>>): string[] {
  return FAKE_TOOLS.flatMap((tool) => [`--${tool}.path`, paths[tool]]);
}
