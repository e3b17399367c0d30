// Whether a link trained below what it should run at: a fact derived from one port's reading and
// its expectation, shared by the metrics and anything else that judges a snapshot.
import { speedRank, type LinkExpectation } from './link-rate.js';
import { physicalLinkIsUp } from './port-state.js';
import type { Port } from './host.js';

export interface LinkAssessment {
  widthDegraded: boolean | undefined;
  speedDegraded: boolean | undefined;
}

/** What judging a link needs of a port: a host port (sysfs) or a switch port read in fabric mode. */
export type LinkReading = Pick<Port, 'physicalState' | 'width' | 'speed'>;

/**
 * Compare the active width and speed with the expectation. Only a link that is physically up has a
 * width and speed worth judging; a down link is reported by its state, not as degraded.
 */
export function assessLink(port: LinkReading, expectation: LinkExpectation | undefined): LinkAssessment {
  if (!expectation || !physicalLinkIsUp(port.physicalState?.id)) return { widthDegraded: undefined, speedDegraded: undefined };
  return {
    widthDegraded: expectation.width !== undefined && port.width !== undefined ? port.width < expectation.width : undefined,
    speedDegraded:
      expectation.speed !== undefined && port.speed !== undefined ? speedRank(port.speed) < speedRank(expectation.speed) : undefined,
  };
}
