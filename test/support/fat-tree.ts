// ibsim topology files of two-level fat trees, for the fabric-mode tests and benchmark: S spines,
// L leaves, H hosts per leaf. Leaf ports [1..H] go to hosts, [H+1..H+S] to the spines (one uplink
// per spine); spine port [l] goes to leaf l. Every record ends with a blank line, and width/speed
// masks are set first (ibsim's defaults are 4X-only and SDR-only). ibsim takes at most 2 048 nodes.

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
      // CA port GUIDs are the node GUID + port: leave room between hosts.
      const guid = HOST_GUID_BASE + BigInt(((l - 1) * hostsPerLeaf + (h - 1)) * 4);
      lines.push('vendid=0x02c9', 'devid=0x1003', `caguid=${hex(guid)}`, `Hca 1 "H${l}_${h}" # "host-${l}-${h} HCA-1"`, `[1] "L${l}"[${h}]`, '');
    }
  }
  return lines.join('\n');
}
