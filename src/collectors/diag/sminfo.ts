// The sminfo collector: from each linked local port, is the subnet manager at its SM LID alive,
// and which is it (and a standby running on the port itself).
import type { ExpositionBuffer } from '../../exposition/buffer.js';
import { counter, gauge } from '../../exposition/metric-spec.js';
import { STABLE, Samples } from '../../exposition/samples.js';
import { isInfinibandPort, portKey, portName, type SubnetManagerReading } from '../../model/host.js';
import type { Finding } from '../../model/finding.js';
import { PORT_STATE_INIT, physicalLinkIsUp } from '../../model/port-state.js';
import type { Snapshot } from '../../model/snapshot.js';
import { readSubnetManagers } from '../../sources/diag/local-ports.js';
import { defineCollector, type Collector } from '../../collection/collector.js';
import { DIAG_CHECKS, DIAG_CYCLE, DIAG_FLAGS, DIAG_SWITCH, diagReader } from './diag-group.js';

const PORT = ['device', 'port'] as const;

export const SUBNET_MANAGER_METRICS = {
  reachable: gauge(
    'infiniband_subnet_manager_reachable',
    PORT,
    "1 when the subnet manager at the port's SM LID answered sminfo, 0 when nobody answered: no SM ever configured the port, or the SM died (ports stay ACTIVE with a stale SM LID). Only for InfiniBand ports with a physical link.",
  ),
  info: gauge(
    'infiniband_subnet_manager_info',
    [...PORT, 'sm_guid', 'sm_lid', 'state'],
    'Subnet manager seen from the port (value always 1): the one it follows (state MASTER normally) and, when an SM runs on this port without being the master, that one too (STANDBY, DISCOVERING or NOTACTIVE). A new sm_guid/sm_lid on state="MASTER" means a failover.',
  ),
  priority: gauge(
    'infiniband_subnet_manager_priority',
    PORT,
    'Priority (0-15) of the subnet manager the port follows: the highest priority wins the election for MASTER.',
  ),
  activity: counter(
    'infiniband_subnet_manager_activity_total',
    PORT,
    'SMInfo ActivityCount of the subnet manager the port follows: it keeps increasing while the master SM is alive; a value that stops moving means a hung SM (it restarts from 0 when the SM restarts).',
  ),
} as const;

const FAMILIES = Object.values(SUBNET_MANAGER_METRICS);

function writeMetrics(snapshot: Snapshot, out: ExpositionBuffer): void {
  const samples = new Samples();
  for (const [key, sm] of SMINFO.of(snapshot) ?? []) {
    const [device, port] = key.split('/') as [string, string];
    const id = STABLE.with(STABLE.one('device', device), 'port', port);
    samples.add(SUBNET_MANAGER_METRICS.reachable, id, sm.reachable ? 1 : 0);
    const seen = new Set<string>();
    for (const info of [sm.master, sm.local]) {
      if (!info) continue;
      const labels = { ...id, sm_guid: info.guid, sm_lid: String(info.lid), state: info.state ?? '' };
      const identity = JSON.stringify(labels);
      if (seen.has(identity)) continue;
      seen.add(identity);
      samples.add(SUBNET_MANAGER_METRICS.info, labels, 1);
    }
    if (sm.master) {
      samples.add(SUBNET_MANAGER_METRICS.priority, id, sm.master.priority);
      samples.add(SUBNET_MANAGER_METRICS.activity, id, sm.master.activityCount);
    }
  }
  samples.writeTo(FAMILIES, out);
}

/** A linked, configured port whose subnet manager does not answer (INIT and SM LID 0 are the sysfs collector's). */
function judge(snapshot: Snapshot): Finding[] {
  const readings = SMINFO.of(snapshot);
  if (!readings) return [];
  const findings: Finding[] = [];
  for (const device of snapshot.devices) {
    for (const port of device.ports) {
      if (!isInfinibandPort(port) || !physicalLinkIsUp(port.physicalState?.id) || port.state?.id === PORT_STATE_INIT || port.smLid === 0)
        continue;
      const reading = readings.get(portKey(device.name, port.port));
      if (!reading || reading.reachable) continue;
      findings.push({
        condition: 'subnet-manager-unreachable',
        severity: 'critical',
        subject: { kind: 'port', device: device.name, port: port.port },
        summary: `port ${portName(device.name, port.port)}: no subnet manager answers sminfo at SM LID ${port.smLid ?? 'unknown'}: it died or cannot be reached`,
        meaning:
          'Ports stay ACTIVE with their old LIDs and routes after the subnet manager dies, so traffic still flows, but nothing heals: a rebooted host or a replaced cable stays INIT until a subnet manager is back.',
        cause: 'opensm crashed, was stopped, or its host is down; no standby subnet manager took over.',
        remedy: 'restart the subnet manager on its host (systemctl restart opensm), or start opensm on another host of this fabric',
        runbook: 'infinibandsubnetmanagerunreachable',
        alert: 'InfiniBandSubnetManagerUnreachable',
      });
    }
  }
  return findings;
}

export const SMINFO: Collector<ReadonlyMap<string, SubnetManagerReading>> = defineCollector({
  name: 'sminfo',
  checks: DIAG_CHECKS,
  enabledBy: DIAG_SWITCH,
  flags: DIAG_FLAGS,
  scope: 'host',
  // Beside smpquery: it needs nothing of it.
  schedule: { cycle: DIAG_CYCLE, after: [] },
  onOverrun: 'drop',
  setUp: (context) =>
    diagReader(context, 'sminfo', (tools, snapshot, signal) =>
      readSubnetManagers(tools.targets(snapshot.devices, signal), tools.options(signal)),
    ),
  metrics: { families: FAMILIES, write: writeMetrics },
  findings: judge,
  failure: {
    consequence: 'subnet manager reachability is unknown',
    meaning: 'A dead subnet manager would not show while the ports stay ACTIVE.',
    cause: 'No access to /dev/infiniband/umad* (not root), ib_umad not loaded, or a command timing out.',
  },
});
