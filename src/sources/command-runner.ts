// The one way external tools are run (infiniband-diags, and any other command a source needs):
// argument arrays (never a shell), a time limit that kills the tool's whole process group, a limit
// on commands in flight and on output size. Tests inject another CommandRunner that replays
// recorded outputs. A runner is typed by the tools it may run.
import { accessSync, constants } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { nextTurn, sliceSpent, TurnClock } from '../event-loop/time-slices.js';
import { OUTPUT_BACKLOG_CHARS, type OutputLines } from './output-lines.js';

export type CommandOutcome =
  /** The tool ran to its end; see `exitCode`. */
  | 'exited'
  /** Killed at the time limit. */
  | 'timeout'
  /** Killed because stdout or stderr passed the output limit. */
  | 'output-limit'
  /** Killed because the cycle it belonged to was abandoned (deadline or shutdown). */
  | 'cancelled'
  /** Could not be started at all (ENOENT, EACCES…). */
  | 'spawn-error';

export interface CommandResult<Tool extends string = string> {
  command: Tool;
  args: readonly string[];
  outcome: CommandOutcome;
  /** Set when the tool exited by itself. */
  exitCode: number | undefined;
  /** The whole output; when it was taken line by line (`streamed`), its first STDOUT_HEAD_CHARACTERS only, for messages. */
  stdout: string;
  /** The output went to the OutputLines given to `run`, every line of it handed over before the result. */
  streamed?: true;
  stderr: string;
  durationMs: number;
}

export interface CommandRunner<Tool extends string = string> {
  /**
   * Run a tool. With `lines`, a runner that can hands the output over as it arrives (see
   * `streamed`); one that cannot (a test's recordings) returns it whole and leaves `lines` alone.
   */
  run(command: Tool, args: readonly string[], signal?: AbortSignal, lines?: OutputLines): Promise<CommandResult<Tool>>;
}

/** What a streamed result keeps of the output: enough for the one-line message of a failure. */
export const STDOUT_HEAD_CHARACTERS = 1024;

/** The command line as a person would type it, for logs and `read_errors`. */
export function commandLine(result: Pick<CommandResult, 'command' | 'args'>): string {
  return [result.command, ...result.args].join(' ');
}

/**
 * Why a command did not succeed, in one line; undefined when it exited 0. `timeoutFlag` names the
 * setting behind the time limit, for the person reading the log.
 */
export function commandFailure(result: CommandResult, timeoutMs?: number, timeoutFlag?: string): string | undefined {
  switch (result.outcome) {
    case 'exited': {
      if (result.exitCode === 0) return undefined;
      // infiniband-diags print their fatal error ("perfquery: iberror: failed: …") on stdout and
      // warnings on stderr; keep both, the first lines are enough for a log line.
      const text = [result.stdout, result.stderr]
        .map((part) => part.trim())
        .filter(Boolean)
        .join(' | ');
      const short = text.length > 300 ? `${text.slice(0, 300)}…` : text;
      return `exit code ${result.exitCode}${short ? `: ${short}` : ''}`;
    }
    case 'timeout':
      return `killed after ${timeoutMs ?? Math.round(result.durationMs)} ms time limit${timeoutFlag ? ` (${timeoutFlag})` : ''}`;
    case 'output-limit':
      return 'killed: output larger than the limit';
    case 'cancelled':
      return 'killed: the diag cycle was abandoned';
    case 'spawn-error':
      return `could not start: ${result.stderr.trim()}`;
  }
}

/** Counting semaphore: at most `limit` holders at once, waiters served in order. */
export class Semaphore {
  private active = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly limit: number) {}

  async acquire(): Promise<() => void> {
    if (this.active >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.active += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      if (next) next();
      else this.active -= 1;
    };
  }
}

export interface ExecaRunnerOptions<Tool extends string> {
  /** Absolute paths of the tools. */
  paths: Readonly<Record<Tool, string>>;
  timeoutMs: number;
  maxConcurrent: number;
  /**
   * Bytes a tool may print on each stream, whether collected whole or taken line by line: every
   * byte read counts, not only what waits to be parsed (a tool printing junk forever is parsed as
   * fast as it prints, and its junk would be held). Past it the tool is killed and the command
   * fails ('output-limit'): what was read of it is partial, never taken as the whole.
   */
  maxOutputBytes?: number;
  env?: NodeJS.ProcessEnv;
}

