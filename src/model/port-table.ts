// The ports of a topology as columns: one array per field of `DiscoveredPort` instead of one
// object, one peer object and one entry of a keyed map per port. At 122 880 switch ports (150 000
// ports with the adapters') those were 22 MiB that every instance holds for the life of a
// topology, a shard of four as much as the whole fabric (docs/benchmarks.md, "eighth pass"); the
// columns and their index take 9.5 MiB. It reads as the map it replaces: the same keys
// (`fabricPortKey`), the same order, a `DiscoveredPort` made when one is asked for (a new object
// each time: plain data that no one keeps identity of).
import type { EnabledRates } from './link-rate.js';
import { fabricPortKey, type DiscoveredPort } from './fabric.js';
import { PortRows } from './port-index.js';

export class PortTable extends PortRows<DiscoveredPort> {
  private nodeGuids: string[] = [];
  private ports: number[] = [];
  private portGuids: (string | undefined)[] = [];
  private lids: (number | undefined)[] = [];
  private peerGuids: (string | undefined)[] = [];
  private peerPorts: number[] = [];
  private enableds: (EnabledRates | undefined)[] = [];

  /**
   * Add a port, or replace the one of the same node and number in place (as `Map.set` keeps a
   * key's position). `room`: how many port numbers its node has (NodeInfo NumPorts + 1, port 0
   * included), taken the first time a port of that node is added.
   */
  set(port: DiscoveredPort, room = 0): void {
    let row = this.index.rowAt(port.nodeGuid, port.port);
    if (row < 0) {
      row = this.nodeGuids.length;
      this.index.place(port.nodeGuid, port.port, row, room);
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
    const row = this.index.rowAt(nodeGuid, port);
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
    this.index.seal();
    return this;
  }

  get size(): number {
    return this.nodeGuids.length;
  }

  get [Symbol.toStringTag](): string {
    return 'PortTable';
  }

  protected valueAt(row: number): DiscoveredPort {
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

  protected keyAt(row: number): string {
    return fabricPortKey(this.nodeGuids[row]!, this.ports[row]!);
  }
}
