// The smpquery collector: by direct route from each linked local port (no subnet manager needed),
// the node and port at the other end of its cable, and the best width and speed both ends enable:
// what the link could run at, the expectation of a port the config file says nothing about.
import type { ExpositionBuffer } from '../../exposition/buffer.js';
import { gauge } from '../../exposition/metric-spec.js';
import { STABLE, Samples } from '../../exposition/samples.js';
import type { PortLink } from '../../model/host.js';
import type { Snapshot } from '../../model/snapshot.js';
import { readLinks } from '../../sources/diag/local-ports.js';
import { defineCollector, type Collector } from '../../collection/collector.js';
import { SMPQUERY_PART } from '../parts.js';
import { DIAG_CHECKS, DIAG_CYCLE, DIAG_FLAGS, DIAG_SWITCH, diagReader } from './diag-group.js';

export const PEER_METRICS = {
  info: gauge(
    'infiniband_port_peer_info',
    ['device', 'port', 'peer_guid', 'peer_port', 'peer_lid', 'peer_node_type', 'peer_description'],
    "The port at the other end of this port's cable, found by direct route (smpquery nodeinfo/nodedesc, value always 1): node GUID, port number, LID (empty before a subnet manager assigned one), node type (CA, Switch, Router) and description (usually the switch name).",
  ),
} as const;

const FAMILIES = Object.values(PEER_METRICS);

function writeMetrics(snapshot: Snapshot, out: ExpositionBuffer): void {
  const samples = new Samples();
  for (const [key, { peer }] of SMPQUERY.of(snapshot) ?? []) {
    if (!peer) continue;
    const [device, port] = key.split('/') as [string, string];
    samples.add(
      PEER_METRICS.info,
      {
        ...STABLE.with(STABLE.one('device', device), 'port', port),
        peer_guid: peer.guid,
        peer_port: String(peer.port),
        peer_lid: peer.lid === undefined ? '' : String(peer.lid),
        peer_node_type: peer.nodeType ?? '',
        peer_description: peer.description ?? '',
      },
      1,
    );
  }
  samples.writeTo(FAMILIES, out);
}

export const SMPQUERY: Collector<ReadonlyMap<string, PortLink>> = defineCollector({
  name: SMPQUERY_PART.name,
  checks: DIAG_CHECKS,
  enabledBy: DIAG_SWITCH,
  flags: DIAG_FLAGS,
  scope: 'host',
  schedule: { cycle: DIAG_CYCLE },
  onOverrun: 'drop',
  setUp: (context) =>
    diagReader(context, 'smpquery', (tools, snapshot, signal) => readLinks(tools.targets(snapshot.devices, signal), tools.options(signal))),
  metrics: { families: FAMILIES, write: writeMetrics },
  failure: {
    consequence: 'link peers and the rates links could run at are missing',
    meaning: 'Which switch port each cable goes to, and whether a link trained below what both ends enable, cannot be told.',
    cause: 'No access to /dev/infiniband/umad* (not root), ib_umad not loaded, or a command timing out.',
  },
});
