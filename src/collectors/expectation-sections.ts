// The config file's lists of what links should run at: `expectations` (host ports, the sysfs
// collector's) and `fabric.expectations` (fabric ports, the fabric_ports collector's). Their
// schemas, and the words for each way an entry can be wrong.
import type { JsonSchema, SchemaProblem, Section } from '../config/flags.js';
import type { ExpectationRule, FabricExpectationRule } from '../model/expectations.js';
import { LINK_SPEEDS, LINK_WIDTHS, type LinkSpeed, type LinkWidth } from '../model/link-rate.js';

const PORT_NUMBER: JsonSchema = { type: 'integer', minimum: 1, maximum: 255 };
const RATE: Record<string, JsonSchema> = {
  width: { enum: [...LINK_WIDTHS] },
  speed: { type: 'string', format: 'link-speed' },
};
const FORMATS = { 'link-speed': (value: string) => (LINK_SPEEDS as readonly string[]).includes(value.toUpperCase()) };

/** A list of rules: objects with `name` (a glob) and a width and/or speed. */
function rulesSchema(name: string, more: Record<string, JsonSchema>): JsonSchema {
  return {
    type: 'array',
    items: {
      type: 'object',
      additionalProperties: false,
      required: [name],
      properties: { [name]: { type: 'string', minLength: 1 }, ...more, ...RATE },
      anyOf: [{ required: ['width'] }, { required: ['speed'] }],
    },
  };
}

/** The words for a problem with a width or speed (shared by both lists). */
function rateProblem(field: string, got: string): string | undefined {
  if (field === 'width') return `"width" must be a lane count, one of ${LINK_WIDTHS.join(', ')}, got ${got}`;
  if (field === 'speed') return `"speed" must be one of ${LINK_SPEEDS.join(' ')}, got ${got}`;
  return undefined;
}

const speedOf = (value: unknown): LinkSpeed | undefined => (value === undefined ? undefined : (String(value).toUpperCase() as LinkSpeed));
const widthOf = (value: unknown): LinkWidth | undefined => value as LinkWidth | undefined;

interface Words {
  /** "an expectation", "a fabric expectation" */
  one: string;
  key: string;
  name: string;
  nameExample: string;
  keys: readonly string[];
}

function explainRules(words: Words, problem: SchemaProblem, field: (name: string, got: string) => string | undefined): string {
  const { path, keyword, property, value, got } = problem;
  const entry = value as Record<string, unknown> | undefined;
  if (path.length === 0) return `"${words.key}" must be a list of {${words.keys.join(', ')}}, got ${got([])}`;
  if (path.length === 1) {
    if (keyword === 'type')
      return `each ${words.one.replace(/^an? /, '')} must be a mapping with ${words.name} and width and/or speed, got ${got(path)}`;
    if (keyword === 'required' && property === words.name) return `${words.one} needs "${words.name}" (${words.nameExample})`;
    if (keyword === 'additionalProperties') return `unknown key "${property}" in ${words.one}, expected one of: ${words.keys.join(', ')}`;
    return `the ${words.one.replace(/^an? /, '')} for "${String(entry?.[words.name])}" needs "width" and/or "speed"`;
  }
  const name = String(path[1]);
  return field(name, got(path.slice(0, 2))) ?? rateProblem(name, got(path.slice(0, 2))) ?? `"${name}" is not valid here, got ${got(path)}`;
}

export const EXPECTATIONS_SECTION: Section<readonly ExpectationRule[]> = {
  key: 'expectations',
  schema: rulesSchema('device', { port: PORT_NUMBER }),
  formats: FORMATS,
  empty: [],
  parse: (value) =>
    (value as Record<string, unknown>[]).map((entry) => ({
      device: entry.device as string,
      port: entry.port as number | undefined,
      width: widthOf(entry.width),
      speed: speedOf(entry.speed),
    })),
  explain: (problem) =>
    explainRules(
      {
        one: 'an expectation',
        key: 'expectations',
        name: 'device',
        nameExample: 'a glob such as "mlx5_*"',
        keys: ['device', 'port', 'width', 'speed'],
      },
      problem,
      (field, got) =>
        field === 'device'
          ? `"device" must be a glob such as "mlx5_*", got ${got}`
          : field === 'port'
            ? `"port" must be a port number 1–255, got ${got}`
            : undefined,
    ),
};

export const FABRIC_EXPECTATIONS_SECTION: Section<readonly FabricExpectationRule[]> = {
  key: 'fabric.expectations',
  schema: rulesSchema('node', { ports: { type: 'array', minItems: 1, items: PORT_NUMBER } }),
  formats: FORMATS,
  empty: [],
  parse: (value) =>
    (value as Record<string, unknown>[]).map((entry) => ({
      node: entry.node as string,
      ports: entry.ports as number[] | undefined,
      width: widthOf(entry.width),
      speed: speedOf(entry.speed),
    })),
  explain: (problem) =>
    explainRules(
      {
        one: 'a fabric expectation',
        key: 'fabric.expectations',
        name: 'node',
        nameExample: 'a glob such as "leaf-*"',
        keys: ['node', 'ports', 'width', 'speed'],
      },
      problem,
      (field, got) =>
        field === 'node'
          ? `"node" must be a glob on a node name or description such as "leaf-*", got ${got}`
          : field === 'ports'
            ? `"ports" must be a list of port numbers 1–255 such as [1, 2], got ${got}`
            : undefined,
    ),
};
