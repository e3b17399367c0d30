// The sysfs collector's findings: each port judged from its reading (down, INIT, degraded,
// errors, bit error rate), and a host without any InfiniBand device.
import type { LinkExpectation } from '../../../model/link-rate.js';
import { isInfinibandPort, portKey, portName, type Device, type Port, type PortCounter } from '../../../model/host.js';
import { assessLink } from '../../../model/link-degradation.js';
import { LANE_RATES, formatWidth } from '../../../model/link-rate.js';
import { PMA_COUNTERS } from '../../../model/pma-counters.js';
import { BIT_ERROR_RATE_THRESHOLD, bitErrorRate } from '../../../model/bit-error-rate.js';
import { PORT_STATE_INIT, physicalLinkIsUp } from '../../../model/port-state.js';
import { plural, type Finding } from '../../../model/finding.js';
import type { Snapshot } from '../../../model/snapshot.js';
import { IPOIB_PART, PERFQUERY_PART, SMPQUERY_PART, SYSFS_PART } from '../../parts.js';
import { countersOf, expectationOf } from './metrics.js';
export const START_OPENSM = 'start a subnet manager on one host of this fabric: systemctl enable --now opensm (package opensm)';
/**
 * perfquery addressed at this very port: without -C and -P it reads the first port it finds, on a
 * host of several adapters another one than the finding names.
 */
export function perfqueryOf(device: string, port: number, options = ''): string {
  return `perfquery -C ${device} -P ${port}${options === '' ? '' : ` ${options}`}`;
}

/** perfquery of the switch port at the other end, from this port (its LID from smpquery, when known). */
function peerPerfquery(snapshot: Snapshot, device: string, port: number, options: string): string {
  const peer = SMPQUERY_PART.of(snapshot)?.get(portKey(device, port))?.peer;
  const address = peer?.lid === undefined ? `<peer lid> ${peer?.port ?? '<peer port>'}` : `${peer.lid} ${peer.port}`;
  return perfqueryOf(device, port, `${options}${options === '' ? '' : ' '}${address}`);
}
export const SM_MEANING = 'A port without a subnet manager gets no LID and carries no traffic; IPoIB on it has no carrier.';

/** A linked InfiniBand port that no subnet manager configured: INIT, or SM LID 0 (sysfs alone tells). */
export function unconfiguredPortFindings(device: Device, port: Port): Finding[] {
  if (!isInfinibandPort(port) || !physicalLinkIsUp(port.physicalState?.id)) return [];
  const name = portName(device.name, port.port);
  const subject = { kind: 'port', device: device.name, port: port.port } as const;
  if (port.state?.id === PORT_STATE_INIT) {
    return [
      {
        condition: 'port-stuck-init',
        severity: 'critical',
        subject,
        summary: `port ${name} is INIT with its link up (LinkUp, SM LID ${port.smLid ?? 'unknown'}): no subnet manager has configured it`,
        meaning: `The cable is fine and the link trained, but no subnet manager has brought the port to ACTIVE. ${SM_MEANING} INIT is normal for a few seconds after the link comes up; a port still INIT a minute later is stuck.`,
        cause:
          "No subnet manager (opensm, or a managed switch's) runs on this fabric, it died before this port came up, or it cannot reach this port.",
        remedy: START_OPENSM,
        runbook: 'infinibandportstuckinitializing',
        alert: 'InfiniBandPortStuckInitializing',
      },
    ];
  }
  if (port.smLid === 0) {
    return [
      {
        condition: 'no-sm-lid',
        severity: 'critical',
        subject,
        summary: `port ${name} has a link but SM LID 0: no subnet manager has ever configured it`,
        meaning: SM_MEANING,
        cause: 'No subnet manager runs on this fabric, or it cannot reach this port.',
        remedy: START_OPENSM,
        runbook: 'infinibandsubnetmanagerunreachable',
        alert: 'InfiniBandSubnetManagerUnreachable',
      },
    ];
  }
  return [];
}

function physicalStateName(port: Port): string {
  const id = port.physicalState?.id;
  return port.physicalState?.name ?? (id === undefined ? 'unknown' : `state ${id}`);
}

