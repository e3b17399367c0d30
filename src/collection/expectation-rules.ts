// What each link should run at, from the config file's rules (first match wins). Ports no rule
// matches get the best width and speed both link ends have enabled, when the diag collector
// learnt it (see collection.ts).
import type { ExpectationRule } from '../config/config-file.js';
import type { LinkExpectation } from '../snapshot/types.js';

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
