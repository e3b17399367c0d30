// One row per port, as `ibstat` would show it plus what the exporter knows besides (expectation,
// IPoIB interfaces, link peer, worst finding): the table of the landing page and of `check --format json`.
import { IPOIB } from '../collectors/host/ipoib.js';
import { SMPQUERY } from '../collectors/diag/smpquery.js';
import { expectationOf } from '../collectors/host/sysfs/metrics.js';
import type { LinkExpectation } from '../model/link-rate.js';
import { worstSeverity, type Finding, type Severity } from '../model/finding.js';
import { portKey } from '../model/host.js';
import { physicalLinkIsUp } from '../model/port-state.js';
import type { Snapshot } from '../model/snapshot.js';

export interface PortOverview {
  device: string;
  port: number;
  /** The device's node description (untrusted text: set by whoever runs the host). */
  nodeDescription: string | undefined;
  linkLayer: string | undefined;
  state: string | undefined;
  physicalState: string | undefined;
  /** Undefined while the physical link is down: the kernel's values are meaningless then. */
  width: number | undefined;
  speed: string | undefined;
  rateGbps: number | undefined;
  expected: LinkExpectation | undefined;
  ipoib: string[];
  /** The port at the other end of the cable (diag), with its description (untrusted text, from the fabric). */
  peer: { guid: string; port: number; description: string | undefined } | undefined;
  /** Worst finding about this port; undefined when there is none. */
  worst: Severity | undefined;
}

/** A state as a table shows it: its name, or the number the kernel or the tool gave. */
export function stateText(reading: { id: number; name: string | undefined } | undefined): string | undefined {
  return reading === undefined ? undefined : (reading.name ?? `unknown (${reading.id})`);
}

export function portOverview(snapshot: Snapshot, findings: readonly Finding[]): PortOverview[] {
  const links = SMPQUERY.of(snapshot);
  const interfaces = IPOIB.of(snapshot) ?? [];
  return snapshot.devices.flatMap((device) =>
    device.ports.map((port) => {
      const key = portKey(device.name, port.port);
      const up = physicalLinkIsUp(port.physicalState?.id);
      const peer = links?.get(key)?.peer;
      const about = findings.filter(
        ({ subject }) =>
          ((subject.kind === 'port' || subject.kind === 'interface') && subject.device === device.name && subject.port === port.port) ||
          (subject.kind === 'device' && subject.device === device.name),
      );
      return {
        device: device.name,
        port: port.port,
        nodeDescription: device.nodeDesc,
        linkLayer: port.linkLayer,
        state: stateText(port.state),
        physicalState: stateText(port.physicalState),
        width: up ? port.width : undefined,
        speed: up ? port.speed : undefined,
        rateGbps: up ? port.rateGbps : undefined,
        expected: expectationOf(snapshot, key),
        ipoib: interfaces.filter((iface) => iface.device === device.name && iface.port === port.port).map((iface) => iface.name),
        peer: peer && { guid: peer.guid, port: peer.port, description: peer.description },
        worst: worstSeverity(about),
      };
    }),
  );
}
