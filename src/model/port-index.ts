// Where a port's row is in a table of ports kept as columns (the topology's, a cycle's readings):
// a slot per port number of each node, found from the node's GUID, instead of a keyed map entry
// and key string per port. A port numbered otherwise than an IBA port (a number past its node's
// room, or not a small whole number) is found by its key in a map of its own.
import { fabricPortKey } from './fabric.js';

/** Port numbers that get a slot (IBA port numbers are 8 bits); any other is found by its key. */
const MAX_SLOTTED_PORT = 1024;

const slotted = (port: number): boolean => Number.isInteger(port) && port >= 0 && port < MAX_SLOTTED_PORT;

export class PortIndex {
  /**
   * Node GUID → where its slots start in `slots`: `slots[base]` is how many port numbers it has
   * room for (0 to room - 1), `slots[base + 1 + port]` the port's row + 1 (0: no such port).
   */
  private readonly bases = new Map<string, number>();
  private slots = new Int32Array(4096);
  private slotsUsed = 0;
  /** Rows of ports without a slot, by key. */
  private readonly others = new Map<string, number>();

  /** The row of a port by its key; -1 when none. */
  rowOf(key: string): number {
    const slash = key.lastIndexOf('/');
    const port = slash < 0 ? -1 : portNumber(key, slash + 1);
    if (port < 0) return this.others.get(key) ?? -1;
    return this.rowAt(key.slice(0, slash), port, key);
  }

  /** The row of a node's port; -1 when none. `key`: the port's key when the caller has it (a lookup then makes none). */
  rowAt(nodeGuid: string, port: number, key?: string): number {
    if (slotted(port)) {
      const base = this.bases.get(nodeGuid);
      if (base !== undefined && port < this.slots[base]!) return this.slots[base + 1 + port]! - 1;
    }
    if (this.others.size === 0) return -1;
    return this.others.get(key ?? fabricPortKey(nodeGuid, port)) ?? -1;
  }

  /**
   * Give a port not yet placed its row. `room`: how many port numbers its node has (NodeInfo
   * NumPorts + 1, port 0 included), taken the first time a port of that node is placed.
   */
  place(nodeGuid: string, port: number, row: number, room: number): void {
    if (slotted(port)) {
      let base = this.bases.get(nodeGuid);
      if (base === undefined) {
        base = this.reserve(Math.min(MAX_SLOTTED_PORT, Math.max(room, port + 1)));
        this.bases.set(nodeGuid, base);
      }
      if (port < this.slots[base]!) {
        this.slots[base + 1 + port] = row + 1;
        return;
      }
    }
    this.others.set(fabricPortKey(nodeGuid, port), row);
  }

  /** Done placing: the slots cut to their length. */
  seal(): void {
    this.slots = this.slots.slice(0, this.slotsUsed);
  }

  private reserve(room: number): number {
    const base = this.slotsUsed;
    if (base + 1 + room > this.slots.length) {
      const grown = new Int32Array(Math.max(this.slots.length * 2, base + 1 + room));
      grown.set(this.slots);
      this.slots = grown;
    }
    this.slots[base] = room;
    this.slotsUsed = base + 1 + room;
    return base;
  }
}

/** The port number a key ends with, from `from`, when written as `fabricPortKey` writes a slotted one; -1 when not. */
function portNumber(key: string, from: number): number {
  const digits = key.length - from;
  if (digits < 1 || digits > 4 || (digits > 1 && key.charCodeAt(from) === 48)) return -1;
  let port = 0;
  for (let i = from; i < key.length; i++) {
    const c = key.charCodeAt(i) - 48;
    if (c < 0 || c > 9) return -1;
    port = port * 10 + c;
  }
  return port < MAX_SLOTTED_PORT ? port : -1;
}

/**
 * A table of ports as columns, read as the `ReadonlyMap` by port key it stands for: its rows in the
 * order added, a row's value made when asked for.
 */
export abstract class PortRows<Value> implements ReadonlyMap<string, Value> {
  protected readonly index = new PortIndex();

  abstract get size(): number;
  abstract get [Symbol.toStringTag](): string;
  /** The value of a row (a new object each time). */
  protected abstract valueAt(row: number): Value;
  /** The key of a row. */
  protected abstract keyAt(row: number): string;

  get(key: string): Value | undefined {
    const row = this.index.rowOf(key);
    return row < 0 ? undefined : this.valueAt(row);
  }

  has(key: string): boolean {
    return this.index.rowOf(key) >= 0;
  }

  forEach(callback: (value: Value, key: string, map: ReadonlyMap<string, Value>) => void, thisArg?: unknown): void {
    for (let row = 0; row < this.size; row++) callback.call(thisArg, this.valueAt(row), this.keyAt(row), this);
  }

  *entries(): MapIterator<[string, Value]> {
    for (let row = 0; row < this.size; row++) yield [this.keyAt(row), this.valueAt(row)];
  }

  *keys(): MapIterator<string> {
    for (let row = 0; row < this.size; row++) yield this.keyAt(row);
  }

  *values(): MapIterator<Value> {
    for (let row = 0; row < this.size; row++) yield this.valueAt(row);
  }

  [Symbol.iterator](): MapIterator<[string, Value]> {
    return this.entries();
  }
}
