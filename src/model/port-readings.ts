// A ports cycle's readings as columns: one array per field of `FabricPortReading`, every port's
// counters in one array of numbers, instead of a keyed map entry, a reading object, a counter row
// and an array of values per port. One shard of four of the 122 880-port fabric reads 30 706 ports
// a cycle and holds two cycles' readings while it makes the next: the objects were about 5 MiB a
// cycle (docs/benchmarks.md, "ninth pass"), and the merged rows of the sweeps a third set at the
// cycle's peak, which the table does without: a port's counters are written straight into it.
// It reads as the map it replaces: the same keys (`fabricPortKey`), the same order, a reading made
// when one is asked for (a new object each time, its counters a view of the table's values).
import { CounterRow, layout, type CounterSink } from './counter-row.js';
import { fabricPortKey, type FabricPortReading, type PortAddress } from './fabric.js';
import { PortRows } from './port-index.js';

/** What a scan read of a port's link. */
export type PortLink = Pick<FabricPortReading, 'state' | 'physicalState' | 'width' | 'speed'>;

/**
 * Made a port at a time: its counters written first (`add`, as a `CounterSink`), then the port
 * itself (`commit`), or the counters dropped (`discard`); `seal` when every port is in.
 */
export class PortReadings extends PortRows<FabricPortReading> implements CounterSink {
  private nodeGuids: string[] = [];
  private ports: number[] = [];
  private states: FabricPortReading['state'][] = [];
  private physicalStates: FabricPortReading['physicalState'][] = [];
  private widths: FabricPortReading['width'][] = [];
  private speeds: FabricPortReading['speed'][] = [];
  private peers: (PortAddress | undefined)[] = [];
  /** Each row's counter names (lists shared by the rows with the same names) and where its values start. */
  private names: (readonly string[])[] = [];
  private starts: number[] = [];
  /**
   * Every row's counter values, one after the other: an array of V8's heap (unboxed doubles, as the
   * rows' own arrays were), so that they count in the heap whose growth fabric mode bounds
   * (--heap-growing-percent), which a typed array's memory, outside it, does not.
   */
  private counterValues: number[];
  private used = 0;
  /** The positions of the counters at the maximum of their widths, by row; only rows that have one (nearly none). */
  private readonly saturatedAt = new Map<number, readonly number[]>();
  /** The row being written: its counters' names (its values are in `counterValues` from `used` on). */
  private readonly pending: string[] = [];
  private pendingSaturated: number[] | undefined;

  /** `values`: how many counter values to make room for at first (the last cycle's count: nearly always this one's). */
  constructor(values = 0) {
    super();
    // The room taken at once, its holes filled as the values are written.
    this.counterValues = values > 0 ? new Array<number>(values) : [];
  }

  /** A table of readings made otherwise (tests, a replay), in their order; each port once. */
  static from(readings: Iterable<FabricPortReading>): PortReadings {
    const table = new PortReadings();
    for (const reading of readings) {
      reading.counters.writeTo(table);
      table.commit(reading.nodeGuid, reading.port, 0, reading, reading.peer);
    }
    return table.seal();
  }

  /** A counter of the port being written. */
  add(name: string, value: number, saturated: boolean): void {
    const at = this.used + this.pending.length;
    // Past the room given, the array grows as by a push.
    this.counterValues[at] = value;
    if (saturated) (this.pendingSaturated ??= []).push(this.pending.length);
    this.pending.push(name);
  }

  /** How many counters the port being written has so far. */
  get written(): number {
    return this.pending.length;
  }

  /** Drop the counters written since the last port. */
  discard(): void {
    this.pending.length = 0;
    this.pendingSaturated = undefined;
  }

  /**
   * The port being written, with the counters written for it. `room`: how many port numbers its
   * node has (port 0 included). A port is added once: a second reading of one is a caller's error.
   */
  commit(nodeGuid: string, port: number, room: number, link: PortLink | undefined, peer: PortAddress | undefined): void {
    if (this.index.rowAt(nodeGuid, port) >= 0) throw new Error(`port ${fabricPortKey(nodeGuid, port)} read twice in one cycle`);
    const row = this.nodeGuids.length;
    this.index.place(nodeGuid, port, row, room);
    this.nodeGuids.push(nodeGuid);
    this.ports.push(port);
    this.states.push(link?.state);
    this.physicalStates.push(link?.physicalState);
    this.widths.push(link?.width);
    this.speeds.push(link?.speed);
    this.peers.push(peer);
    this.names.push(this.pending.length === 0 ? CounterRow.EMPTY.names : layout(this.pending));
    this.starts.push(this.used);
    if (this.pendingSaturated) this.saturatedAt.set(row, this.pendingSaturated);
    this.used += this.pending.length;
    this.discard();
  }

  /** Done adding: the columns cut to their length. */
  seal(): this {
    this.discard();
    this.nodeGuids = this.nodeGuids.slice();
    this.ports = this.ports.slice();
    this.states = this.states.slice();
    this.physicalStates = this.physicalStates.slice();
    this.widths = this.widths.slice();
    this.speeds = this.speeds.slice();
    this.peers = this.peers.slice();
    this.names = this.names.slice();
    this.starts = this.starts.slice();
    // Room not used (fewer counters than the last cycle) given back: cut in place, not copied.
    this.counterValues.length = this.used;
    this.index.seal();
    return this;
  }

  /** How many counter values the readings hold (for the next cycle's `constructor`). */
  get valueCount(): number {
    return this.used;
  }

  /** A port's peer as read, without making its reading. */
  peerOf(key: string): PortAddress | undefined {
    const row = this.index.rowOf(key);
    return row < 0 ? undefined : this.peers[row];
  }

  get size(): number {
    return this.nodeGuids.length;
  }

  get [Symbol.toStringTag](): string {
    return 'PortReadings';
  }

  protected valueAt(row: number): FabricPortReading {
    const names = this.names[row]!;
    return {
      nodeGuid: this.nodeGuids[row]!,
      port: this.ports[row]!,
      state: this.states[row],
      physicalState: this.physicalStates[row],
      width: this.widths[row],
      speed: this.speeds[row],
      peer: this.peers[row],
      counters:
        names.length === 0 ? CounterRow.EMPTY : CounterRow.made(names, this.counterValues, this.saturatedAt.get(row), this.starts[row]),
    };
  }

  protected keyAt(row: number): string {
    return fabricPortKey(this.nodeGuids[row]!, this.ports[row]!);
  }
}
