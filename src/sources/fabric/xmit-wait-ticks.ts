// Each node's PortXmitWait tick, read once per node with its identity: `perfquery -c <lid> <port>`
// (PortSamplesControl) through the one runner, within --fabric.max-concurrent. A node that does not
// answer the attribute (ibsim, some firmware) gets its generation's documented tick, marked so.
import { defaultTick, deviceTick, type XmitWaitTick } from '../../model/congestion.js';
import { fabricPortKey, type DiscoveredPort, type FabricNode } from '../../model/fabric.js';
import { parsePortSamplesControl } from '../diag/port-samples-control.js';
import type { FabricCycle } from './commands.js';

export interface NodeTick {
  tick: XmitWaitTick;
  /** False when the query timed out or could not run: try again at the next discovery. */
  settled: boolean;
}

/** The LID and port a node answers PortSamplesControl at: a switch at its LID (port 1), a CA or router at its first port with a LID. */
function target(node: FabricNode, ports: ReadonlyMap<string, DiscoveredPort>): { lid: number; port: number } | undefined {
  if (node.type === 'switch') return node.lid !== undefined && node.portCount > 0 ? { lid: node.lid, port: 1 } : undefined;
  for (let port = 1; port <= node.portCount; port++) {
    const lid = ports.get(fabricPortKey(node.guid, port))?.lid;
    if (lid !== undefined && lid > 0) return { lid, port };
  }
  return undefined;
}

/** The tick of each of `nodes`, by node GUID. */
export async function readXmitWaitTicks(
  cycle: FabricCycle,
  nodes: readonly FabricNode[],
  ports: ReadonlyMap<string, DiscoveredPort>,
): Promise<Map<string, NodeTick>> {
  const ticks = new Map<string, NodeTick>();
  await Promise.all(
    nodes.map(async (node) => {
      const address = target(node, ports);
      if (!address) {
        ticks.set(node.guid, { tick: defaultTick(node.deviceId), settled: true });
        return;
      }
      // Any exit status: a device without PortSamplesControl is no error, it has a documented tick.
      const { result, ok } = await cycle.attempt('perfquery', ['-c', String(address.lid), String(address.port)], () => true);
      if (!ok) {
        ticks.set(node.guid, { tick: defaultTick(node.deviceId), settled: false });
        return;
      }
      const reading = parsePortSamplesControl(`${result.stdout}\n${result.stderr}`);
      ticks.set(node.guid, {
        tick: 'tick' in reading ? deviceTick(reading.tick, node.deviceId) : defaultTick(node.deviceId),
        settled: true,
      });
    }),
  );
  return ticks;
}
