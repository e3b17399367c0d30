// A two-level fat tree as fabric mode sees it after a discovery and a ports cycle, built in memory
// for the fabric map's tests and benchmark (the tools' outputs of any fat tree come from
// fabric-generator/): S spines, L leaves, H hosts per leaf; leaf ports [1..H] go to hosts,
// [H+1..H+S] to the spines (one uplink per spine); spine port [l] goes to leaf l. GUIDs as the
// generator's.
import { HOST_GUID_BASE, leafGuid, spineGuid } from './fabric-generator/index.js';
import {
  fabricPortKey,
  type DiscoveredPort,
  type FabricNode,
  type FabricPortReading,
  type FabricTopology,
  type PortAddress,
} from '../src/model/fabric.js';
import { CounterRow } from '../src/model/counter-row.js';

export { leafGuid, spineGuid };

export interface FatTree {
  spines: number;
  leaves: number;
  hostsPerLeaf: number;
  /** Unconnected ports per leaf (they show as Down/Polling). */
  spareLeafPorts?: number;
}

const hex = (value: bigint): string => `0x${value.toString(16).padStart(16, '0')}`;
/** The GUID of host `h` (from 1) of leaf `l`; CA port GUIDs are the node GUID + port, so hosts are 4 apart. */
export function hostGuid(leaf: number, host: number, hostsPerLeaf: number): string {
  return hex(HOST_GUID_BASE + BigInt(((leaf - 1) * hostsPerLeaf + (host - 1)) * 4));
}

/**
 * The fat tree of fatTreeNet as fabric mode would see it after a discovery and a ports cycle with
 * every link up at 4X HDR (no simulator: for the map's benchmark and tests at the sizes ibsim
 * takes a while to start). Switch ports are read, spare ones Down/Polling; CA ports are not.
 */
export function fatTreeFabric(tree: FatTree): { topology: FabricTopology; readings: Map<string, FabricPortReading> } {
  const { spines, leaves, hostsPerLeaf } = tree;
  const leafPorts = hostsPerLeaf + spines + (tree.spareLeafPorts ?? 0);
  const nodes = new Map<string, FabricNode>();
  const ports = new Map<string, DiscoveredPort>();
  const readings = new Map<string, FabricPortReading>();
  const node = (guid: string, type: FabricNode['type'], description: string, portCount: number): void => {
    nodes.set(guid, {
      guid,
      type,
      description,
      name: undefined,
      lid: nodes.size + 1,
      portCount,
      vendorId: 0x02c9,
      deviceId: type === 'switch' ? 0xc738 : 0x1003,
    });
  };
  const active = { id: 4, name: 'ACTIVE' } as const;
  const linkUp = { id: 5, name: 'LinkUp' } as const;
  const down = { id: 1, name: 'DOWN' } as const;
  const polling = { id: 2, name: 'Polling' } as const;
  const cable = (a: PortAddress, b: PortAddress): void => {
    for (const [self, peer] of [
      [a, b],
      [b, a],
    ] as const) {
      const key = fabricPortKey(self.nodeGuid, self.port);
      ports.set(key, { ...self, portGuid: undefined, lid: undefined, peer, enabled: undefined });
      if (nodes.get(self.nodeGuid)!.type === 'switch')
        readings.set(key, { ...self, state: active, physicalState: linkUp, width: 4, speed: 'HDR', peer, counters: CounterRow.EMPTY });
    }
  };
  for (let s = 1; s <= spines; s++) node(spineGuid(s), 'switch', `spine-${s}`, leaves);
  for (let l = 1; l <= leaves; l++) node(leafGuid(l), 'switch', `leaf-${l}`, leafPorts);
  for (let l = 1; l <= leaves; l++) {
    for (let h = 1; h <= hostsPerLeaf; h++) {
      node(hostGuid(l, h, hostsPerLeaf), 'ca', `host-${l}-${h} HCA-1`, 1);
      cable({ nodeGuid: leafGuid(l), port: h }, { nodeGuid: hostGuid(l, h, hostsPerLeaf), port: 1 });
    }
    for (let s = 1; s <= spines; s++) cable({ nodeGuid: leafGuid(l), port: hostsPerLeaf + s }, { nodeGuid: spineGuid(s), port: l });
    for (let p = hostsPerLeaf + spines + 1; p <= leafPorts; p++) {
      readings.set(fabricPortKey(leafGuid(l), p), {
        nodeGuid: leafGuid(l),
        port: p,
        state: down,
        physicalState: polling,
        width: undefined,
        speed: undefined,
        peer: undefined,
        counters: CounterRow.EMPTY,
      });
    }
  }
  return { topology: { nodes, ports, duplicateGuids: 0, duplicateLids: 0, discoveredAt: 0 }, readings };
}

/**
 * A ports cycle that read every switch port of `topology` up (4X at `speed`, cabled as discovered,
 * no counters), keeping only the nodes `keep` says (a shard's).
 */
export function switchPortsUp(
  topology: FabricTopology,
  speed: FabricPortReading['speed'],
  keep: (nodeGuid: string) => boolean = () => true,
): Map<string, FabricPortReading> {
  const readings = new Map<string, FabricPortReading>();
  for (const port of topology.ports.values()) {
    if (topology.nodes.get(port.nodeGuid)?.type !== 'switch' || !keep(port.nodeGuid)) continue;
    readings.set(fabricPortKey(port.nodeGuid, port.port), {
      nodeGuid: port.nodeGuid,
      port: port.port,
      state: { id: 4, name: 'ACTIVE' },
      physicalState: { id: 5, name: 'LinkUp' },
      width: 4,
      speed,
      peer: port.peer,
      counters: CounterRow.EMPTY,
    });
  }
  return readings;
}
