// The collectors of one program (the server, or `check`'s one cycle): the registry's collectors
// that the settings enable, each set up once, grouped into their cycles, run on their schedules,
// and reporting into one snapshot store.
//
//   serve   every cycle on its own timer (an on-demand cycle when its data is wanted, with its
//           collectors' samples in between); a cycle `after` another waits for that one's first run
//   check   every cycle once, each after the cycle it follows, within the deadline of a single run
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { UsageError } from '../config/errors.js';
import type { Settings } from '../config/flags.js';
import { RecurringErrors } from '../log/recurring-errors.js';
import type { ReadError, Snapshot } from '../model/snapshot.js';
import type { CommandRunner } from '../sources/command-runner.js';
import type { Device } from '../model/host.js';
import { isOff, type Collector, type CollectorContext, type Cycle, type Reader, type Reading, type ToolGroup } from './collector.js';
import { Periodic } from './periodic.js';
import { SnapshotStore } from './store.js';

export interface CollectorsOptions {
  settings: Settings;
  logger: Logger;
  mode: 'serve' | 'check';
  now?: () => number;
  /** Runners tests put in place of a tool group's real tools, by `ToolGroup.key`. */
  runners?: Readonly<Record<string, CommandRunner<string> | 'not-installed' | undefined>>;
  /** Shared objects a test provides in place of those the collectors would make (by their key). */
  provided?: ReadonlyMap<object, unknown>;
  /** A collector found a mistake of the user's (CollectorContext.fatal): the program exits 2. */
  onFatal?: (error: UsageError) => void;
}

/** A collector enabled by the settings, and what became of its set-up. */
export type Enrolment = { collector: Collector; reader: Reader<unknown> } | { collector: Collector; off: string };

/** A collector the settings turn off (its switch). */
export interface Disabled {
  collector: Collector;
}

class CycleRun {
  readonly members: { collector: Collector; reader: Reader<unknown> }[] = [];
  private readonly periodic: Periodic;
  private firstRunDone: () => void = () => undefined;
  /** Resolves when the first run ended (whatever its outcome). */
  readonly firstRun = new Promise<void>((resolve) => {
    this.firstRunDone = resolve;
  });
  lastStart = Number.NEGATIVE_INFINITY;
  /** When an on-demand cycle last read (ms), and whether a sample found that reading out of date. */
  readAt: number | undefined;
  private outdated = false;
  /** When the last reading or sample read the fast-changing state (ms): /ready's age. */
  sampledAt: number | undefined;
  private sampler: Periodic | undefined;
  private running = false;

  constructor(
    readonly cycle: Cycle,
    private readonly program: Collectors,
    once: boolean,
  ) {
    const { settings, logger } = program.options;
    this.periodic = new Periodic({
      intervalMs: cycle.interval(settings),
      deadlineMs: cycle.deadline(settings, once),
      task: (signal) => this.run(signal),
      onOverrun: (deadlineMs) => this.overrun(deadlineMs),
      onError: (error) => logger.error({ err: error, cycle: cycle.name }, 'collection cycle failed'),
    });
  }

  /** The data of an on-demand cycle is at most one interval old and no sample found it out of date. */
  isFresh(): boolean {
    const now = this.program.now();
    return this.readAt !== undefined && !this.outdated && now - this.readAt < this.cycle.interval(this.program.options.settings);
  }

  async fresh(): Promise<void> {
    if (!this.isFresh()) await this.runNow();
  }

  runNow(): Promise<void> {
    return this.periodic.runNow();
  }

  start(): void {
    if (this.cycle.onDemand) {
      void this.runNow();
      this.sampling()?.start();
      return;
    }
    const after = this.cycle.after && this.program.runOf(this.cycle.after.cycle);
    if (after) void after.firstRun.then(() => this.periodic.start());
    else this.periodic.start();
  }

  /** The timer of the members' samples, every interval (an on-demand cycle whose members sample); made once. */
  private sampling(): Periodic | undefined {
    if (!this.cycle.onDemand || !this.members.some(({ reader }) => reader.sample)) return undefined;
    const interval = this.cycle.interval(this.program.options.settings);
    this.sampler ??= new Periodic({
      intervalMs: interval,
      task: async () => this.sample(interval / 2),
      onOverrun: (deadlineMs) =>
        this.program.options.logger.warn({ deadlineMs, cycle: this.cycle.name }, 'sampling took longer than the collection interval'),
      onError: (error) => this.program.options.logger.error({ err: error, cycle: this.cycle.name }, 'sampling failed'),
    });
    return this.sampler;
  }

