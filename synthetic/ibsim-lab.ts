// A simulated InfiniBand fabric for the exporter's integration tests: ibsim on a private socket
// name, opensm and the infiniband-diags tools attached to it through umad2sim (LD_PRELOAD), and
// per-host wrappers for the tools so that the exporter itself never runs preloaded. Every process
// is started here, remembered by PID and stopped by that PID.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, openSync } from 'node:fs';
import { appendFile, chmod, cp, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { findExecutable, waitFor } from './processes.js';

export const UMAD2SIM = '/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so';
export const FABRICS = fileURLToPath(new URL('../test/fixtures/ibsim-topologies/', import.meta.url));
/** A sysfs root without InfiniBand devices, for an exporter that reads only the fabric. */
const NO_INFINIBAND = fileURLToPath(new URL('../test/fixtures/sys/no-infiniband', import.meta.url));
export const DIAG_TOOLS = ['perfquery', 'sminfo', 'smpquery'] as const;
export const FABRIC_TOOLS = ['ibnetdiscover', 'iblinkinfo', 'ibqueryerrors', 'saquery', 'sminfo', 'perfquery'] as const;
/** What a fabric-mode test on ibsim needs installed: tool → Debian package (for requireSystemTools). */
export const FABRIC_LAB_PACKAGES: Readonly<Record<string, string>> = {
  ibsim: 'ibsim-utils',
  opensm: 'opensm',
  ...Object.fromEntries(FABRIC_TOOLS.map((tool) => [tool, 'infiniband-diags'])),
};

/**
 * What a wrapper does instead of running its tool (see Lab.fault): hang, print garbage, fail; or
 * run it and exit with its status but print only the first half of its output's bytes
 * ('truncate'), or its output with every third line replaced by noise ('garble').
 */
export type Fault = 'hang' | 'garbage' | 'fail' | 'truncate' | 'garble';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

interface Managed {
  name: string;
  child: ChildProcess;
  /** Where umad2sim wrote its `sys-<pid>` tree (the process's working directory). */
  cwd: string;
}

/** A subnet manager to start: the host whose port it binds, its priority, more opensm arguments. */
export interface SubnetManagerStart {
  host: string;
  priority: number;
  extra?: string[];
}

export class Lab {
  /** Abstract socket base name: isolates this ibsim and its clients from any other on the host. */
  readonly socketName = `ibx-${process.pid}-${randomBytes(4).toString('hex')}`;
  private readonly processes: Managed[] = [];
  /** Subnet managers that could not be started, by name. */
  private readonly spawnErrors: Record<string, Error> = {};
  private ibsim: ChildProcess | undefined;
  /** Console commands in flight, one after the other (each reply is told apart by the prompt). */
  private consoleQueue: Promise<unknown> = Promise.resolve();

  private constructor(readonly dir: string) {}

  /** Start ibsim on a copy of `fixtures/ibsim-topologies/<net>` (or of an absolute path), console on a FIFO. */
  static async start(net: string): Promise<Lab> {
    const lab = new Lab(await mkdtemp(path.join(tmpdir(), 'ibx-lab-')));
    await cp(path.isAbsolute(net) ? net : path.join(FABRICS, net), path.join(lab.dir, 'fabric.net'));
    await execa('mkfifo', [lab.console]);
    // Opened read-write: ibsim never sees EOF on its console (EOF makes it spin at 100% CPU).
    const consoleFd = openSync(lab.console, 'r+');
    const out = openSync(path.join(lab.dir, 'ibsim.out'), 'a');
    const err = openSync(path.join(lab.dir, 'ibsim.err'), 'a');
    const child = spawn('ibsim', ['-s', 'fabric.net'], {
      cwd: lab.dir,
      env: { ...process.env, IBSIM_SOCKNAME: lab.socketName },
      stdio: [consoleFd, out, err],
    });
    for (const fd of [consoleFd, out, err]) closeSync(fd);
    lab.ibsim = child;
    // Not installed (ENOENT) is an 'error' event: without a listener it would end the process.
    let spawnError: Error | undefined;
    child.once('error', (error) => (spawnError = error));
    try {
      await waitFor('ibsim to bind its socket', async () => {
        if (spawnError) throw new Error(`ibsim could not be started: ${spawnError.message}`);
        if (child.exitCode !== null) throw new Error(`ibsim exited: ${await readFile(path.join(lab.dir, 'ibsim.err'), 'utf8')}`);
        return (await readFile('/proc/net/unix', 'utf8')).includes(`@${lab.socketName}:ctl`) || undefined;
      });
    } catch (error) {
      // Nothing left behind: no simulator running, no directory.
      child.kill('SIGKILL');
      await rm(lab.dir, { recursive: true, force: true });
      throw error;
    }
    return lab;
  }

  /** PID of the simulator (for CPU accounting in the benchmark). */
  get ibsimPid(): number | undefined {
    return this.ibsim?.pid;
  }

  private get console(): string {
    return path.join(this.dir, 'ctl');
  }

  private env(host: string): NodeJS.ProcessEnv {
    return { ...process.env, IBSIM_SOCKNAME: this.socketName, SIM_HOST: host, LD_PRELOAD: UMAD2SIM };
  }

  /** One ibsim console command; resolves with its reply once the prompt is back. Calls may overlap: they run in turn. */
  command(line: string): Promise<string> {
    const reply = this.consoleQueue.then(() => this.send(line));
    this.consoleQueue = reply.catch(() => undefined);
    return reply;
  }

  private async send(line: string): Promise<string> {
    const out = path.join(this.dir, 'ibsim.out');
    const before = (await stat(out)).size;
    await appendFile(this.console, `${line}\n`);
    return waitFor(`ibsim to answer "${line}"`, async () => {
      const text = await readFile(out, 'utf8');
      return text.length > before && text.endsWith('sim> ') ? text.slice(before, -5) : undefined;
    });
  }

  /**
   * Run a tool as if on `host` (preloaded, in the lab directory so its sys-<pid> lands there); its
   * output exactly as printed.
   */
  async run(
    host: string,
    tool: string,
    args: string[],
    timeoutMs = 10_000,
  ): Promise<{ stdout: string; stderr: string; exitCode: number | undefined }> {
    const result = await execa(tool, args, {
      cwd: this.dir,
      env: this.env(host),
      reject: false,
      timeout: timeoutMs,
      stripFinalNewline: false,
    });
    return { stdout: String(result.stdout), stderr: String(result.stderr), exitCode: result.exitCode };
  }

  /** Start opensm attached to `host`; returns its name for stopSm. */
  async startSm(name: string, host: string, priority: number, extra: string[] = []): Promise<string> {
    const cwd = path.join(this.dir, name);
    await mkdir(cwd, { recursive: true });
    const log = openSync(path.join(cwd, 'opensm.out'), 'a');
    const child = spawn('opensm', ['-f', path.join(cwd, 'opensm.log'), '-s', '0', '-p', String(priority), ...extra], {
      cwd,
      env: { ...this.env(host), OSM_TMP_DIR: cwd, OSM_CACHE_DIR: cwd },
      stdio: ['ignore', log, log],
    });
    closeSync(log);
    // Not installed (ENOENT) is an 'error' event: kept for waitSmState to report, not left to end the process.
    child.once('error', (error) => (this.spawnErrors[name] = error));
    this.processes.push({ name, child, cwd });
    return name;
  }

  /** The opensm log of `name` says it reached `state` (MASTER, STANDBY). */
  async waitSmState(name: string, state: string, timeoutMs = 10_000): Promise<void> {
    await waitFor(
      `${name} to enter ${state}`,
      async () => {
        const spawnError = this.spawnErrors[name];
        if (spawnError) throw new Error(`${name}: opensm could not be started: ${spawnError.message}`);
        const log = await readFile(path.join(this.dir, name, 'opensm.log'), 'utf8').catch(() => '');
        return log.includes(`Entering ${state} state`) || undefined;
      },
      timeoutMs,
    );
  }

  /**
   * Start a master SM, then a standby, and wait until the master's SA lists both (saquery SMIR from
   * `host`); returns their names for stopSm. The master meets another SM in a sweep, and the lab's
   * SMs make no periodic sweeps: the sweep that the standby's trap starts can come before the
   * standby answers, and now and then the master stops sweeping after its first sweep (it logs the
   * traps and acts on none). Both are seen on a busy machine, and then the master never lists the
   * standby. So: a SIGHUP every 2 s ("a HUP signal should only start a new heavy sweep", opensm's
   * main.c), and after 10 s both SMs stopped and started again, three times at most.
   * `beforeStandby` runs once the master is MASTER (e.g. to wait for a port to be Active).
   */
  async startRedundantSms(
    host: string,
    master: SubnetManagerStart,
    standby: SubnetManagerStart,
    beforeStandby: () => Promise<void> = async () => {},
  ): Promise<{ master: string; standby: string }> {
    for (let attempt = 1; ; attempt++) {
      const names = { master: `master-${attempt}`, standby: `standby-${attempt}` };
      await this.startSm(names.master, master.host, master.priority, master.extra);
      await this.waitSmState(names.master, 'MASTER');
      await beforeStandby();
      await this.startSm(names.standby, standby.host, standby.priority, standby.extra);
      await this.waitSmState(names.standby, 'STANDBY');
      const child = this.processes.find((managed) => managed.name === names.master)!.child;
      let swept = Date.now();
      const listed = await waitFor(
        'the master to list the standby',
        async () => {
          const { stdout } = await this.run(host, 'saquery', ['SMIR']);
          if (stdout.split('SMInfoRecord dump:').length - 1 >= 2) return true;
          if (Date.now() - swept >= 2_000) {
            child.kill('SIGHUP');
            swept = Date.now();
          }
          return undefined;
        },
        10_000,
        250,
      ).then(
        () => true,
        () => false,
      );
      if (listed) return names;
      if (attempt === 3) throw new Error(`the master never listed the standby (${attempt} starts of both)`);
      for (const name of [names.standby, names.master]) await this.stopSm(name);
    }
  }

  /** A config file that makes a standby SM take over in about 4 s instead of about 54 s. */
  async fastFailoverConfig(): Promise<string> {
    const template = path.join(this.dir, 'opensm-default.conf');
    await execa('opensm', ['-c', template], {
      cwd: this.dir,
      env: { ...process.env, OSM_TMP_DIR: this.dir, OSM_CACHE_DIR: this.dir },
      reject: false,
      timeout: 10_000,
    });
    const text = (await readFile(template, 'utf8'))
      .replace(/^sminfo_polling_timeout .*$/m, 'sminfo_polling_timeout 1000')
      .replace(/^polling_retry_number .*$/m, 'polling_retry_number 2');
    const fast = path.join(this.dir, 'opensm-fast.conf');
    await writeFile(fast, text);
    return fast;
  }

  /** SIGTERM an SM started here (SIGKILL after 5 s), wait for it, remove its sys-<pid> tree. */
  async stopSm(name: string): Promise<void> {
    const index = this.processes.findIndex((managed) => managed.name === name);
    if (index < 0) return;
    const [managed] = this.processes.splice(index, 1);
    await stopChild(managed!.child);
    await rm(path.join(managed!.cwd, `sys-${managed!.child.pid}`), { recursive: true, force: true });
  }

  /** Wait until port 1 of `host` is Active (the SM configured it). */
  async waitActive(host: string): Promise<void> {
    await waitFor(
      `${host} port 1 to become Active`,
      async () => {
        const { stdout } = await this.run(host, 'smpquery', ['-D', 'portinfo', '0', '1']);
        return /^LinkState:\.*Active$/m.test(stdout) || undefined;
        // A re-plugged cable waits for the SM's next sweep (opensm's default: every 10 s).
      },
      30_000,
    );
  }

  /**
   * Take port 1 of `host`'s cable out and plug it into `node`[`port`] (ibsim's Unlink, then Link), as
   * a person moving a cable does; wait until the SM made it Active again.
   */
  async replug(host: string, node: string, port: number): Promise<void> {
    await this.command(`Unlink "${host}"[1]`);
    const answer = await this.command(`Link "${host}"[1] "${node}"[${port}]`);
    if (/error|fail/i.test(answer)) throw new Error(`ibsim: Link "${host}"[1] "${node}"[${port}]: ${answer}`);
    await this.waitActive(host);
  }

  /**
   * Copy umad2sim's fake sysfs of `host` to `<dest>/sys` (replacing what was there): bash opens
   * /sys/class/infiniband itself, so umad2sim builds ./sys-<pid> in bash; `; true` keeps bash from
   * exec'ing cp, which would skip umad2sim's cleanup.
   */
  async snapshot(host: string, dest: string, extraPorts: number[] = []): Promise<string> {
    await rm(path.join(dest, 'sys'), { recursive: true, force: true });
    await mkdir(dest, { recursive: true });
    await execa('bash', ['-c', ': /sys/class/infiniband/*; cp -a "sys-$$/sys" "$1/"; true', '_', dest], {
      cwd: this.dir,
      env: this.env(host),
      timeout: 10_000,
    });
    for (const port of extraPorts) await this.addPort(host, path.join(dest, 'sys'), port);
    return path.join(dest, 'sys');
  }

  /** umad2sim shows port 1 only: write ports/<port> in kernel formats from the port's PortInfo. */
  private async addPort(host: string, sysRoot: string, port: number): Promise<void> {
    const { stdout } = await this.run(host, 'smpquery', ['-D', 'portinfo', '0', String(port)]);
    const field = (name: string): string => new RegExp(`^${name}:\\.*(.*)$`, 'm').exec(stdout)?.[1]?.trim() ?? '';
    const states: Record<string, string> = { Down: '1: DOWN', Initialize: '2: INIT', Armed: '3: ARMED', Active: '4: ACTIVE' };
    const physical: Record<string, string> = { Polling: '2: Polling', Disabled: '3: Disabled', LinkUp: '5: LinkUp' };
    const width = Number(field('LinkWidthActive').replace('X', ''));
    const lane: Record<string, [number, string]> = { '2.5 Gbps': [2.5, 'SDR'], '5.0 Gbps': [5, 'DDR'], '10.0 Gbps': [10, 'QDR'] };
    const [gbps, speed] = lane[field('LinkSpeedActive')] ?? [10, 'QDR'];
    const dir = path.join(sysRoot, 'class/infiniband/ibsim0/ports', String(port));
    await mkdir(dir, { recursive: true });
    const files: Record<string, string> = {
      state: states[field('LinkState')] ?? '1: DOWN',
      phys_state: physical[field('PhysLinkState')] ?? '2: Polling',
      lid: `0x${Number(field('Lid')).toString(16)}`,
      sm_lid: `0x${Number(field('SMLid')).toString(16)}`,
      cap_mask: `0x${Number.parseInt(field('CapMask'), 16).toString(16).padStart(8, '0')}`,
      link_layer: 'InfiniBand',
      rate: `${gbps * width} Gb/sec (${width}X ${speed})`,
    };
    for (const [file, text] of Object.entries(files)) await writeFile(path.join(dir, file), `${text}\n`);
  }

  /**
   * Wrappers for the tools (perfquery/sminfo/smpquery by default) that run the real tool as if on
   * `host`. The exporter gets their paths (--perfquery.path …) and never has LD_PRELOAD itself. A
   * wrapper can be made to misbehave instead (see `fault`).
   */
  async wrappers<Tool extends string = (typeof DIAG_TOOLS)[number]>(
    host: string,
    name = host,
    tools: readonly Tool[] = DIAG_TOOLS as unknown as readonly Tool[],
  ): Promise<Record<Tool, string>> {
    const bin = this.bin(name);
    await mkdir(bin, { recursive: true });
    const paths = {} as Record<Tool, string>;
    for (const tool of tools) {
      const real = findExecutable(tool);
      if (!real) throw new Error(`${tool} not installed`);
      paths[tool] = path.join(bin, tool);
      const fault = path.join(bin, `${tool}.fault`);
      await writeFile(
        paths[tool],
        [
          '#!/bin/sh',
          `cd '${this.dir}' || exit 1`,
          `tool() { SIM_HOST='${host}' IBSIM_SOCKNAME='${this.socketName}' LD_PRELOAD='${UMAD2SIM}' '${real}' "$@"; }`,
          `case "$(cat '${fault}' 2>/dev/null)" in`,
          // A child that outlives the wrapper unless its whole process group is killed.
          `  hang) sleep 600 & echo $! > '${fault}.sleeper'; wait; exit 1 ;;`,
          `  garbage) printf 'Segmentation fault\\n\\001\\002 this is not ${tool} output\\n'; exit 0 ;;`,
          `  fail) echo '${tool}: iberror: failed: discover failed'; exit 255 ;;`,
          `  truncate) out=$(mktemp '${this.dir}/out.XXXXXX'); tool "$@" > "$out"; rc=$?; head -c $(($(wc -c < "$out") / 2)) "$out"; rm -f "$out"; exit $rc ;;`,
          `  garble) out=$(mktemp '${this.dir}/out.XXXXXX'); tool "$@" > "$out"; rc=$?; awk 'NR % 3 == 0 { printf "\\001 garbled %d\\002\\n", NR; next } { print }' "$out"; rm -f "$out"; exit $rc ;;`,
          'esac',
          `SIM_HOST='${host}' IBSIM_SOCKNAME='${this.socketName}' LD_PRELOAD='${UMAD2SIM}' exec '${real}' "$@"`,
          '',
        ].join('\n'),
      );
      await chmod(paths[tool], 0o755);
    }
    return paths;
  }

  /**
   * Flags for an exporter in fabric mode on `host`: the fabric tools through wrappers named `name`
   * (see `wrappers`), no diag collector, and a sysfs without InfiniBand (no host ports of its own).
   */
  async fabricExporterFlags(host: string, name = host): Promise<string[]> {
    const paths = await this.wrappers(host, name, FABRIC_TOOLS);
    return [
      '--path.sysfs',
      NO_INFINIBAND,
      '--no-collector.diag',
      '--collector.fabric',
      ...FABRIC_TOOLS.flatMap((tool) => [`--${tool}.path`, paths[tool]]),
    ];
  }

  private bin(name: string): string {
    return path.join(this.dir, `bin-${name}`);
  }

  /** Make the wrapper of `tool` (from `wrappers(…, name)`) misbehave (see `Fault`); undefined restores it. */
  async fault(name: string, tool: string, fault: Fault | undefined): Promise<void> {
    const file = path.join(this.bin(name), `${tool}.fault`);
    if (fault === undefined) await rm(file, { force: true });
    else await writeFile(file, `${fault}\n`);
  }

  /** PID of the child a hanging wrapper of `tool` started, once it has started one. */
  async sleeper(name: string, tool: string): Promise<number | undefined> {
    const text = await readFile(path.join(this.bin(name), `${tool}.fault.sleeper`), 'utf8').catch(() => undefined);
    return text === undefined ? undefined : Number(text.trim());
  }

  /** Stop every SM, then ibsim, and remove the lab directory. */
  async stop(): Promise<void> {
    for (const managed of [...this.processes]) await this.stopSm(managed.name);
    if (this.ibsim) await stopChild(this.ibsim);
    await rm(this.dir, { recursive: true, force: true });
  }
}

/** Start a lab that `teardown` (run after each test, in reverse) stops. */
export async function startLab(net: string, teardown: (() => Promise<void>)[]): Promise<Lab> {
  const started = await Lab.start(net);
  teardown.push(() => started.stop());
  return started;
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const killed = await Promise.race([exited(child).then(() => true), sleep(5000).then(() => false)]);
  if (!killed) {
    child.kill('SIGKILL');
    await exited(child);
  }
}
