// What each link should run at, from the config file's rules (first match wins). Ports no rule
// matches get the best width and speed both link ends have enabled, when that is known (the
// smpquery collector for host ports, discovery for fabric ports).
import type { FabricNode } from './fabric.js';
import type { LinkExpectation, LinkSpeed, LinkWidth } from './link-rate.js';

/** What the links of host devices should run at (`expectations` in the config file). */
export interface ExpectationRule {
  /** Glob on the device name: `*` any run of characters, `?` one character. */
  device: string;
  port: number | undefined;
  width: LinkWidth | undefined;
  speed: LinkSpeed | undefined;
}

/** What the links of fabric nodes should run at (`fabric.expectations`); first match wins. */
export interface FabricExpectationRule {
  /** Glob on the node's name (node-name-map) or its description: `*` any run of characters, `?` one. */
  node: string;
  /** Only these ports of the node; undefined = every port. */
  ports: readonly number[] | undefined;
  width: LinkWidth | undefined;
  speed: LinkSpeed | undefined;
}

function globToRegExp(glob: string): RegExp {
  const body = glob
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
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

/** One end of a link, as fabric expectations match it. */
export interface LinkEnd {
  node: FabricNode;
  port: number;
}

/** `fabric.expectations`: globs on node names (node-name-map) or descriptions, optional port lists. */
export class FabricExpectationRules {
  private readonly rules: readonly { rule: FabricExpectationRule; node: RegExp }[];

  constructor(rules: readonly FabricExpectationRule[]) {
    this.rules = rules.map((rule) => ({ rule, node: globToRegExp(rule.node) }));
  }

  get empty(): boolean {
    return this.rules.length === 0;
  }

  /**
   * The first rule (in file order) that matches either end of a link: a rule written for the
   * spine side of an inter-switch link holds for its leaf side too.
   */
  forLink(ends: readonly LinkEnd[]): LinkExpectation | undefined {
    const match = this.rules.find(({ rule, node }) =>
      ends.some(
        (end) =>
          (node.test(end.node.description) || (end.node.name !== undefined && node.test(end.node.name))) &&
          (rule.ports === undefined || rule.ports.includes(end.port)),
      ),
    );
    return match ? { width: match.rule.width, speed: match.rule.speed, source: 'config' } : undefined;
  }
}
