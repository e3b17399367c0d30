// ibsim topology files of two-level fat trees, for the fabric-mode tests and benchmark: S spines,
// L leaves, H hosts per leaf. Leaf ports [1..H] go to hosts, [H+1..H+S] to the spines (one uplink
// per spine); spine port [l] goes to leaf l. Every record ends with a blank line, and width/speed
// masks are set first (ibsim's defaults are 4X-only and SDR-only). ibsim takes at most 2 048 nodes.
import { fabricPortKey, type DiscoveredPort, type FabricNode, type FabricPortReading, type FabricTopology, type PortAddress } from '../../src/model/fabric.js';

export interface FatTree {
  spines: number;
  leaves: number;
  hostsPerLeaf: number;
  /** Unconnected ports per leaf (they show as Down/Polling). */
  spareLeafPorts?: number;
}

const hex = (value: bigint): string => `0x${value.toString(16).padStart(16, '0')}`;
export const SPINE_GUID_BASE = 0x0002c90200100000n;
export const LEAF_GUID_BASE = 0x0002c90200200000n;
export const HOST_GUID_BASE = 0x0002c90300000000n;

export function spineGuid(spine: number): string {
  return hex(SPINE_GUID_BASE + BigInt(spine - 1));
}

export function leafGuid(leaf: number): string {
  return hex(LEAF_GUID_BASE + BigInt(leaf - 1));
}

export function fatTreeNodes(tree: FatTree): number {
  return tree.spines + tree.leaves + tree.leaves * tree.hostsPerLeaf;
}

/** The net file text of a fat tree. */
export function fatTreeNet(tree: FatTree): string {
  const { spines, leaves, hostsPerLeaf } = tree;
  if (fatTreeNodes(tree) > 2048) throw new Error(`ibsim simulates at most 2048 nodes, not ${fatTreeNodes(tree)}`);
  const leafPorts = hostsPerLeaf + spines + (tree.spareLeafPorts ?? 0);
  const lines = [`# fat tree: ${spines} spines, ${leaves} leaves x ${hostsPerLeaf} hosts (${fatTreeNodes(tree)} nodes)`, 'width=3', 'speed=7', ''];
  for (let s = 1; s <= spines; s++) {
    lines.push('vendid=0x02c9', 'devid=0xc738', `switchguid=${spineGuid(s)}`, `Switch ${leaves} "S${s}" # "spine-${s}"`);
    for (let l = 1; l <= leaves; l++) lines.push(`[${l}] "L${l}"[${hostsPerLeaf + s}]`);
    lines.push('');
  }
  for (let l = 1; l <= leaves; l++) {
    lines.push('vendid=0x02c9', 'devid=0xc738', `switchguid=${leafGuid(l)}`, `Switch ${leafPorts} "L${l}" # "leaf-${l}"`);
    for (let h = 1; h <= hostsPerLeaf; h++) lines.push(`[${h}] "H${l}_${h}"[1]`);
    for (let s = 1; s <= spines; s++) lines.push(`[${hostsPerLeaf + s}] "S${s}"[${l}]`);
    lines.push('');
  }
  for (let l = 1; l <= leaves; l++) {
    for (let h = 1; h <= hostsPerLeaf; h++) {
      lines.push('vendid=0x02c9', 'devid=0x1003', `caguid=${hostGuid(l, h, hostsPerLeaf)}`, `Hca 1 "H${l}_${h}" # "host-${l}-${h} HCA-1"`, `[1] "L${l}"[${h}]`, '');
    }
  }
  return lines.join('\n');
}

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
    nodes.set(guid, { guid, type, description, name: undefined, lid: nodes.size + 1, portCount, vendorId: 0x02c9, deviceId: type === 'switch' ? 0xc738 : 0x1003 });
  };
  const active = { id: 4, name: 'ACTIVE' } as const;
  const linkUp = { id: 5, name: 'LinkUp' } as const;
  const down = { id: 1, name: 'DOWN' } as const;
  const polling = { id: 2, name: 'Polling' } as const;
  const cable = (a: PortAddress, b: PortAddress): void => {
    for (const [self, peer] of [[a, b], [b, a]] as const) {
      const key = fabricPortKey(self.nodeGuid, self.port);
      ports.set(key, { ...self, portGuid: undefined, lid: undefined, peer, enabled: undefined });
      if (nodes.get(self.nodeGuid)!.type === 'switch') readings.set(key, { ...self, state: active, physicalState: linkUp, width: 4, speed: 'HDR', peer, counters: [] });
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
      readings.set(fabricPortKey(leafGuid(l), p), { nodeGuid: leafGuid(l), port: p, state: down, physicalState: polling, width: undefined, speed: undefined, peer: undefined, counters: [] });
    }
  }
  return { topology: { nodes, ports, duplicateGuids: 0, duplicateLids: 0, discoveredAt: 0 }, readings };
}
