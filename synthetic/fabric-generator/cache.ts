// The file `ibnetdiscover --cache FILE` writes (rdma-core libibnetdisc/ibnetdisc_cache.c, version 1,
// little-endian), for a generated fabric: the nodes in the order libibnetdisc lists them, each with
// its raw NodeInfo and description and the keys of its ports, then every port with its raw PortInfo
// and the far end of its cable. The real tools load it (`--load-cache`) as they load their own.
import { CACHE_MAGIC, CACHE_VERSION } from '../../src/sources/fabric/discovery-cache.js';
import { nodeInfo, portInfo, speedCode } from './mad.js';
import { linkUp, type GeneratedFabric, type GeneratedNode, type GeneratedPort } from './topology.js';

const HEADER_BYTES = 28;
const NODE_BYTES = 4 + 64 + 8 + 2 + 64 + 64 + 1;
const PORT_KEY_BYTES = 9;
const PORT_BYTES = 95;

/** The ports libibnetdisc holds for a node: port 0 and every port of a switch; a CA's discovered ports. */
function storedPorts(node: GeneratedNode): number[] {
  if (node.kind === 'switch') return Array.from({ length: node.portCount + 1 }, (_, i) => i);
  return node.ports.filter((port): port is GeneratedPort => port !== undefined && linkUp(port)).map((port) => port.number);
}

function portGuidOf(node: GeneratedNode, number: number): bigint {
  return node.kind === 'switch' ? node.guid : node.ports[number]!.guid;
}

function rawPortInfo(fabric: GeneratedFabric, node: GeneratedNode, number: number, smLid: number): Uint8Array {
  const { profile } = fabric;
  const port = number === 0 ? undefined : node.ports[number]!;
  const up = port === undefined || linkUp(port);
  // A switch's port 0 (its management port) reports 4X SDR and no extended speeds, as on ibsim.
  const speed = port ? speedCode(port.speed) : { legacy: 1, ext: 0 };
  const shownExt = !profile.extSpeedsOnlyWhenActive || (up && speed.ext !== 0);
  // A switch's external ports carry no LID or capabilities of their own (its port 0 does).
  const managed = node.kind === 'ca' || number === 0;
  return portInfo({
    gidPrefix: managed ? 0xfe80000000000000n : 0n,
    lid: managed ? node.lid : 0,
    smLid: managed ? smLid : 0,
    capMask: managed ? (node.kind === 'switch' ? profile.switchCapMask : profile.caCapMask) : 0,
    localPort: node.kind === 'switch' ? node.entryPort : number,
    widthEnabled: port?.widthEnabled ?? profile.widthEnabled,
    widthSupported: profile.widthSupported,
    widthActive: up ? (port?.width ?? 2) : 2,
    speedSupported: profile.speedSupported,
    state: up ? 4 : 1,
    physicalState: up ? 5 : 2,
    lmc: 0,
    speedActive: up ? speed.legacy : 1,
    speedEnabled: port?.speedEnabled ?? profile.speedEnabled,
    extActive: up ? speed.ext : 0,
    extSupported: port && shownExt ? profile.extSupported : 0,
    extEnabled: port && shownExt ? port.extEnabled : 0,
  });
}

export function discoveryCache(fabric: GeneratedFabric): Uint8Array {
  const { profile } = fabric;
  const nodes = fabric.listed;
  const stored = nodes.map(storedPorts);
  const portCount = stored.reduce((sum, ports) => sum + ports.length, 0);
  const size =
    HEADER_BYTES + nodes.reduce((sum, _, i) => sum + NODE_BYTES + stored[i]!.length * PORT_KEY_BYTES, 0) + portCount * PORT_BYTES;
  const bytes = new Uint8Array(size);
  const view = new DataView(bytes.buffer);
  const smLid = fabric.subnetManagers.find((sm) => sm.state === 3)?.port.node.lid ?? 0;
  view.setUint32(0, CACHE_MAGIC, true);
  view.setUint32(4, CACHE_VERSION, true);
  view.setUint32(8, nodes.length, true);
  view.setUint32(12, portCount, true);
  view.setBigUint64(16, fabric.origin.guid, true);
  view.setUint32(24, fabric.maxHops, true);
  let at = HEADER_BYTES;
  for (const [i, node] of nodes.entries()) {
    const isSwitch = node.kind === 'switch';
    view.setUint16(at, isSwitch ? node.lid : 0, true);
    at += 4 + 64; // smalmc, smaenhsp0 (base port 0) and SwitchInfo: zeros
    view.setBigUint64(at, node.guid, true);
    bytes[at + 8] = isSwitch ? 2 : 1;
    bytes[at + 9] = node.portCount;
    at += 10;
    bytes.set(
      nodeInfo({
        type: isSwitch ? 2 : 1,
        ports: node.portCount,
        systemGuid: node.guid,
        guid: node.guid,
        portGuid: portGuidOf(node, isSwitch ? 0 : node.entryPort),
        deviceId: isSwitch ? profile.switchDeviceId : profile.caDeviceId,
        revision: isSwitch ? profile.switchRevision : profile.caRevision,
        localPort: node.entryPort,
        vendorId: isSwitch ? profile.switchVendorId : profile.caVendorId,
      }),
      at,
    );
    at += 64;
    bytes.set(new TextEncoder().encode(node.description).subarray(0, 63), at);
    at += 64;
    bytes[at++] = stored[i]!.length;
    for (const number of stored[i]!) {
      view.setBigUint64(at, portGuidOf(node, number), true);
      bytes[at + 8] = number;
      at += PORT_KEY_BYTES;
    }
  }
  for (const [i, node] of nodes.entries()) {
    for (const number of stored[i]!) {
      view.setBigUint64(at, portGuidOf(node, number), true);
      bytes[at + 8] = number;
      view.setUint16(at + 10, node.lid, true);
      bytes.set(rawPortInfo(fabric, node, number, smLid), at + 13);
      const tail = at + 13 + 64;
      view.setBigUint64(tail, node.guid, true);
      const port = number === 0 ? undefined : node.ports[number];
      const peer = port && linkUp(port) ? port.cable : undefined;
      if (peer) {
        bytes[tail + 8] = 1;
        view.setBigUint64(tail + 9, peer.guid, true);
        bytes[tail + 17] = peer.number;
      }
      at += PORT_BYTES;
    }
  }
  if (at !== size) throw new Error(`cache size ${at}, expected ${size}`);
  return bytes;
}
