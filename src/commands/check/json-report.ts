// `check --format json`: the report for scripts. The shape is documented in README.md ("The check
// command"); keys are snake_case like Prometheus' own JSON, absent values are null.
import type { FabricOverview } from '../../findings/fabric-overview.js';
import { runbookUrl, type FabricPortName, type Finding, type FindingSubject } from '../../model/finding.js';
import type { PortOverview } from '../../findings/port-overview.js';
import type { CheckReport } from './report.js';

/** Bumped when a key changes meaning or goes away; new keys may appear without a bump. */
export const CHECK_JSON_VERSION = 1;

function fabricPortJson(end: FabricPortName): Record<string, string | number | null> {
  return { node_guid: end.node.guid, node_type: end.node.type ?? null, node_name: end.node.name, port: end.port };
}

function subjectJson(subject: FindingSubject): Record<string, unknown> {
  switch (subject.kind) {
    case 'host':
    case 'subnet':
      return { kind: subject.kind };
    case 'device':
      return { kind: subject.kind, device: subject.device };
    case 'port':
      return { kind: subject.kind, device: subject.device, port: subject.port };
    case 'interface':
      return { kind: subject.kind, interface: subject.interface, device: subject.device ?? null, port: subject.port ?? null };
    case 'collector':
      return { kind: subject.kind, collector: subject.collector };
    case 'fabric-port':
      return { kind: subject.kind, ...fabricPortJson(subject), peer: subject.peer ? fabricPortJson(subject.peer) : null };
    case 'multicast-group':
      return { kind: subject.kind, mgid: subject.mgid, pkey: subject.pkey };
  }
}

function findingJson(finding: Finding): Record<string, unknown> {
  return {
    condition: finding.condition,
    severity: finding.severity,
    subject: subjectJson(finding.subject),
    summary: finding.summary,
    meaning: finding.meaning,
    cause: finding.cause,
    remedy: finding.remedy,
    runbook_url: runbookUrl(finding),
    alert: finding.alert ?? null,
  };
}

function portJson(row: PortOverview): Record<string, unknown> {
  return {
    device: row.device,
    port: row.port,
    node_description: row.nodeDescription ?? null,
    link_layer: row.linkLayer ?? null,
    state: row.state ?? null,
    physical_state: row.physicalState ?? null,
    width: row.width ?? null,
    speed: row.speed ?? null,
    rate_gbps: row.rateGbps ?? null,
    expected: row.expected ? { width: row.expected.width ?? null, speed: row.expected.speed ?? null, source: row.expected.source } : null,
    ipoib: row.ipoib,
    peer: row.peer ? { guid: row.peer.guid, port: row.peer.port, description: row.peer.description ?? null } : null,
    worst: row.worst ?? null,
  };
}

function fabricJson(fabric: FabricOverview): Record<string, unknown> {
  return {
    discovered_at: fabric.discoveredAt === undefined ? null : new Date(fabric.discoveredAt * 1000).toISOString(),
    shard: `${fabric.shard.index}/${fabric.shard.count}`,
    nodes: fabric.nodes,
    links: fabric.links,
    ports_read: fabric.portsRead,
    ports_up: fabric.portsUp,
    subnet_managers: fabric.subnetManagers.map((sm) => ({
      guid: sm.guid,
      lid: sm.lid,
      priority: sm.priority,
      state: sm.state ?? null,
      host: sm.host ?? null,
    })),
    multicast_groups: fabric.multicastGroups.map((group) => ({
      mgid: group.mgid,
      pkey: group.pkey,
      mtu_bytes: group.mtuBytes ?? null,
      rate_gbps: group.rateGbps ?? null,
      members: group.members ?? null,
    })),
  };
}

export function renderJson(report: CheckReport): string {
  const { snapshot } = report;
  const document = {
    version: CHECK_JSON_VERSION,
    status: report.status,
    exit_code: report.exitCode,
    counts: report.counts,
    host: {
      devices: snapshot.devices.length,
      ports: snapshot.devices.reduce((sum, device) => sum + device.ports.length, 0),
      ipoib_interfaces: report.ipoibInterfaces,
    },
    fabric: report.fabric ? fabricJson(report.fabric) : null,
    not_checked: report.notChecked,
    // In the registry's order, not of the cycles' ends (fabric mode's run side by side).
    collectors: snapshot.reports.map((collector) => ({
      collector: collector.collector,
      success: collector.success,
      duration_seconds: collector.durationSeconds,
      // `count`: the read errors an entry stands for (an output's lines not understood are one entry).
      errors: collector.errors.map((error) => ({ item: error.item, message: error.message, count: error.count ?? 1 })),
    })),
    findings: report.findings.map(findingJson),
    ports: report.ports.map(portJson),
  };
  return JSON.stringify(document, null, 2) + '\n';
}
