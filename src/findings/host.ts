// The findings of one host's snapshot: its ports, IPoIB interfaces and collectors. Each condition
// mirrors a host alert of rules/infiniband-alerts.yml where one snapshot can judge it (a rate or a
// "for 5 minutes" cannot be: errors are then said as a count, at info).
import { formatWidth, LANE_RATES } from '../model/link-rate.js';
import { PMA_COUNTERS } from '../model/pma-counters.js';
import { PORT_STATE_INIT, physicalLinkIsUp } from '../model/port-state.js';
import { assessLink } from '../model/link-degradation.js';
import { portKey, type CollectorName, type Device, type IpoibInterface, type LinkExpectation, type Port, type PortCounter, type Snapshot, type TsoReading } from '../model/snapshot.js';
import { collectorFindings, plural, type CollectorFailure } from './collectors.js';
import type { Finding } from '../model/finding.js';

/** The port speaks InfiniBand: RoCE and iWARP (link layer Ethernet) never get SM or INIT findings. Old kernels lack the file. */
export function isInfinibandPort(port: Pick<Port, 'linkLayer'>): boolean {
  return port.linkLayer === undefined || port.linkLayer === 'InfiniBand';
}

function portName(device: string, port: number): string {
  return `${device}/${port}`;
}

function physicalStateName(port: Port): string {
  const id = port.physicalState?.id;
  return port.physicalState?.name ?? (id === undefined ? 'unknown' : `state ${id}`);
}

const START_OPENSM = 'start a subnet manager on one host of this fabric: systemctl enable --now opensm (package opensm)';
const SM_MEANING = 'A port without a subnet manager gets no LID and carries no traffic; IPoIB on it has no carrier.';

function subnetManagerFindings(snapshot: Snapshot, device: Device, port: Port): Finding[] {
  if (!isInfinibandPort(port) || !physicalLinkIsUp(port.physicalState?.id)) return [];
  const name = portName(device.name, port.port);
  const subject = { kind: 'port', device: device.name, port: port.port } as const;
  if (port.state?.id === PORT_STATE_INIT) {
    return [{
      condition: 'port-stuck-init',
      severity: 'critical',
      subject,
      summary: `port ${name} is INIT with its link up (LinkUp, SM LID ${port.smLid ?? 'unknown'}): no subnet manager has configured it`,
      meaning: `The cable is fine and the link trained, but no subnet manager has brought the port to ACTIVE. ${SM_MEANING} INIT is normal for a few seconds after the link comes up; a port still INIT a minute later is stuck.`,
      cause: 'No subnet manager (opensm, or a managed switch\'s) runs on this fabric, it died before this port came up, or it cannot reach this port.',
      remedy: START_OPENSM,
      runbook: 'infinibandportstuckinitializing',
      alert: 'InfiniBandPortStuckInitializing',
    }];
  }
  if (port.smLid === 0) {
    return [{
      condition: 'no-sm-lid',
      severity: 'critical',
      subject,
      summary: `port ${name} has a link but SM LID 0: no subnet manager has ever configured it`,
      meaning: SM_MEANING,
      cause: 'No subnet manager runs on this fabric, or it cannot reach this port.',
      remedy: START_OPENSM,
      runbook: 'infinibandsubnetmanagerunreachable',
      alert: 'InfiniBandSubnetManagerUnreachable',
    }];
  }
  const reading = snapshot.diag.get(portKey(device.name, port.port))?.subnetManager;
  if (reading && !reading.reachable) {
    return [{
      condition: 'subnet-manager-unreachable',
      severity: 'critical',
      subject,
      summary: `port ${name}: no subnet manager answers sminfo at SM LID ${port.smLid ?? 'unknown'}: it died or cannot be reached`,
      meaning: 'Ports stay ACTIVE with their old LIDs and routes after the subnet manager dies, so traffic still flows, but nothing heals: a rebooted host or a replaced cable stays INIT until a subnet manager is back.',
      cause: 'opensm crashed, was stopped, or its host is down; no standby subnet manager took over.',
      remedy: 'restart the subnet manager on its host (systemctl restart opensm), or start opensm on another host of this fabric',
      runbook: 'infinibandsubnetmanagerunreachable',
      alert: 'InfiniBandSubnetManagerUnreachable',
    }];
  }
  return [];
}

