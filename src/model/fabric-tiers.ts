// Tiers of a fat tree as the congestion aggregates count them: tier 1 = switches with hosts,
// counting up; a switch port sends `down` toward the hosts, `up` away.
import { pacer, type Work } from '../event-loop/time-slices.js';
import type { CongestionDirection } from './congestion.js';
import type { FabricNodeType, FabricTopology } from './fabric.js';

/**
 * Each switch's tier in a fat tree: 1 for switches with a host (a CA) on some port, then one more
 * for each hop away from those. Switches no tier-1 switch reaches have none.
 */
export function* switchTiers(topology: FabricTopology): Work<Map<string, number>> {
  const neighbours = new Map<string, string[]>();
  const tiers = new Map<string, number>();
  const pace = pacer(256);
  for (const port of topology.ports.values()) {
    if (pace()) yield;
    if (!port.peer) continue;
    const node = topology.nodes.get(port.nodeGuid);
    const peer = topology.nodes.get(port.peer.nodeGuid);
    if (node?.type !== 'switch' || !peer) continue;
    if (peer.type === 'ca') tiers.set(node.guid, 1);
    else if (peer.type === 'switch') {
      const list = neighbours.get(node.guid);
      if (list) list.push(peer.guid);
      else neighbours.set(node.guid, [peer.guid]);
    }
  }
  let frontier = [...tiers.keys()];
  for (let tier = 2; frontier.length > 0; tier++) {
    const next: string[] = [];
    for (const guid of frontier) {
      if (pace()) yield;
      for (const neighbour of neighbours.get(guid) ?? []) {
        if (tiers.has(neighbour)) continue;
        tiers.set(neighbour, tier);
        next.push(neighbour);
      }
    }
    frontier = next;
  }
  return tiers;
}

/** Which way a switch port of `tier` sends: `down` to a host or a lower tier, `up` otherwise (a link within one tier included). */
export function congestionDirection(tier: number, peerType: FabricNodeType, peerTier: number | undefined): CongestionDirection {
  if (peerType === 'ca') return 'down';
  return peerTier !== undefined && peerTier < tier ? 'down' : 'up';
}
