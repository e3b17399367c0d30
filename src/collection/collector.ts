// What a collector is: one module (or folder) under src/collectors/ that declares, in one place, its
// name, its flags, when it runs, how it sets up its source, the part of the snapshot it fills, the
// metrics it writes and the findings it judges. The registry (src/collectors/registry.ts) lists
// them; everything else (the command line, the config file's schema, the schedules, the collector
// metrics, `check`'s cycle and its "Not checked" list) is derived from these declarations. docs/architecture.md has the recipe.
import type { Logger } from 'pino';
import type { UsageError } from '../config/errors.js';
import type { Flag, Section, Settings } from '../config/flags.js';
import type { Work } from '../event-loop/time-slices.js';
import type { ExpositionBuffer } from '../exposition/buffer.js';
import type { MetricSpec } from '../exposition/metric-spec.js';
import type { CollectorFailure, Finding } from '../model/finding.js';
import type { Device } from '../model/host.js';
import type { CollectorReport, ItemError, Snapshot } from '../model/snapshot.js';
import type { CommandRunner } from '../sources/command-runner.js';

/**
 * A run of collectors on one schedule. Collectors that share a cycle (sysfs, ipoib and tso read one
 * host pass; the three diag tools one pass over the linked ports) run one after the other within
 * it, each after the collectors it `needs`.
 */
export interface Cycle {
  /** For logs: "host reading", "diag", "fabric discovery". */
  readonly name: string;
  interval(settings: Settings): number;
  /**
   * How long one run may take before it is cut off: the interval, or the commands it runs in a row
   * if that is longer. `once`: a single run (`check`), with no interval to wait for.
   */
  deadline(settings: Settings, once: boolean): number;
  /**
   * Runs when its data is wanted and older than one interval (a scrape, or a cycle that is `after`
   * it with `fresh`), instead of on a timer; its collectors' `sample` runs every interval between.
   */
  readonly onDemand?: boolean;
  /** A cycle whose first run this one waits for; with `fresh`, whose data it wants fresh before each run. */
  readonly after?: { cycle: Cycle; fresh: boolean };
}

export interface Schedule {
  readonly cycle: Cycle;
  /**
   * The collectors of its cycle it runs after (whose parts it reads); undefined: after the one
   * before it in the registry, so that a cycle's collectors run one after the other by default.
   */
  readonly after?: readonly PartOf<unknown>[];
}

/** What the program a collector runs in gives it. */
export interface CollectorContext {
  readonly settings: Settings;
  readonly logger: Logger;
  /** `serve`: a long-running exporter (keeps files open and state between cycles); `check`: one cycle. */
  readonly mode: 'serve' | 'check';
  readonly now: () => number;
  /** A runner a test put in place of a tool group's real tools (by `ToolGroup.key`), or 'not-installed'. */
  runner<T extends string>(group: ToolGroup<T>): CommandRunner<T> | 'not-installed' | undefined;
  /** One object shared by every collector of the program (the sysfs reader, a tool group's runner). */
  shared<T>(key: object, make: () => T): T;
  /** Count the time-outs of these tools (from 0): the tools a collector runs. */
  countCommands(tools: readonly string[]): void;
  /** Run `cycle` now, unless it started within `minimumAgeMs`; says whether it will run. */
  runSoon(cycle: Cycle, minimumAgeMs: number): boolean;
  /**
   * A mistake of the user's that only a reading could find (a cabling plan file that stopped parsing
   * between the start's check and its first reading): the program stops with exit code 2 and the
   * error's one line, as for a bad flag. Never for what the fabric says: that is untrusted.
   */
  fatal(error: UsageError): void;
}

/** Tools that run through one runner (the diag tools, fabric mode's tools, ethtool). */
export interface ToolGroup<T extends string> {
  readonly key: string;
  readonly tools: readonly T[];
}

/** One reading of a collector. */
export interface Reading<P> {
  /** Its new part; absent keeps the previous one (a failed discovery keeps the last topology). */
  part?: P;
  /** The host's devices, from the one collector that lists them (sysfs): `Snapshot.devices`. */
  devices?: readonly Device[];
  errors?: readonly ItemError[];
  /** The collector failed as a whole (its class directory could not be listed, a command failed). */
  failure?: string;
  /** Any error fails the collector (a command that failed), not only `failure`. */
  failOnErrors?: boolean;
  /** Tools killed at their time limit, one entry per command. */
  timeouts?: readonly string[];
  /**
   * The items (paths, command lines) it read this time, where not all: an earlier error of an item
   * it did not read (a device unplugged, a port no longer queried) is not "works again".
   */
  read?: (item: string) => boolean;
}