  /**
   * The members' samples, unless a reading runs (it reads the same) or one read within
   * `minimumAgeMs`. A sample that finds the reading out of date makes the next wish for fresh data
   * read again.
   */
  sample(minimumAgeMs: number): void {
    if (this.running || this.readAt === undefined) return;
    if (this.sampledAt !== undefined && this.program.now() - this.sampledAt < minimumAgeMs) return;
    for (const { reader } of this.members) if (reader.sample?.()) this.outdated = true;
    this.sampledAt = this.program.now();
  }

  async stop(): Promise<void> {
    await Promise.all([this.periodic.stop(), this.sampler?.stop()]);
  }

  private async run(signal: AbortSignal): Promise<void> {
    const after = this.cycle.after && this.program.runOf(this.cycle.after.cycle);
    if (after) {
      await after.firstRun;
      if (this.cycle.after!.fresh) await after.fresh();
    }
    this.lastStart = this.program.now();
    this.running = true;
    try {
      await this.readAll(signal);
    } finally {
      this.running = false;
      this.firstRunDone();
    }
  }

  /** Each member after those it needs; the cycle's parts are published together, unless it was cut off. */
  private async readAll(signal: AbortSignal): Promise<void> {
    const { store } = this.program;
    const staged = new Map<string, unknown>();
    let devices: readonly Device[] | undefined;
    const outcomes: { collector: Collector; reading: Reading<unknown>; seconds: number }[] = [];
    const done = new Map<string, Promise<void>>();
    const readOne = async ({ collector, reader }: (typeof this.members)[number], previous: Promise<void> | undefined): Promise<void> => {
      const after = collector.schedule.after;
      await (after === undefined ? previous : Promise.all(after.map((other) => done.get(other.name))));
      if (signal.aborted) return;
      const started = performance.now();
      const reading = await reader.read(store.view(staged, devices), signal);
      if (reading.part !== undefined) staged.set(collector.name, reading.part);
      if (reading.devices !== undefined) devices = reading.devices;
      outcomes.push({ collector, reading, seconds: (performance.now() - started) / 1000 });
    };
    let previous: Promise<void> | undefined;
    for (const member of this.members) {
      previous = readOne(member, previous);
      done.set(member.collector.name, previous);
    }
    await Promise.all(done.values());
    if (signal.aborted) return;
    const finishedAt = this.program.now();
    if (devices !== undefined) store.setDevices(devices);
    for (const { collector, reading, seconds } of outcomes.sort((a, b) => this.order(a.collector) - this.order(b.collector))) {
      if (reading.part !== undefined) store.setPart(collector.name, reading.part);
      for (const tool of reading.timeouts ?? []) store.countTimeout(tool);
      const errors: ReadError[] = (reading.errors ?? []).map((error) => ({ collector: collector.name, ...error }));
      if (reading.failure !== undefined) errors.push({ collector: collector.name, item: 'collector', message: reading.failure });
      const success = reading.failure === undefined && !(reading.failOnErrors && errors.length > 0);
      store.report({ collector: collector.name, success, durationSeconds: seconds, finishedAt: finishedAt / 1000, errors }, reading.read);
    }
    if (this.cycle.onDemand) {
      this.readAt = finishedAt;
      this.sampledAt = finishedAt;
      this.outdated = false;
      // The reading read what the sampler reads: the next sample is due one interval from now.
      this.sampling()?.postpone();
    }
    store.publish();
  }

  private order(collector: Collector): number {
    return this.members.findIndex((member) => member.collector === collector);
  }

  /** Cut off: each member failed this time; what it read is kept or dropped as it declares. */
  private overrun(deadlineMs: number): void {
    const { store } = this.program;
    for (const { collector } of this.members) {
      const error: ReadError = {
        collector: collector.name,
        item: 'cycle',
        message: `did not finish within its deadline of ${deadlineMs} ms; cut off`,
      };
      if (collector.onOverrun === 'drop') store.dropPart(collector.name);
      // The age of the data stays that of the last cycle that finished.
      store.report(
        {
          collector: collector.name,
          success: false,
          durationSeconds: deadlineMs / 1000,
          finishedAt: store.lastReport(collector.name)?.finishedAt ?? 0,
          errors: [error],
        },
        () => false,
      );
    }
    store.publish();
  }
}

export class Collectors {
  readonly store: SnapshotStore;
  readonly now: () => number;
  /** Every collector the settings enable, set up or off; in the registry's order. */
  enrolments: readonly Enrolment[] = [];
  /** The collectors whose switch is off. */
  readonly disabled: readonly Disabled[];
  private readonly runs = new Map<Cycle, CycleRun>();
  private readonly shared = new Map<object, unknown>();
  private setUpOnce: Promise<void> | undefined;
  private stopped = false;
  /** The first mistake of the user's a collector found while reading (CollectorContext.fatal). */
  fatalError: UsageError | undefined;

