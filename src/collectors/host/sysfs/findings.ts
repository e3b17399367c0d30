// The bit error rate of a host port as one look can judge it (the sysfs collector's finding; the
// rates are the recording rules'): symbol errors since the counters were reset over the bits the
// link carried since it came up, where the exporter saw it come up.
import { BIT_ERROR_RATE_THRESHOLD, bitErrorRate } from '../../../model/bit-error-rate.js';
import { plural, type Finding } from '../../../model/finding.js';
import { portKey, type Device, type PortCounter } from '../../../model/host.js';
import { formatWidth } from '../../../model/link-rate.js';

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
        { end: 'the switch port at the other end', counter: peerCounters(portKey(device.name, port.port))?.find((c) => c.name === 'symbol_errors') },
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

