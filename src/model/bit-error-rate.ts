// Bit error rate of a link: errors over the bits it carried, lanes x lane signalling rate x time.
// The signalling rate is the raw rate on the wire, line coding included, as the IBTA names each
// speed (libibmad prints PortInfo's rates so); BER objectives are stated against it. The recording
// rules (rules/infiniband-alerts.yml) derive it from the nominal rate the exporter serves and read
// FDR10 and FDR at their nominal 10 and 14 Gb/s; here each speed has its exact rate.
import type { LinkSpeed, LinkWidth } from './link-rate.js';

export const LANE_SIGNALLING_GBPS: Readonly<Record<LinkSpeed, number>> = {
  SDR: 2.5,
  DDR: 5,
  QDR: 10,
  FDR10: 10.3125,
  FDR: 14.0625,
  EDR: 25.78125,
  HDR: 53.125,
  NDR: 106.25,
  XDR: 212.5,
};

/** The threshold of the shipped alerts, and ibdiagnet's classic one. */
export const BIT_ERROR_RATE_THRESHOLD = 1e-12;

/** Errors over the bits a link of `width` lanes at `speed` carried in `seconds`; undefined without time. */
export function bitErrorRate(errors: number, width: LinkWidth, speed: LinkSpeed, seconds: number): number | undefined {
  if (!(seconds > 0)) return undefined;
  return errors / (width * LANE_SIGNALLING_GBPS[speed] * 1e9 * seconds);
}
