// Runs one task on a fixed interval. Runs never overlap: the next starts one interval after the
// previous one started, or as soon as it ends when it ran long. A run that passes its deadline is
// abandoned (its signal aborts) and reported as overrun.

export interface PeriodicOptions {
  intervalMs: number;
  /** Deadline of one run; defaults to the interval. */
  deadlineMs?: number;
  task: (signal: AbortSignal) => Promise<void>;
  onOverrun: (deadlineMs: number) => void;
  onError: (error: unknown) => void;
}

export class Periodic {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private controller: AbortController | undefined;
  private stopped = false;

  constructor(private readonly options: PeriodicOptions) {}

  /** Start with an immediate first run. */
  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  /** Run once now unless a run is in progress; resolves when that run is over. */
  runNow(): Promise<void> {
    this.running ??= this.runOnce().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  /**
   * Push the next run back to one interval from now (the work it would do was just done another
   * way). Nothing changes while a run is in progress or before start(): the end of that run, or
   * start(), schedules the next.
   */
  postpone(): void {
    if (this.stopped || this.running || this.timer === undefined) return;
    this.schedule(this.options.intervalMs);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.controller?.abort(new Error('exporter is shutting down'));
    await this.running;
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    // One timer at a time, whoever schedules.
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      const started = Date.now();
      void this.runNow().then(() => this.schedule(Math.max(0, this.options.intervalMs - (Date.now() - started))));
    }, delayMs);
    this.timer.unref?.();
  }

  private async runOnce(): Promise<void> {
    const deadlineMs = this.options.deadlineMs ?? this.options.intervalMs;
    const controller = new AbortController();
    this.controller = controller;
    let deadline: NodeJS.Timeout | undefined;
    const overrun = new Promise<'overrun'>((resolve) => {
      deadline = setTimeout(() => resolve('overrun'), deadlineMs);
    });
    try {
      const outcome = await Promise.race([this.options.task(controller.signal).then(() => 'done' as const), overrun]);
      if (outcome === 'overrun') {
        controller.abort(new Error(`run exceeded its deadline of ${deadlineMs} ms`));
        this.options.onOverrun(deadlineMs);
      }
    } catch (error) {
      if (!controller.signal.aborted) this.options.onError(error);
    } finally {
      clearTimeout(deadline);
      this.controller = undefined;
    }
  }
}
