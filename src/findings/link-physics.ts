// The findings of link physics, in the style of findings/host.ts, for the `pcie` and `module`
// collectors and the bit error rate: what `check` and the landing page say where one look can
// judge it. Each mirrors an alert of rules/infiniband-alerts.yml at its severity where one exists.
import { BIT_ERROR_RATE_THRESHOLD, bitErrorRate } from '../infiniband/bit-error-rate.js';
import { BYTES_PER_GIGABIT, LANE_RATES, formatWidth } from '../infiniband/link-rate.js';
import { lanesWithLowRxPower, moduleTooHot, type ModuleReading } from '../infiniband/optical-module.js';
import { describePcieRate, pcieDegradation, pcieLimits, type PcieReading } from '../infiniband/pcie.js';
import { PORT_STATE_ACTIVE } from '../infiniband/port-state.js';
import { portKey, type Device, type Port, type Snapshot } from '../snapshot/types.js';
import { plural } from './collectors.js';
import type { Finding } from './finding.js';

const GB = 1e9;
/** GB/s, rounded down: "at most ~31 GB/s" for 31.5. */
const gigabytes = (bytesPerSecond: number): string => {
  const value = bytesPerSecond / GB;
  return value >= 10 ? String(Math.floor(value)) : (Math.floor(value * 10) / 10).toFixed(1);
};

/** A port's data rate after line coding, bytes/s, while its width and speed are known. */
function dataRate(port: Port): number | undefined {
  return port.width !== undefined && port.speed !== undefined ? port.width * LANE_RATES[port.speed].dataGbps * BYTES_PER_GIGABIT : undefined;
}

/** The ports of `devices` as pcieLimits() judges them. */
export function portDemands(devices: readonly Device[]) {
  return devices.flatMap((device) => device.ports.map((port) => ({ device: device.name, port: port.port, active: port.state?.id === PORT_STATE_ACTIVE, dataRateBytesPerSecond: dataRate(port) })));
}

/** "its NDR port", "its 2 ports (HDR, HDR)". */
function portsPhrase(ports: readonly Port[]): string {
  const speeds = ports.map((port) => port.speed ?? 'unknown-speed');
  return ports.length === 1 ? `its ${speeds[0]} port` : `its ${ports.length} ports (${speeds.join(', ')})`;
}

const PCIE_CAUSE = 'A card in a slot wired for fewer lanes or an older generation, a riser or retimer that cannot do the speed, BIOS bifurcation of the slot, a card not fully seated, or a link that retrained down after errors.';

/**
 * The PCIe findings of a host: an adapter whose link trained below what it can do (warning, as
 * InfiniBandPCIeLinkDegraded), an adapter that cannot feed its active ports at their rate although
 * its link is as good as it gets (info: the platform's limit), and uncorrectable AER errors. The
 * entry point for the `pcie` collector's findings; `readings` are that collector's, `devices` the
 * host's.
 */
