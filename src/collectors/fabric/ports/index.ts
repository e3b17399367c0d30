// The fabric_ports collector: every --fabric.interval, the state, width, speed, peer and PMA
// counters of every switch port of this instance's shard (CA ports too with --fabric.hca-ports),
// through the last discovery's topology, and what each link should run at. It writes the fabric
// port families (about 17 series per switch port, 90 000 at 1 900 nodes: error counters only for
// ports with errors, flags only while true) and judges ports and links.
import { atOnce } from '../../../event-loop/time-slices.js';
import { defineCollector, type Collector } from '../../../collection/collector.js';
import { FABRIC_DISCOVERY_PART, FABRIC_PORTS_PART, type FabricPortsPart } from '../../parts.js';
import { FABRIC_FLAGS, FABRIC_PORTS_CYCLE, FABRIC_SWITCH } from '../fabric-mode.js';
import { PORTS_FAILURE } from './findings.js';
import { FABRIC_EXPECTATIONS, PortsReader } from './reader.js';
export { FABRIC_EXPECTATIONS };
import { FAMILIES, writeMetrics } from './metrics.js';
import { judge } from './findings.js';

export const FABRIC_PORTS: Collector<FabricPortsPart> = defineCollector({
  name: FABRIC_PORTS_PART.name,
  checks: "the fabric's ports and links",
  enabledBy: FABRIC_SWITCH,
  flags: FABRIC_FLAGS,
  sections: [FABRIC_EXPECTATIONS],
  scope: 'fabric',
  schedule: { cycle: FABRIC_PORTS_CYCLE },
  onOverrun: 'drop',
  setUp: (context) => new PortsReader(context),
  metrics: {
    families: FAMILIES,
    inputs: [FABRIC_DISCOVERY_PART],
    write: (snapshot, out) => atOnce(writeMetrics(snapshot, out)),
    writeSteps: writeMetrics,
  },
  findings: (snapshot) => atOnce(judge(snapshot)),
  findingSteps: judge,
  // Without a topology the ports cycle has nothing to read: the discovery finding says why.
  failure: (snapshot) => (FABRIC_DISCOVERY_PART.of(snapshot)?.topology ? PORTS_FAILURE : undefined),
});
