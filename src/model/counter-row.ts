// A fabric port's PMA counters, compact: the names of the counters it has (one list, shared by
// every port that has the same ones) and their values in one array of numbers, which V8 keeps
// unboxed, 8 bytes a value. An object per counter (name, value, saturated) was 48 bytes and its
// value's box 16 more: at 122 880 switch ports, with the last cycle's readings still served while
// the next cycle's are made, the eight traffic counters of each port alone were 120 MiB
// (docs/benchmarks.md, "One shard of four, third pass"). A host keeps its few ports' counters as
// PortCounter objects (model/host.ts); `toArray` gives a row in that shape.
import type { PortCounter } from './host.js';

/** Lists of names, each once: a fabric's ports have a handful of distinct ones. Bounded, so that no output can grow it. */
const LAYOUTS = new Map<string, readonly string[]>();
const MAX_LAYOUTS = 256;

/** The list `layout` returned last: rows built one after the other nearly always have the same names. */
let lastLayout: readonly string[] = [];

/** The shared list of these names (a copy of its exact length when new). */
export function layout(names: readonly string[]): readonly string[] {
  // The last list again, told by comparing names, without joining them into a key (two rows a
  // port and cycle, 60 000 keys of 400 characters a cycle for one shard of the 122 880-port fabric).
  if (sameNames(names, lastLayout)) return lastLayout;
  lastLayout = layoutOf(names);
  return lastLayout;
}

function sameNames(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function layoutOf(names: readonly string[]): readonly string[] {
  const key = names.join(',');
  const known = LAYOUTS.get(key);
  if (known) return known;
  const own = names.slice();
  if (LAYOUTS.size < MAX_LAYOUTS) LAYOUTS.set(key, own);
  return own;
}

export class CounterRow {
  /** A port without counters (none read this cycle). */
  static readonly EMPTY = new CounterRow([], [], undefined, 0);

  private constructor(
    /** The names, in the order read; shared by rows with the same ones. */
    readonly names: readonly string[],
    /** The values, from `start` on (a table's rows share one array). */
    private readonly values: ArrayLike<number>,
    /** Positions of the counters at the maximum of their widths; undefined when none is (nearly always). */
    private readonly saturatedAt: readonly number[] | undefined,
    private readonly start: number,
  ) {}

  /** A row from a builder's arrays, or from a table's values at `start`, kept as they are. */
  static made(names: readonly string[], values: ArrayLike<number>, saturatedAt: readonly number[] | undefined, start = 0): CounterRow {
    return new CounterRow(names, values, saturatedAt, start);
  }

  /** A row of the counters given, in their order. */
  static of(counters: Iterable<PortCounter>): CounterRow {
    const row = new CounterRowBuilder();
    for (const counter of counters) row.add(counter.name, counter.value, counter.saturated);
    return row.build();
  }

  get length(): number {
    return this.names.length;
  }

  name(i: number): string {
    return this.names[i]!;
  }

  value(i: number): number {
    return this.values[this.start + i]!;
  }

  saturated(i: number): boolean {
    return this.saturatedAt?.includes(i) === true;
  }

  /** Where a counter is in the row; -1 when it was not read. */
  indexOf(name: string): number {
    return this.names.indexOf(name);
  }

  /** A counter's value; undefined when it was not read. */
  get(name: string): number | undefined {
    const i = this.names.indexOf(name);
    return i < 0 ? undefined : this.values[this.start + i];
  }

  /** Every counter of the row, in order, into a row being written. */
  writeTo(sink: CounterSink): void {
    for (let i = 0; i < this.names.length; i++) sink.add(this.names[i]!, this.value(i), this.saturated(i));
  }

  /** The counters as objects, in order (for code off the fabric's hot paths, and tests). */
  toArray(): PortCounter[] {
    return this.names.map((name, i) => ({ name, value: this.value(i), saturated: this.saturated(i) }));
  }
}

/** Where a row's counters are written, one at a time. */
export interface CounterSink {
  add(name: string, value: number, saturated: boolean): void;
}

/** A row made a counter at a time; its arrays have the row's exact length. */
export class CounterRowBuilder implements CounterSink {
  private readonly names: string[] = [];
  private readonly values: number[] = [];
  private saturatedAt: number[] | undefined;

  add(name: string, value: number, saturated: boolean): void {
    if (saturated) (this.saturatedAt ??= []).push(this.names.length);
    this.names.push(name);
    this.values.push(value);
  }

  /** The row; the builder starts again empty. */
  build(): CounterRow {
    if (this.names.length === 0) return CounterRow.EMPTY;
    // The values copied to their exact length: grown by push, a row of 22 had room for 41.
    const row = CounterRow.made(layout(this.names), this.values.slice(), this.saturatedAt);
    this.names.length = 0;
    this.values.length = 0;
    this.saturatedAt = undefined;
    return row;
  }
}