/** Signs in one snapshot that a port without a link was in use: then its loss matters. */
function usageEvidence(snapshot: Snapshot, device: Device, port: Port): string[] {
  const key = portKey(device.name, port.port);
  const evidence: string[] = [];
  const downed = port.counters.find((counter) => counter.name === 'link_downed')?.value ?? 0;
  if (downed > 0) evidence.push(`its link went down ${plural(downed, 'time')} since the counters were reset`);
  const interfaces = snapshot.ipoib.filter((iface) => iface.device === device.name && iface.port === port.port).map((iface) => iface.name);
  if (interfaces.length > 0) evidence.push(`IPoIB ${interfaces.join(', ')} ${interfaces.length === 1 ? 'runs' : 'run'} on it`);
  if (snapshot.expectations.get(key)?.source === 'config') evidence.push('the config file expects a link on it');
  if ((snapshot.totals.stateChanges.get(key) ?? 0) > 0) evidence.push('the exporter saw its state change');
  return evidence;
}

function linkDownFindings(snapshot: Snapshot, device: Device, port: Port, hostHasInfinibandLink: boolean): Finding[] {
  const id = port.physicalState?.id;
  if (id === undefined || id < 1 || id > 4) return [];
  const name = portName(device.name, port.port);
  const phys = physicalStateName(port);
  const subject = { kind: 'port', device: device.name, port: port.port } as const;
  const disabled = id === 3;
  const evidence = usageEvidence(snapshot, device, port);
  const alone = isInfinibandPort(port) && !hostHasInfinibandLink;
  const cause = disabled
    ? 'The port, or the switch port at the other end, was disabled (ibportstate … disable, or the Ethernet interface of a RoCE port is down).'
    : 'The cable is pulled or broken, the transceiver failed or is unseated, or the switch, switch port or peer host at the other end is down.';
  const remedy = disabled
    ? 'enable the switch port: ibportstate <switch lid> <switch port> enable (find it with iblinkinfo); for RoCE, ip link set <interface> up'
    : 'reseat the cable at both ends (the QSFP must click in), then try another cable or transceiver, and check the switch port is up';
  if (evidence.length > 0 || alone) {
    const why = alone ? 'no port of this host has an InfiniBand link' : evidence.join('; ');
    return [{
      condition: 'link-down',
      severity: 'critical',
      subject,
      summary: `port ${name} has no link (${phys}): ${disabled ? 'it is disabled' : 'cable pulled or broken, or the peer is down'} (${why})`,
      meaning: 'The port carries nothing: jobs and IPoIB traffic through it fail.',
      cause,
      remedy,
      runbook: 'infinibandportlinkdown',
      alert: 'InfiniBandPortLinkDown',
    }];
  }
  return [{
    condition: 'port-without-link',
    severity: 'info',
    subject,
    summary: `port ${name} has no link (${phys}): no cable, a pulled or broken cable, or the peer is down; nothing shows it was in use (no link-down count, IPoIB or expectation), so it may be a spare port`,
    meaning: 'A spare port is normal, and other ports of this host have links; a port that should carry traffic carries none.',
    cause,
    remedy: `if port ${name} should be cabled: ${remedy}; otherwise nothing to do`,
    runbook: 'infinibandportlinkdown',
    alert: undefined,
  }];
}

function expectedFrom(expectation: LinkExpectation): string {
  return expectation.source === 'config' ? 'the config file' : 'the best both ends have enabled';
}

