// How findings and reports name the fabric's nodes and ports: the node-name-map's name, else the
// NodeDescription, else the GUID. Pure: the fabric collectors' findings and `check`'s text report
// share it.
import type { FabricSnapshot, FabricSubnetManager, PortAddress } from './fabric.js';
import type { FabricNodeName, FabricPortName } from './finding.js';

/** A node as findings name it: node-name-map name, else NodeDescription, else GUID. */
export function fabricNodeName(fabric: FabricSnapshot, guid: string): FabricNodeName {
  const node = fabric.topology?.nodes.get(guid);
  return { guid, type: node?.type, name: node?.name || node?.description.trim() || guid };
}

export function fabricPortName(fabric: FabricSnapshot, address: PortAddress): FabricPortName {
  return { node: fabricNodeName(fabric, address.nodeGuid), port: address.port };
}

/** "port 4 of leaf-1", as the text of a finding says it. */
export function portPhrase(end: FabricPortName): string {
  return `port ${end.port} of ${end.node.name}`;
}

/** The name of the node whose port carries the SM's GUID (the SM's host); undefined when discovery did not see it. */
export function subnetManagerHost(fabric: FabricSnapshot, sm: Pick<FabricSubnetManager, 'guid'>): string | undefined {
  for (const port of fabric.topology?.ports.values() ?? []) {
    if (port.portGuid === sm.guid) return fabricNodeName(fabric, port.nodeGuid).name;
  }
  return undefined;
}
