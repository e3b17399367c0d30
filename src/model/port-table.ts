// The ports of a topology as columns: one array per field of `DiscoveredPort` instead of one
// object, one peer object and one entry of a keyed map per port. At 122 880 switch ports (150 000
// ports with the adapters') those were 22 MiB that every instance holds for the life of a
// topology, a shard of four as much as the whole fabric (docs/benchmarks.md, "eighth pass"); the
// columns and their index take 9.5 MiB. It reads as the map it replaces: the same keys
// (`fabricPortKey`), the same order, a `DiscoveredPort` made when one is asked for (a new object
// each time: plain data that no one keeps identity of).
import type { EnabledRates } from './link-rate.js';
import { fabricPortKey, type DiscoveredPort } from './fabric.js';

/** Port numbers that get a slot (IBA port numbers are 8 bits); any other is found by its key. */
const MAX_SLOTTED_PORT = 1024;

const slotted = (port: number): boolean => Number.isInteger(port) && port >= 0 && port < MAX_SLOTTED_PORT;

export class PortTable implements ReadonlyMap<string, DiscoveredPort> {
  private nodeGuids: string[] = [];
  private ports: number[] = [];
  private portGuids: (string | undefined)[] = [];
  private lids: (number | undefined)[] = [];
  private peerGuids: (string | undefined)[] = [];
  private peerPorts: number[] = [];
  private enableds: (EnabledRates | undefined)[] = [];
  /**
   * Node GUID → where its slots start in `slots`: `slots[base]` is how many port numbers it has
   * room for (0 to room - 1), `slots[base + 1 + port]` the port's row + 1 (0: no such port).
   */
  private readonly bases = new Map<string, number>();
  private slots = new Int32Array(4096);
  private slotsUsed = 0;
  /** Rows of ports without a slot (a number past their node's room or not a small whole number), by key. */
  private readonly others = new Map<string, number>();

  /**
   * Add a port, or replace the one of the same node and number in place (as `Map.set` keeps a
   * key's position). `room`: how many port numbers its node has (NodeInfo NumPorts + 1, port 0
   * included), taken the first time a port of that node is added.
   */
  set(port: DiscoveredPort, room = 0): void {
    let row = this.rowAt(port.nodeGuid, port.port);
    if (row < 0) {
      row = this.nodeGuids.length;
      this.place(port.nodeGuid, port.port, row, room);
    }
    this.nodeGuids[row] = port.nodeGuid;
    this.ports[row] = port.port;
    this.portGuids[row] = port.portGuid;
    this.lids[row] = port.lid;
    this.peerGuids[row] = port.peer?.nodeGuid;
    this.peerPorts[row] = port.peer?.port ?? 0;
    this.enableds[row] = port.enabled;
  }

  /** Set the enabled rates of a port already added; false when there is no such port. */
  enable(nodeGuid: string, port: number, enabled: EnabledRates | undefined): boolean {
    const row = this.rowAt(nodeGuid, port);
    if (row < 0) return false;
    this.enableds[row] = enabled;
    return true;
  }

  /** Done adding: the columns cut to their length (an array grown by pushing keeps up to half again as much room). */
  seal(): this {
    this.nodeGuids = this.nodeGuids.slice();
    this.ports = this.ports.slice();
    this.portGuids = this.portGuids.slice();
    this.lids = this.lids.slice();
    this.peerGuids = this.peerGuids.slice();
    this.peerPorts = this.peerPorts.slice();
    this.enableds = this.enableds.slice();
    this.slots = this.slots.slice(0, this.slotsUsed);
    return this;
  }

  get size(): number {
    return this.nodeGuids.length;
  }

  get(key: string): DiscoveredPort | undefined {
    const row = this.rowOf(key);
    return row < 0 ? undefined : this.port(row);
  }

  has(key: string): boolean {
    return this.rowOf(key) >= 0;
  }

  forEach(callback: (value: DiscoveredPort, key: string, map: ReadonlyMap<string, DiscoveredPort>) => void, thisArg?: unknown): void {
    for (let row = 0; row < this.nodeGuids.length; row++) callback.call(thisArg, this.port(row), this.keyOf(row), this);
  }

  *entries(): MapIterator<[string, DiscoveredPort]> {
    for (let row = 0; row < this.nodeGuids.length; row++) yield [this.keyOf(row), this.port(row)];
  }

  *keys(): MapIterator<string> {
    for (let row = 0; row < this.nodeGuids.length; row++) yield this.keyOf(row);
  }

  *values(): MapIterator<DiscoveredPort> {
    for (let row = 0; row < this.nodeGuids.length; row++) yield this.port(row);
  }

  [Symbol.iterator](): MapIterator<[string, DiscoveredPort]> {
    return this.entries();
  }

  get [Symbol.toStringTag](): string {
    return 'PortTable';
  }

  private port(row: number): DiscoveredPort {
    const peerGuid = this.peerGuids[row];
    return {
      nodeGuid: this.nodeGuids[row]!,
      port: this.ports[row]!,
      portGuid: this.portGuids[row],
      lid: this.lids[row],
      peer: peerGuid === undefined ? undefined : { nodeGuid: peerGuid, port: this.peerPorts[row]! },
      enabled: this.enableds[row],
    };
  }

  private keyOf(row: number): string {
    return fabricPortKey(this.nodeGuids[row]!, this.ports[row]!);
  }

  /** The row of a port by its key; -1 when none. */
  private rowOf(key: string): number {
    const slash = key.lastIndexOf('/');
    const port = slash < 0 ? -1 : portNumber(key, slash + 1);
    if (port < 0) return this.others.get(key) ?? -1;
    return this.rowAt(key.slice(0, slash), port, key);
  }

  /** `key`: the port's key when the caller has it (a lookup then makes none). */
  private rowAt(nodeGuid: string, port: number, key?: string): number {
    if (slotted(port)) {
      const base = this.bases.get(nodeGuid);
      if (base !== undefined && port < this.slots[base]!) return this.slots[base + 1 + port]! - 1;
    }
    if (this.others.size === 0) return -1;
    return this.others.get(key ?? fabricPortKey(nodeGuid, port)) ?? -1;
  }

  private place(nodeGuid: string, port: number, row: number, room: number): void {
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