function degradationFindings(snapshot: Snapshot, device: Device, port: Port): Finding[] {
  const expectation = snapshot.expectations.get(portKey(device.name, port.port));
  const { widthDegraded, speedDegraded } = assessLink(port, expectation);
  const name = portName(device.name, port.port);
  const subject = { kind: 'port', device: device.name, port: port.port } as const;
  const planned = expectation?.source === 'config' ? ' If the lower value is intended, say so in the config file\'s expectations.' : '';
  const findings: Finding[] = [];
  if (widthDegraded && expectation?.width !== undefined && port.width !== undefined) {
    findings.push({
      condition: 'link-width-degraded',
      severity: 'warning',
      subject,
      summary: `port ${name} runs at ${formatWidth(port.width)}, expected ${formatWidth(expectation.width)} (${expectedFrom(expectation)}): lanes are lost, it moves ${port.width}/${expectation.width} of the bandwidth it should`,
      meaning: `The link trained on fewer lanes than it should.${planned}`,
      cause: 'A damaged cable, a dirty or damaged connector, a failing transceiver or a bent pin in the cage.',
      remedy: 'reseat the cable at both ends and clean the optics; replace the cable or transceiver if the link trains narrow again',
      runbook: 'infinibandlinkwidthdegraded',
      alert: 'InfiniBandLinkWidthDegraded',
    });
  }
  if (speedDegraded && expectation?.speed !== undefined && port.speed !== undefined) {
    findings.push({
      condition: 'link-speed-degraded',
      severity: 'warning',
      subject,
      summary: `port ${name} runs at ${port.speed} (${LANE_RATES[port.speed].nominalGbps} Gb/s per lane), expected ${expectation.speed} (${expectedFrom(expectation)}): the link trained at a lower speed`,
      meaning: `Every lane runs slower than it should.${planned}`,
      cause: 'A cable not rated for the speed, a marginal cable, a failing transceiver, old firmware at one end, or a speed disabled on the switch port.',
      remedy: 'use a cable rated for the speed: reseat it, then replace the cable or transceiver; compare the firmware with a healthy host',
      runbook: 'infinibandlinkspeeddegraded',
      alert: 'InfiniBandLinkSpeedDegraded',
    });
  }
  return findings;
}

/** Error counters worth telling about: every PMA error counter but transmit_wait (congestion, not errors). */
const ERROR_COUNTER_NAMES: ReadonlySet<string> = new Set(PMA_COUNTERS.filter((counter) => counter.error && counter.name !== 'transmit_wait').map((counter) => counter.name));

function describeCounters(counters: readonly { name: string; value: number }[]): string {
  // 64-bit values beyond 2^53 are approximate in a float64: said as such.
  return counters.map((counter) => `${counter.name} ${Number.isSafeInteger(counter.value) ? counter.value : `≈${counter.value.toExponential(3)}`}`).join(', ');
}

function counterFindings(snapshot: Snapshot, device: Device, port: Port): Finding[] {
  const peer = snapshot.diag.get(portKey(device.name, port.port))?.peer;
  const all: PortCounter[] = [...port.counters, ...(peer?.counters ?? []).map((counter) => ({ ...counter, name: `peer_${counter.name}` }))];
  const name = portName(device.name, port.port);
  const subject = { kind: 'port', device: device.name, port: port.port } as const;
  const findings: Finding[] = [];
  const saturated = all.filter((counter) => counter.saturated);
  if (saturated.length > 0) {
    findings.push({
      condition: 'counter-saturated',
      severity: 'warning',
      subject,
      summary: `port ${name}: ${plural(saturated.length, 'counter')} stuck at ${saturated.length === 1 ? 'its' : 'their'} maximum (${describeCounters(saturated)}): new events are no longer counted`,
      meaning: 'A fixed-width PMA counter at its maximum stops counting: error rates read 0 and the error alerts are blind for it until it is reset. peer_ counters are the switch port\'s.',
      cause: 'Errors accumulated for months without a reset, an error storm, or 32-bit data counters on an adapter or kernel without extended counters.',
      remedy: 'reset the counters: perfquery -R (and perfquery -R <peer lid> <peer port> for peer_ counters); if errors fill them again quickly, fix the link',
      runbook: 'infinibandcountersaturated',
      alert: 'InfiniBandCounterSaturated',
    });
  }
  const errors = all.filter((counter) => !counter.saturated && counter.value > 0 && ERROR_COUNTER_NAMES.has(counter.name.replace(/^peer_/, '')));
  if (errors.length > 0) {
    findings.push({
      condition: 'error-counters',
      severity: 'info',
      subject,
      summary: `port ${name} has counted errors since its counters were reset: ${describeCounters(errors)}`,
      meaning: 'A count, not a rate: one look cannot tell whether they still grow. A few from link bring-up are normal; a steady rise means a bad cable, transceiver or port (the InfiniBandPhysicalErrors alert watches the rate). peer_ counters are the switch port\'s.',
      cause: 'Link bring-up, or a dirty, bent or damaged cable or connector, a failing transceiver, a cable too long for the speed.',
      remedy: 'see whether they grow: perfquery; sleep 60; perfquery — if they do, reseat or replace the cable; once fixed, perfquery -R',
      runbook: 'infinibandphysicalerrors',
      alert: undefined,
    });
  }
  return findings;
}