/** Signs in one snapshot that a port without a link was in use: then its loss matters. */
function usageEvidence(snapshot: Snapshot, device: Device, port: Port): string[] {
  const key = portKey(device.name, port.port);
  const evidence: string[] = [];
  const downed = port.counters.find((value) => value.name === 'link_downed')?.value ?? 0;
  if (downed > 0) evidence.push(`its link went down ${plural(downed, 'time')} since the counters were reset`);
  const interfaces = (IPOIB_PART.of(snapshot) ?? [])
    .filter((iface) => iface.device === device.name && iface.port === port.port)
    .map((iface) => iface.name);
  if (interfaces.length > 0) evidence.push(`IPoIB ${interfaces.join(', ')} ${interfaces.length === 1 ? 'runs' : 'run'} on it`);
  if (SYSFS_PART.of(snapshot)?.configured.has(key)) evidence.push('the config file expects a link on it');
  if ((SYSFS_PART.of(snapshot)?.stateChanges.get(key) ?? 0) > 0) evidence.push('the exporter saw its state change');
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
    return [
      {
        condition: 'link-down',
        severity: 'critical',
        subject,
        summary: `port ${name} has no link (${phys}): ${disabled ? 'it is disabled' : 'cable pulled or broken, or the peer is down'} (${why})`,
        meaning: 'The port carries nothing: jobs and IPoIB traffic through it fail.',
        cause,
        remedy,
        runbook: 'infinibandportlinkdown',
        alert: 'InfiniBandPortLinkDown',
      },
    ];
  }
  return [
    {
      condition: 'port-without-link',
      severity: 'info',
      subject,
      summary: `port ${name} has no link (${phys}): no cable, a pulled or broken cable, or the peer is down; nothing shows it was in use (no link-down count, IPoIB or expectation), so it may be a spare port`,
      meaning: 'A spare port is normal, and other ports of this host have links; a port that should carry traffic carries none.',
      cause,
      remedy: `if port ${name} should be cabled: ${remedy}; otherwise nothing to do`,
      runbook: 'infinibandportlinkdown',
      alert: undefined,
    },
  ];
}

function expectedFrom(expectation: LinkExpectation): string {
  return expectation.source === 'config' ? 'the config file' : 'the best both ends have enabled';
}

function degradationFindings(snapshot: Snapshot, device: Device, port: Port): Finding[] {
  const expectation = expectationOf(snapshot, portKey(device.name, port.port));
  const { widthDegraded, speedDegraded } = assessLink(port, expectation);
  const name = portName(device.name, port.port);
  const subject = { kind: 'port', device: device.name, port: port.port } as const;
  const planned = expectation?.source === 'config' ? " If the lower value is intended, say so in the config file's expectations." : '';
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
      cause:
        'A cable not rated for the speed, a marginal cable, a failing transceiver, old firmware at one end, or a speed disabled on the switch port.',
      remedy: 'use a cable rated for the speed: reseat it, then replace the cable or transceiver; compare the firmware with a healthy host',
      runbook: 'infinibandlinkspeeddegraded',
      alert: 'InfiniBandLinkSpeedDegraded',
    });
  }
  return findings;
}

/** Error counters worth telling about: every PMA error counter but transmit_wait (congestion, not errors). */
const ERROR_COUNTER_NAMES: ReadonlySet<string> = new Set(
  PMA_COUNTERS.filter((c) => c.error && c.name !== 'transmit_wait').map((c) => c.name),
);

function describeCounters(counters: readonly { name: string; value: number }[]): string {
  // 64-bit values beyond 2^53 are approximate in a float64: said as such.
  return counters.map((c) => `${c.name} ${Number.isSafeInteger(c.value) ? c.value : `≈${c.value.toExponential(3)}`}`).join(', ');
}