export function pcieFindings(devices: readonly Device[], readings: readonly PcieReading[]): Finding[] {
  const limits = pcieLimits(readings, portDemands(devices));
  const findings: Finding[] = [];
  for (const reading of readings) {
    const device = devices.find((d) => d.name === reading.device);
    const ports = device?.ports ?? [];
    const subject = { kind: 'port', device: reading.device, port: ports[0]?.port ?? 1 } as const;
    const limit = limits.find((l) => l.device === reading.device && l.limited);
    const activePorts = ports.filter((port) => port.state?.id === PORT_STATE_ACTIVE && dataRate(port) !== undefined);
    const degradation = pcieDegradation(reading);
    const trained = describePcieRate(reading.current);
    if (degradation.width || degradation.speed) {
      const reasons = [degradation.width ? 'width' : undefined, degradation.speed ? 'speed' : undefined].filter(Boolean).join(' and ');
      const of = degradation.speed ? describePcieRate(reading.max) : `x${reading.max.lanes}`;
      const capacity = limit ? `: ${portsPhrase(activePorts)} can move at most ~${gigabytes(limit.bandwidthBytesPerSecond)} GB/s of ${activePorts.length === 1 ? 'its' : 'their'} ${gigabytes(limit.demandBytesPerSecond)}` : '';
      const slotLimit = slotLimitOf(reading);
      findings.push({
        condition: 'pcie-link-degraded',
        severity: 'warning',
        subject,
        summary: `${reading.device} runs PCIe ${trained} of ${of}${capacity}`,
        meaning: `The adapter's PCIe link trained below what the adapter can do (by ${reasons}). Its InfiniBand ports still say ACTIVE at full rate, but everything they carry crosses this link${limit ? ', which is slower than they are' : ''}.`,
        cause: slotLimit ? `The slot is the limit: the port above the adapter (${slotLimit}) can do no more. ${PCIE_CAUSE}` : PCIE_CAUSE,
        remedy: slotLimit
          ? `move the card to a slot wired for ${describePcieRate(reading.max)} (see the server's slot map), or accept the limit; lspci -vv shows LnkCap and LnkSta of the card and of the bridge above it`
          : 'reseat the card, remove or replace the riser, check the BIOS slot settings (bifurcation off, link speed Auto); lspci -vv -s <address> shows LnkCap (what it can do) against LnkSta (what it trained at)',
        runbook: 'infinibandpcielinkdegraded',
        alert: 'InfiniBandPCIeLinkDegraded',
      });
    } else if (limit) {
      findings.push({
        condition: 'pcie-limited',
        severity: 'info',
        subject,
        summary: `${reading.device}'s PCIe ${trained} link carries at most ~${gigabytes(limit.bandwidthBytesPerSecond)} GB/s, less than the ${gigabytes(limit.demandBytesPerSecond)} GB/s of the active ports it feeds`,
        meaning: 'The adapter\'s PCIe link is as good as the adapter can do, but the ports behind it together can move more: they cannot all run at their rate at once.',
        cause: 'The card\'s design (a dual-port card whose ports together exceed its PCIe link), or ports of one card on separate PCI functions that share its link.',
        remedy: 'nothing to fix on this host: plan jobs and expectations for the PCIe rate, or use a card or slot of a later PCIe generation',
        runbook: 'infinibandpcielinkdegraded',
        alert: undefined,
      });
    }
    const uncorrectable = (reading.aer.nonfatal ?? 0) + (reading.aer.fatal ?? 0);
    if (uncorrectable > 0) {
      findings.push({
        condition: 'pcie-aer-uncorrectable',
        severity: 'warning',
        subject,
        summary: `${reading.device} reported ${[reading.aer.fatal ? `${reading.aer.fatal} fatal` : undefined, reading.aer.nonfatal ? `${reading.aer.nonfatal} non-fatal` : undefined].filter(Boolean).join(' and ')} uncorrectable PCIe error${uncorrectable === 1 ? '' : 's'} since boot (and ${reading.aer.correctable ?? 0} correctable)`,
        meaning: 'An uncorrectable PCIe error loses a transaction: the driver may have reset the adapter, and jobs using it may have failed.',
        cause: 'A marginal slot, riser or card, a card not fully seated, or a firmware fault.',
        remedy: 'read dmesg for "AER" and "mlx5_core" around the errors; reseat the card, update its firmware and the BIOS; replace the card if errors recur',
        runbook: 'infinibandpcielinkdegraded',
        alert: undefined,
      });
    }
  }
  return findings;
}

/** The capability of the port above the adapter, when it is what holds the link down. */
function slotLimitOf(reading: PcieReading): string | undefined {
  const up = reading.upstream;
  if (!up) return undefined;
  const narrower = up.lanes !== undefined && reading.max.lanes !== undefined && up.lanes < reading.max.lanes;
  const slower = up.gtps !== undefined && reading.max.gtps !== undefined && up.gtps < reading.max.gtps;
  return narrower || slower ? describePcieRate(up) : undefined;
}

function moduleName(reading: ModuleReading): string {
  const identity = reading.identity;
  const name = [identity?.vendor, identity?.partNumber].filter(Boolean).join(' ');
  return `the module in ${reading.device}/${reading.port}${name ? ` (${name}${identity?.serial ? `, serial ${identity.serial}` : ''})` : ''}`;
}

const levelName = (level: string): string => level.replace('_', ' ');

/**
 * The findings of the cables and modules: too hot or receiving too little light at the module's
 * own thresholds (warnings, as InfiniBandModuleTemperatureHigh and InfiniBandModuleOpticalPowerLow),
 * a post-FEC BER above 10^-12 since the PHY counters were cleared (as InfiniBandLinkBitErrorRateHigh),
 * and the firmware's link-down reason (info). The entry point for the `module` collector's findings.
 */