function ipoibFinding(iface: IpoibInterface): Finding | undefined {
  const small = iface.mtu !== undefined && iface.mtu <= 2044;
  if (iface.mode !== 'datagram' && !small) return undefined;
  const details = [iface.device === undefined ? undefined : portName(iface.device, iface.port ?? 0), iface.pkey && `P_Key ${iface.pkey}`, iface.carrier === 0 ? 'no carrier' : undefined]
    .filter((part): part is string => Boolean(part));
  const which = `IPoIB ${iface.name}${details.length > 0 ? ` (${details.join(', ')})` : ''}`;
  const connected = `echo connected > /sys/class/net/${iface.name}/mode; ip link set ${iface.name} mtu 65520, made permanent in the network configuration`;
  const common = {
    condition: 'ipoib-suboptimal',
    severity: 'info',
    subject: { kind: 'interface', interface: iface.name, device: iface.device, port: iface.port },
    cause: 'The distribution\'s default (datagram), a network configuration without the IPoIB settings, a partition created with a 2K MTU (opensm\'s default), or an adapter that has only datagram mode (mlx5 enhanced IPoIB, ConnectX-4 and later).',
    runbook: 'infinibandipoibsuboptimalmode',
    alert: 'InfiniBandIPoIBSuboptimalMode',
  } as const;
  if (small) {
    return {
      ...common,
      summary: `${which} runs in ${iface.mode ?? 'unknown'} mode with MTU ${iface.mtu}: a 2K IB MTU or less, TCP/IP over it is several times slower than it could be`,
      meaning: 'IPoIB works, but every IP packet carries at most 2044 bytes: more packets, more CPU per byte moved.',
      remedy: `where the adapter has connected mode: ${connected}; otherwise give the partition a 4K MTU (mtu=5 in opensm's partitions.conf) for MTU 4092`,
    };
  }
  return {
    ...common,
    summary: `${which} runs in datagram mode with MTU ${iface.mtu ?? 'unknown'}: connected mode with MTU 65520 moves TCP/IP several times faster where the adapter has it`,
    meaning: 'IPoIB works; datagram mode limits IP packets to the IB MTU (at most 4092 bytes).',
    remedy: `where the adapter has connected mode (mlx4, or mlx5 without enhanced IPoIB): ${connected}; on mlx5 with enhanced IPoIB this is already the best: nothing to do`,
  };
}