function counterFindings(snapshot: Snapshot, device: Device, port: Port): Finding[] {
  const peerCounters = PERFQUERY_PART.of(snapshot)?.get(portKey(device.name, port.port))?.peerCounters ?? [];
  const all: PortCounter[] = [...countersOf(snapshot, device.name, port), ...peerCounters.map((c) => ({ ...c, name: `peer_${c.name}` }))];
  const name = portName(device.name, port.port);
  const subject = { kind: 'port', device: device.name, port: port.port } as const;
  const findings: Finding[] = [];
  const saturated = all.filter((c) => c.saturated);
  if (saturated.length > 0) {
    findings.push({
      condition: 'counter-saturated',
      severity: 'warning',
      subject,
      summary: `port ${name}: ${plural(saturated.length, 'counter')} stuck at ${saturated.length === 1 ? 'its' : 'their'} maximum (${describeCounters(saturated)}): new events are no longer counted`,
      meaning:
        "A fixed-width PMA counter at its maximum stops counting: error rates read 0 and the error alerts are blind for it until it is reset. peer_ counters are the switch port's.",
      cause:
        'Errors accumulated for months without a reset, an error storm, or 32-bit data counters on an adapter or kernel without extended counters.',
      remedy: `reset the counters: ${perfqueryOf(device.name, port.port, '-R')}${saturated.some((c) => c.name.startsWith('peer_')) ? ` (and ${peerPerfquery(snapshot, device.name, port.port, '-R')} for the peer_ counters)` : ''}; if errors fill them again quickly, fix the link`,
      runbook: 'infinibandcountersaturated',
      alert: 'InfiniBandCounterSaturated',
    });
  }
  const errors = all.filter((c) => !c.saturated && c.value > 0 && ERROR_COUNTER_NAMES.has(c.name.replace(/^peer_/, '')));
  if (errors.length > 0) {
    findings.push({
      condition: 'error-counters',
      severity: 'info',
      subject,
      summary: `port ${name} has counted errors since its counters were reset: ${describeCounters(errors)}`,
      meaning:
        "A count, not a rate: one look cannot tell whether they still grow. A few from link bring-up are normal; a steady rise means a bad cable, transceiver or port (the InfiniBandPhysicalErrors alert watches the rate). peer_ counters are the switch port's.",
      cause: 'Link bring-up, or a dirty, bent or damaged cable or connector, a failing transceiver, a cable too long for the speed.',
      remedy: `see whether they grow: ${perfqueryOf(device.name, port.port)}; sleep 60; ${perfqueryOf(device.name, port.port)} — if they do, reseat or replace the cable; once fixed, ${perfqueryOf(device.name, port.port, '-R')}`,
      runbook: 'infinibandphysicalerrors',
      alert: undefined,
    });
  }
  return findings;
}

function noDeviceFinding(snapshot: Snapshot): Finding[] {
  const report = snapshot.reports.find((candidate) => candidate.collector === SYSFS_PART.name);
  if (snapshot.devices.length > 0 || !report?.success) return [];
  return [
    {
      condition: 'no-devices',
      severity: 'critical',
      subject: { kind: 'host' },
      summary: 'no InfiniBand device found (class/infiniband is missing or empty, or the device filters leave nothing)',
      meaning: 'This host cannot use InfiniBand at all: no job needing it can run here.',
      cause:
        "The adapter's driver is not loaded (mlx5_ib, mlx4_ib, …), the adapter failed or was removed, or --device.include/--device.exclude match no device.",
      remedy:
        'see whether the adapter is there (lspci | grep -i -e mellanox -e infiniband), load its driver (modprobe mlx5_ib) and read dmesg',
      runbook: 'no-infiniband-device',
      alert: undefined,
    },
  ];
}

/** The findings of every port, in snapshot order: no subnet manager, link down, degradation, counters. */
export function judge(snapshot: Snapshot): Finding[] {
  const hostHasInfinibandLink = snapshot.devices.some((device) =>
    device.ports.some((port) => isInfinibandPort(port) && physicalLinkIsUp(port.physicalState?.id)),
  );
  const findings: Finding[] = [...noDeviceFinding(snapshot)];
  for (const device of snapshot.devices) {
    for (const port of device.ports) {
      findings.push(
        ...unconfiguredPortFindings(device, port),
        ...linkDownFindings(snapshot, device, port, hostHasInfinibandLink),
        ...degradationFindings(snapshot, device, port),
        ...counterFindings(snapshot, device, port),
      );
    }
  }
  const part = SYSFS_PART.of(snapshot);
  const readAt = snapshot.reports.find((report) => report.collector === SYSFS_PART.name)?.finishedAt;
  const upSeconds = (device: string, port: number): number | undefined => {
    const upAt = part?.linkUpAt.get(portKey(device, port));
    return upAt === undefined || readAt === undefined ? undefined : Math.max(1, readAt - upAt / 1000);
  };
  findings.push(...bitErrorRateFindings(snapshot.devices, (key) => PERFQUERY_PART.of(snapshot)?.get(key)?.peerCounters, upSeconds));
  return findings;
}