export const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;

// execa and its dependencies take about 75 ms and 13 MiB of resident memory to load
// (docs/benchmarks.md): loaded with the first command, so that a process that runs none (`check` on
// most hosts, a server without diag or without a port the diag tools can reach) never pays for it.
let execaModule: Promise<typeof import('execa')> | undefined;
function loadExeca(): Promise<typeof import('execa')> {
  execaModule ??= import('execa');
  return execaModule;
}

function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    // The tool was spawned detached, so it leads its own process group: this reaches any child
    // it started too (a wrapper script's `sleep`, a helper), not just the direct child.
    process.kill(-pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

export class ExecaRunner<Tool extends string> implements CommandRunner<Tool> {
  private readonly semaphore: Semaphore;
  private readonly maxOutputBytes: number;

  constructor(private readonly options: ExecaRunnerOptions<Tool>) {
    this.semaphore = new Semaphore(Math.max(1, options.maxConcurrent));
    this.maxOutputBytes = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
  }

  async run(command: Tool, args: readonly string[], signal?: AbortSignal, lines?: OutputLines): Promise<CommandResult<Tool>> {
    const release = await this.semaphore.acquire();
    try {
      return await this.spawn(command, args, signal, lines);
    } finally {
      release();
    }
  }

  private async spawn(command: Tool, args: readonly string[], signal?: AbortSignal, lines?: OutputLines): Promise<CommandResult<Tool>> {
    const started = performance.now();
    const base = { command, args, stdout: '', stderr: '', ...(lines && { streamed: true as const }) };
    if (signal?.aborted) return { ...base, outcome: 'cancelled', exitCode: undefined, durationMs: 0 };
    const { execa } = await loadExeca();
    await spawnTurn();
    if (signal?.aborted) return { ...base, outcome: 'cancelled', exitCode: undefined, durationMs: performance.now() - started };
    const subprocess = execa(this.options.paths[command], [...args], {
      detached: true,
      reject: false,
      stdin: 'ignore',
      encoding: 'utf8',
      stripFinalNewline: false,
      // Output taken line by line is handed over as it comes, never collected.
      buffer: { stdout: lines === undefined },
      maxBuffer: this.maxOutputBytes,
      env: this.options.env,
      extendEnv: this.options.env === undefined,
    });
    let killedFor: 'timeout' | 'cancelled' | 'output-limit' | undefined;
    const kill = (reason: 'timeout' | 'cancelled' | 'output-limit'): void => {
      killedFor ??= reason;
      killGroup(subprocess.pid);
      // Its output, no longer wanted, is read to its end (a pipe left paused would never end).
      subprocess.stdout?.resume();
    };
    const exited = (): boolean => subprocess.exitCode !== null || subprocess.signalCode !== null;
    // Time the tool may have spent waiting on its pipe because its output was not parsed fast
    // enough is this process's, not the tool's: the limit is extended by the time any of its
    // output waited to be parsed (a tool that stopped printing has none waiting once it is
    // parsed). Past OUTPUT_BACKLOG_CHARS the pipe is not read at all until a quarter is left.
    // (Even unpaused, a busy parser's pipe is read slowly on Node.js 24: a tool printing 14 MB at
    // once waited on it while less than a MiB was waiting, and was killed at its limit.)
    let paused = false;
    const held = (): number => lines?.busyMs() ?? 0;
    // A tool that ended while this process was busy is not killed for it: its exit is taken up
    // first, in the same turn of the event loop, before the time limit is held against it.
    const arm = (ms: number): NodeJS.Timeout =>
      setTimeout(
        () =>
          setImmediate(() => {
            if (exited()) return;
            const owed = started + this.options.timeoutMs + held() - performance.now();
            if (owed > 0) timer = arm(owed);
            else kill('timeout');
          }),
        ms,
      );
    let timer = arm(this.options.timeoutMs);
    // Whatever the tool left behind in its group is an orphan (and may hold its output pipes
    // open, e.g. after execa stopped it for too much output): end it with the tool.
    subprocess.once('exit', () => killGroup(subprocess.pid));
    // execa's maxBuffer stops collecting but leaves the tool running: stop it here at once.
    let head = '';
    for (const stream of [subprocess.stdout, subprocess.stderr]) {
      const streamed = lines !== undefined && stream === subprocess.stdout;
      let bytes = 0;
      stream?.on('data', (chunk: Buffer | string) => {
        if (killedFor) return;
        bytes += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length;
        if (bytes > this.maxOutputBytes) return kill('output-limit');
        if (!streamed) return;
        lines.write(chunk);
        if (!paused && lines.backlog > OUTPUT_BACKLOG_CHARS) {
          paused = true;
          stream.pause();
          void lines.drained(OUTPUT_BACKLOG_CHARS / 4).then(() => {
            paused = false;
            stream.resume();
          });
        }
        const room = STDOUT_HEAD_CHARACTERS - head.length;
        if (room > 0) head += typeof chunk === 'string' ? chunk.slice(0, room) : chunk.subarray(0, room).toString('utf8');
      });
    }
    const onAbort = (): void => kill('cancelled');
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const result = await subprocess;
      const durationMs = performance.now() - started;
      clearTimeout(timer);
      // The tool's time is over; what it printed may still be waiting to be parsed.
      if (lines !== undefined) await (killedFor ? lines.discard() : lines.end());
      const output = { stdout: lines === undefined ? String(result.stdout ?? '') : head, stderr: String(result.stderr ?? '') };
      if (killedFor === 'output-limit' || result.isMaxBuffer) return { ...base, outcome: 'output-limit', exitCode: undefined, durationMs };
      if (killedFor) return { ...base, ...output, outcome: killedFor, exitCode: undefined, durationMs };
      if (result.failed && result.exitCode === undefined) {
        // Not started (ENOENT, EACCES) or killed by a signal nobody here sent.
        const reason = result.signal
          ? `terminated by ${result.signal}`
          : (result.originalMessage ?? result.shortMessage ?? 'unknown error');
        return { ...base, ...output, outcome: 'spawn-error', exitCode: undefined, stderr: reason, durationMs };
      }
      return { ...base, ...output, outcome: 'exited', exitCode: result.exitCode ?? 0, durationMs };
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
  }
}

/**
 * Starting a process holds the event loop (fork and exec, a few milliseconds for a process of a
 * few hundred MiB, tens on a busy machine): a fabric discovery asks for a thousand `perfquery -c`
 * at once, and as many as the concurrency limit allows were started in one turn, 0.13 s at 122 880
 * switch ports. The starts of one turn of the event loop share one slice (SLICE_MS), counted from
 * the first start, with whatever runs between them (execa's own work, a finished tool's result);
 * a start past it waits for the next turn.
 */
const SPAWNS = new TurnClock();

async function spawnTurn(): Promise<void> {
  while (sliceSpent(SPAWNS.start())) await nextTurn();
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

// Debian installs infiniband-diags in /usr/sbin, which is not on an unprivileged user's PATH.
const SBIN_DIRECTORIES = ['/usr/sbin', '/sbin'];

export interface ToolLookup<Tool extends string> {
  found: Partial<Record<Tool, string>>;
  /** One phrase per missing tool, e.g. `perfquery (not found on PATH or in /usr/sbin, /sbin)`. */
  missing: string[];
}

/**
 * Locate `tools`: a configured path must be executable; otherwise search `searchPath` (the PATH
 * variable's value) and then /usr/sbin and /sbin.
 */
export function locateTools<Tool extends string>(
  tools: readonly Tool[],
  configured: Readonly<Partial<Record<Tool, string | undefined>>>,
  searchPath: string = process.env.PATH ?? '',
): ToolLookup<Tool> {
  const found: Partial<Record<Tool, string>> = {};
  const missing: string[] = [];
  const directories = [...searchPath.split(path.delimiter).filter(Boolean), ...SBIN_DIRECTORIES];
  for (const tool of tools) {
    const explicit = configured[tool];
    if (explicit !== undefined) {
      if (isExecutable(explicit)) found[tool] = explicit;
      else missing.push(`${tool} (--${tool}.path ${explicit} is not an executable file)`);
      continue;
    }
    const hit = directories.map((directory) => path.join(directory, tool)).find(isExecutable);
    if (hit) found[tool] = hit;
    else missing.push(`${tool} (not found on PATH or in ${SBIN_DIRECTORIES.join(', ')})`);
  }
  return { found, missing };
}