function tsoFinding(iface: IpoibInterface | undefined, name: string, reading: TsoReading): Finding {
  const where = iface?.device === undefined ? '' : ` on ${iface.device}`;
  const base = {
    condition: 'ipoib-tso-erratum',
    subject: { kind: 'interface', interface: name, device: iface?.device, port: iface?.port },
    meaning: 'ConnectX adapters of hardware revision a0 cannot do TCP segmentation offload; kernels before about 2014 offered it anyway, and with it on, large TCP sends over IPoIB leave as corrupt IP fragments (NFS and MPI over IPoIB stall or fail).',
    cause: 'A ConnectX of hardware revision a0 (ibstat: "Hardware version: a0") with TSO on, as older kernels set it by default.',
    remedy: `ethtool -K ${name} tso off, and make it permanent (NetworkManager: nmcli connection modify <connection> ethtool.feature-tso off; ifcfg: ETHTOOL_OPTS="-K ${name} tso off")`,
    runbook: 'connectx-revision-a0-ipoib-tso',
    alert: undefined,
  } as const;
  const adapter = `IPoIB ${name}${where} (ConnectX hardware revision a0)`;
  if (reading.state === 'on') {
    return { ...base, severity: 'warning', summary: `${adapter} has TCP segmentation offload (TSO) on: this adapter cannot do it and sends large TCP transfers as corrupt IP fragments` };
  }
  if (reading.state === 'unknown') {
    return { ...base, severity: 'warning', summary: `${adapter} must run with TCP segmentation offload (TSO) off; whether it is cannot be told: ${reading.reason}` };
  }
  if (reading.fixed) {
    return { ...base, severity: 'info', summary: `${adapter}: TCP segmentation offload (TSO) is off and this kernel keeps it off: nothing to do`, remedy: 'nothing: the kernel already works around the erratum' };
  }
  return { ...base, severity: 'info', summary: `${adapter}: TCP segmentation offload (TSO) is off today; it must stay off after a reboot` };
}

const HOST_COLLECTORS: ReadonlySet<CollectorName> = new Set(['sysfs', 'ipoib', 'perfquery', 'sminfo', 'smpquery']);

const HOST_COLLECTOR_FAILURE: CollectorFailure = {
  consequence: 'what it reads is missing',
  meaning: 'The checks built on this collector could not run: its problems would not show.',
  cause: 'For perfquery, sminfo, smpquery: no access to /dev/infiniband/umad* (not root), a command timing out, or a port without a LID. For sysfs, ipoib: a wrong --path.sysfs or a driver returning errors.',
};

function hostCollectorFindings(snapshot: Snapshot): Finding[] {
  const reports = snapshot.reports.filter((report) => HOST_COLLECTORS.has(report.collector));
  // An ethtool failure is said by the TSO finding of its interface.
  return collectorFindings(reports, () => HOST_COLLECTOR_FAILURE, (error) => error.item.startsWith('ethtool '));
}

function noDeviceFinding(snapshot: Snapshot): Finding[] {
  const sysfs = snapshot.reports.find((report) => report.collector === 'sysfs');
  if (snapshot.devices.length > 0 || !sysfs?.success) return [];
  return [{
    condition: 'no-devices',
    severity: 'critical',
    subject: { kind: 'host' },
    summary: 'no InfiniBand device found (class/infiniband is missing or empty, or the device filters leave nothing)',
    meaning: 'This host cannot use InfiniBand at all: no job needing it can run here.',
    cause: 'The adapter\'s driver is not loaded (mlx5_ib, mlx4_ib, …), the adapter failed or was removed, or --device.include/--device.exclude match no device.',
    remedy: 'see whether the adapter is there (lspci | grep -i -e mellanox -e infiniband), load its driver (modprobe mlx5_ib) and read dmesg',
    runbook: 'no-infiniband-device',
    alert: undefined,
  }];
}

/** Every finding of the host part of a snapshot, in snapshot order (devices, then interfaces, then collectors). */
export function hostFindings(snapshot: Snapshot): Finding[] {
  const hostHasInfinibandLink = snapshot.devices.some((device) => device.ports.some((port) => isInfinibandPort(port) && physicalLinkIsUp(port.physicalState?.id)));
  const findings: Finding[] = [...noDeviceFinding(snapshot)];
  for (const device of snapshot.devices) {
    for (const port of device.ports) {
      findings.push(
        ...subnetManagerFindings(snapshot, device, port),
        ...linkDownFindings(snapshot, device, port, hostHasInfinibandLink),
        ...degradationFindings(snapshot, device, port),
        ...counterFindings(snapshot, device, port),
      );
    }
  }
  const interfaces = new Map(snapshot.ipoib.map((iface) => [iface.name, iface]));
  for (const iface of snapshot.ipoib) {
    const finding = ipoibFinding(iface);
    if (finding) findings.push(finding);
  }
  for (const [name, reading] of snapshot.tso) findings.push(tsoFinding(interfaces.get(name), name, reading));
  findings.push(...hostCollectorFindings(snapshot));
  return findings;
}