/**
 * The bit error rate of each linked port since its counters were reset, where the data allows: the
 * symbol error counters of both ends (this port's, and the peer's from the diag collector) over the
 * bits the link carried since it came up, `linkUpSeconds(device, port)` (when the collection saw
 * it come up, or how long it has been up; undefined where unknown). One look cannot see a rate: a
 * counter reset before the link came up also holds its training errors, so the figure is "≈".
 * Flagged at the alerts' threshold (warning, as InfiniBandLinkBitErrorRateHigh); a link below it
 * with errors is said at info.
 */
export function bitErrorRateFindings(
  devices: readonly Device[],
  peerCounters: (key: string) => readonly PortCounter[] | undefined,
  linkUpSeconds: (device: string, port: number) => number | undefined,
): Finding[] {
  const findings: Finding[] = [];
  for (const device of devices) {
    for (const port of device.ports) {
      if (port.width === undefined || port.speed === undefined || port.physicalState?.id !== 5) continue;
      const seconds = linkUpSeconds(device.name, port.port);
      const ends = [
        { end: 'this port', counter: port.counters.find((c) => c.name === 'symbol_errors') },
        {
          end: 'the switch port at the other end',
          counter: peerCounters(portKey(device.name, port.port))?.find((c) => c.name === 'symbol_errors'),
        },
      ];
      for (const { end, counter } of ends) {
        if (!counter || counter.saturated || counter.value === 0 || seconds === undefined) continue;
        const ber = bitErrorRate(counter.value, port.width, port.speed, seconds);
        if (ber === undefined) continue;
        const high = ber > BIT_ERROR_RATE_THRESHOLD;
        findings.push({
          condition: high ? 'link-bit-error-rate-high' : 'link-bit-errors',
          severity: high ? 'warning' : 'info',
          subject: { kind: 'port', device: device.name, port: port.port },
          summary: `port ${device.name}/${port.port} (${formatWidth(port.width)} ${port.speed}), ${end}: symbol errors since reset: ${counter.value}, over the bits carried since the link came up ${formatDuration(seconds)} ago: BER ≈ ${ber.toExponential(1)}${high ? ', above 10^-12' : ''}`,
          meaning: high
            ? 'On HDR/NDR links symbol errors are what forward error correction could not fix: at this rate the link drops and resends packets often enough to matter.'
            : 'A few errors, mostly from link bring-up; below 10^-12 the link is healthy.',
          cause: 'Link bring-up, or a dirty, bent or damaged cable or connector, a failing transceiver, a cable too long for the speed.',
          remedy: high
            ? `reseat and clean the cable at both ends, then swap it or its transceivers; ${perfqueryOf(device.name, port.port, '-x')} and mstlink -d ${device.name} -p ${port.port} -c show whether errors still grow`
            : `nothing unless it grows: ${perfqueryOf(device.name, port.port, '-x')}; sleep 60; ${perfqueryOf(device.name, port.port, '-x')}`,
          runbook: 'infinibandlinkbiterrorratehigh',
          alert: high ? 'InfiniBandLinkBitErrorRateHigh' : undefined,
        });
      }
    }
  }
  return findings;
}

function formatDuration(seconds: number): string {
  if (seconds < 3600) return plural(Math.max(1, Math.round(seconds / 60)), 'minute');
  if (seconds < 2 * 86400) return plural(Math.round(seconds / 3600), 'hour');
  return plural(Math.round(seconds / 86400), 'day');
}
