// What each link should run at. The config file's rules come first (first match wins); later the
// best width and speed both link ends have enabled (PortInfo via smpquery) fills the gaps.
import type { ExpectationRule } from '../config/config-file.js';
import { speedRank } from '../infiniband/link-rate.js';
import { physicalLinkIsUp } from '../infiniband/port-state.js';
import type { LinkExpectation, Port } from './types.js';

function globToRegExp(glob: string): RegExp {
  const body = glob.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.');
  return new RegExp(`^${body}$`);
}

export class ExpectationRules {
  private readonly rules: readonly { rule: ExpectationRule; device: RegExp }[];

  constructor(rules: readonly ExpectationRule[]) {
    this.rules = rules.map((rule) => ({ rule, device: globToRegExp(rule.device) }));
  }

  /** The first rule matching the port, as an expectation; undefined when none matches. */
  forPort(device: string, port: number): LinkExpectation | undefined {
    const match = this.rules.find(({ rule, device: pattern }) => pattern.test(device) && (rule.port === undefined || rule.port === port));
    return match ? { width: match.rule.width, speed: match.rule.speed, source: 'config' } : undefined;
  }
}

export interface LinkAssessment {
  widthDegraded: boolean | undefined;
  speedDegraded: boolean | undefined;
}

/**
 * Compare the active width and speed with the expectation. Only a link that is physically up has a
 * width and speed worth judging; a down link is reported by its state, not as degraded.
 */
export function assessLink(port: Port, expectation: LinkExpectation | undefined): LinkAssessment {
  if (!expectation || !physicalLinkIsUp(port.physicalState?.id)) return { widthDegraded: undefined, speedDegraded: undefined };
  return {
    widthDegraded: expectation.width !== undefined && port.width !== undefined ? port.width < expectation.width : undefined,
    speedDegraded:
      expectation.speed !== undefined && port.speed !== undefined ? speedRank(port.speed) < speedRank(expectation.speed) : undefined,
  };
}