  constructor(
    readonly registry: readonly Collector[],
    readonly options: CollectorsOptions,
  ) {
    this.now = options.now ?? Date.now;
    for (const [key, value] of options.provided ?? []) this.shared.set(key, value);
    this.store = new SnapshotStore(new RecurringErrors(options.logger));
    this.disabled = registry
      .filter((collector) => collector.enabledBy !== undefined && !options.settings.get(collector.enabledBy))
      .map((collector) => ({ collector }));
  }

  /** Set every enabled collector up (once): its reader, or why it cannot run here. */
  setUp(): Promise<void> {
    this.setUpOnce ??= this.setUpAll();
    return this.setUpOnce;
  }

  private async setUpAll(): Promise<void> {
    const context = this.context();
    const enrolments: Enrolment[] = [];
    for (const collector of this.registry) {
      if (this.disabled.some((entry) => entry.collector === collector)) continue;
      const setup = await collector.setUp(context);
      if (isOff(setup)) {
        enrolments.push({ collector, off: setup.off });
        continue;
      }
      enrolments.push({ collector, reader: setup });
      this.store.enroll(collector.name);
      let run = this.runs.get(collector.schedule.cycle);
      if (!run)
        this.runs.set(collector.schedule.cycle, (run = new CycleRun(collector.schedule.cycle, this, this.options.mode === 'check')));
      run.members.push({ collector, reader: setup });
    }
    this.enrolments = enrolments;
  }

  private context(): CollectorContext {
    const { settings, logger, mode, runners = {} } = this.options;
    return {
      settings,
      logger,
      mode,
      now: this.now,
      runner: <T extends string>(group: ToolGroup<T>) => runners[group.key] as CommandRunner<T> | 'not-installed' | undefined,
      shared: <T>(key: object, make: () => T): T => {
        if (!this.shared.has(key)) this.shared.set(key, make());
        return this.shared.get(key) as T;
      },
      countCommands: (tools) => this.store.countCommands(tools),
      fatal: (error) => {
        if (this.fatalError) return;
        this.fatalError = error;
        this.options.onFatal?.(error);
      },
      runSoon: (cycle, minimumAgeMs) => {
        if (mode === 'check' || this.stopped) return false;
        const run = this.runOf(cycle);
        if (!run || this.now() - run.lastStart < minimumAgeMs) return false;
        void run.runNow();
        return true;
      },
    };
  }

  runOf(cycle: Cycle): CycleRun | undefined {
    return this.runs.get(cycle);
  }

  get snapshot(): Snapshot | undefined {
    return this.store.snapshot;
  }

  /** Serve: every cycle on its schedule. */
  async start(): Promise<void> {
    await this.setUp();
    if (this.stopped) return;
    for (const run of this.runs.values()) run.start();
  }

  /** Make every on-demand cycle's data fresh (a scrape): at most one interval old. */
  async fresh(): Promise<void> {
    await this.setUp();
    await Promise.all([...this.runs.values()].filter((run) => run.cycle.onDemand).map((run) => run.fresh()));
  }

  /** When the on-demand cycles last read their fast-changing state (ms); undefined before the first reading. */
  lastReadingAt(): number | undefined {
    const times = [...this.runs.values()].filter((run) => run.cycle.onDemand).map((run) => run.sampledAt);
    return times.length === 0 || times.some((time) => time === undefined) ? undefined : Math.min(...(times as number[]));
  }

  /** Sample every on-demand cycle now, as its timer would (tests). */
  async sampleNow(): Promise<void> {
    await this.setUp();
    for (const run of this.runs.values()) if (run.cycle.onDemand) run.sample(0);
  }

  /** Every collector reads its configuration files again at its next reading (SIGHUP). */
  reload(): void {
    for (const entry of this.enrolments) if ('reader' in entry) entry.reader.reload?.();
  }

  /** Run one cycle now (after its setup): tests, and `--demo`'s warm-up. */
  async runCycle(cycle: Cycle): Promise<void> {
    await this.setUp();
    await this.runs.get(cycle)?.runNow();
  }

  /** Check: every cycle once, each after the cycle it follows. Resolves to the snapshot. */
  async runOnce(): Promise<Snapshot> {
    await this.setUp();
    await Promise.all([...this.runs.values()].map((run) => run.runNow()));
    return this.store.snapshot ?? this.store.publish();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.setUpOnce;
    await Promise.all([...this.runs.values()].map((run) => run.stop()));
    await Promise.all(this.enrolments.map((entry) => ('reader' in entry ? entry.reader.close?.() : undefined)));
  }
}