export function moduleFindings(readings: readonly ModuleReading[]): Finding[] {
  const findings: Finding[] = [];
  for (const reading of readings) {
    const subject = { kind: 'port', device: reading.device, port: reading.port } as const;
    const hot = moduleTooHot(reading);
    if (hot) {
      findings.push({
        condition: 'module-temperature-high',
        severity: 'warning',
        subject,
        summary: `${moduleName(reading)} is at ${hot.celsius} °C, at or above its own ${levelName(hot.threshold.level)} threshold of ${hot.threshold.value} °C`,
        meaning: 'A hot module drifts out of its optical specification: its link starts counting errors, and past its alarm threshold it may turn its laser off.',
        cause: 'Poor airflow at the adapter or the switch (a failed fan, a missing blank, cables in front of the vents), a module drawing more power than the cage is cooled for, or a failing module.',
        remedy: 'restore the airflow; compare with the other ports (all hot: cooling; one hot: the module) and replace the module if it stays hot',
        runbook: 'infinibandmoduletemperaturehigh',
        alert: 'InfiniBandModuleTemperatureHigh',
      });
    }
    const dark = lanesWithLowRxPower(reading);
    if (dark) {
      const lanes = dark.lanes.map(({ lane, dbm }) => `${dbm} dBm on lane ${lane}`).join(', ');
      findings.push({
        condition: 'module-optical-power-low',
        severity: 'warning',
        subject,
        summary: `${moduleName(reading)} receives ${lanes}: at or below its own ${levelName(dark.threshold.level)} threshold of ${dark.threshold.value} dBm`,
        meaning: 'The receiver is close to where it cannot tell ones from zeros: bit errors follow, then the lane or the link drops.',
        cause: 'A dirty connector (most often), a damaged or tightly bent fibre, a failing transmitter at the other end, a fibre too long for the module.',
        remedy: 'clean both connectors of the fibre and reseat; then replace the fibre, the module at the other end (check its Tx power and bias), then this module',
        runbook: 'infinibandmoduleopticalpowerlow',
        alert: 'InfiniBandModuleOpticalPowerLow',
      });
    }
    const ber = reading.ber.symbol ?? reading.ber.effective;
    if (ber !== undefined && ber > BIT_ERROR_RATE_THRESHOLD) {
      const since = reading.minutesSinceClear === undefined ? 'since its counters were cleared' : `in the ${Math.round(reading.minutesSinceClear)} minutes since its counters were cleared`;
      findings.push({
        condition: 'link-bit-error-rate-high',
        severity: 'warning',
        subject,
        summary: `port ${reading.device}/${reading.port}: the adapter's PHY measured ${reading.ber.symbol !== undefined ? 'a symbol' : 'an effective (post-FEC)'} BER of ${ber.toExponential(1)} ${since}, above 10^-12`,
        meaning: 'Errors forward error correction could not fix reach the link layer: every one is a packet dropped and resent.',
        cause: 'A dirty connector, a damaged cable, a failing transceiver, a cable not rated for the speed.',
        remedy: `reseat and clean the cable at both ends, then swap it; mstlink -d ${reading.device} -p ${reading.port} -c shows the errors per lane, --pc clears them`,
        runbook: 'infinibandlinkbiterrorratehigh',
        alert: 'InfiniBandLinkBitErrorRateHigh',
      });
    }
    if (reading.linkDownReason) {
      findings.push({
        condition: 'link-down-reason',
        severity: 'info',
        subject,
        summary: `port ${reading.device}/${reading.port}: the adapter's firmware reports "${reading.linkDownReason.reason}" (status ${reading.linkDownReason.opcode})`,
        meaning: 'The firmware\'s own diagnosis of the link: why it is down or not at its best.',
        cause: 'What the recommendation says: an unplugged cable, a peer that does not answer, a cable not supported at the speed, a training failure.',
        remedy: `follow the recommendation; mstlink -d ${reading.device} -p ${reading.port} shows it with the link's state`,
        runbook: 'infinibandportlinkdown',
        alert: undefined,
      });
    }
  }
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
export function bitErrorRateFindings(snapshot: Snapshot, linkUpSeconds: (device: string, port: number) => number | undefined): Finding[] {
  const findings: Finding[] = [];
  for (const device of snapshot.devices) {
    for (const port of device.ports) {
      if (port.width === undefined || port.speed === undefined || port.physicalState?.id !== 5) continue;
      const seconds = linkUpSeconds(device.name, port.port);
      const ends = [
        { end: 'this port', counter: port.counters.find((c) => c.name === 'symbol_errors') },
        { end: 'the switch port at the other end', counter: snapshot.diag.get(portKey(device.name, port.port))?.peer?.counters.find((c) => c.name === 'symbol_errors') },
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
            ? 'reseat and clean the cable at both ends, then swap it or its transceivers; perfquery -x and mstlink -c show whether errors still grow'
            : 'nothing unless it grows: perfquery -x; sleep 60; perfquery -x',
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