/** A collector set up for one program: its source, with its runner and the state it keeps between readings. */
export interface Reader<P> {
  /** One reading. `snapshot` holds the latest parts of the others, those it runs after already from this cycle. */
  read(snapshot: Snapshot, signal: AbortSignal): Promise<Reading<P>>;
  /**
   * Between the readings of an on-demand cycle, every interval: read what changes fast (port
   * states). True when that showed the last reading is out of date.
   */
  sample?(): boolean;
  /** Read its configuration files again at its next reading (SIGHUP). */
  reload?(): void;
  close?(): Promise<void> | void;
}

/** A collector that cannot run here although it is enabled, and why (one log line, and `check`'s "Not checked"). */
export interface Off {
  off: string;
}

/** The metric families a collector writes, from the snapshot. */
export interface CollectorMetrics {
  readonly families: readonly MetricSpec[];
  /** Other collectors whose parts it writes from too: a new part of any of them renders it again. */
  readonly inputs?: readonly PartOf<unknown>[];
  /** Its families in the order of `families`, each only when it has samples. */
  write(snapshot: Snapshot, out: ExpositionBuffer, settings: Settings): void;
  /**
   * The same as work that may pause, where a collector writes a sample per fabric port (hundreds
   * of thousands): the server renders it in time slices when a cycle publishes (`write` runs it at once).
   */
  writeSteps?(snapshot: Snapshot, out: ExpositionBuffer, settings: Settings): Work<void>;
}

export interface CollectorDeclaration<P> {
  /** `--collector.<name>` or its group's switch; `{collector="<name>"}` in the collector metrics. */
  readonly name: string;
  /** What it lets `check` judge, for the "Not checked" list: "subnet manager reachability". */
  readonly checks: string;
  /** The switch that turns it on (its own or its group's); undefined: always on. */
  readonly enabledBy?: Flag<boolean>;
  /** Every flag it reads, its switch and shared ones included. */
  readonly flags: readonly Flag<unknown>[];
  /** Parts of the config file without a flag (lists of rules). */
  readonly sections?: readonly Section<unknown>[];
  /** Host collectors read this host; fabric collectors the subnet (they are grouped apart in reports). */
  readonly scope: 'host' | 'fabric';
  readonly schedule: Schedule;
  /** What it keeps when its cycle is cut off at the deadline: its last part, or nothing. */
  readonly onOverrun: 'keep' | 'drop';
  setUp(context: CollectorContext): Reader<P> | Off | Promise<Reader<P> | Off>;
  readonly metrics?: CollectorMetrics;
  readonly findings?: (snapshot: Snapshot) => Finding[];
  /** The same as work that may pause, where judging walks every port of a fabric (`findings` runs it at once). */
  readonly findingSteps?: (snapshot: Snapshot) => Work<Finding[]>;
  /**
   * What its failure means, in the collector-failing finding: fixed words, or words for this
   * snapshot (undefined: another finding says it already).
   */
  readonly failure: CollectorFailure | ((snapshot: Snapshot, report: CollectorReport) => CollectorFailure | undefined);
  /** Errors another finding already tells about (left out of the read-errors finding). */
  readonly explained?: (error: ItemError) => boolean;
  /**
   * Other collectors' findings that its own explain better (a switch port "down" where the cabling
   * plan says a cable was moved out of it): they are left out of the list.
   */
  readonly explains?: (snapshot: Snapshot) => ((finding: Finding) => boolean) | undefined;
  /**
   * Checks of its settings that need the system (a directory that must exist), run by `serve` and
   * `check` at start: a UsageError names the flag or the config file's line (Settings.placeOf).
   */
  readonly verify?: (settings: Settings) => void | Promise<void>;
}

/**
 * A collector's part of the snapshot, by its name: what another collector reads, runs after or
 * renders from, without importing that collector (src/collectors/parts.ts declares them all).
 */
export interface PartOf<P> {
  readonly name: string;
  /** Its part of a snapshot; undefined when it is off or has not read yet. */
  of(snapshot: Snapshot): P | undefined;
}

export function partOf<P>(name: string): PartOf<P> {
  return { name, of: (snapshot) => snapshot.parts.get(name) as P | undefined };
}

export interface Collector<P = unknown> extends CollectorDeclaration<P>, PartOf<P> {}

/** The collector that fills `part`: its name and `of` are the part's. */
export function defineCollector<P>(declaration: CollectorDeclaration<P>): Collector<P> {
  return { ...declaration, of: (snapshot) => snapshot.parts.get(declaration.name) as P | undefined };
}

export function isOff<P>(setup: Reader<P> | Off): setup is Off {
  return 'off' in setup;
}
