// The YAML config file (--config.file): every key optional, unknown keys and wrong types are
// errors that name the file, the line and what was expected.
import { readFileSync } from 'node:fs';
import type { LineCounter, Node } from 'yaml';
import { yaml } from './yaml.js';
import { LINK_SPEEDS, LINK_WIDTHS, type LinkSpeed, type LinkWidth } from '../infiniband/link-rate.js';
import { parseDuration } from './duration.js';
import { UsageError } from './errors.js';

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

/** Settings from the file, keyed by the flag they correspond to. */
export interface FileSettings {
  values: Map<string, string | boolean>;
  /** The line of each value, for errors found later (a path that does not exist). */
  lines: Map<string, number>;
  expectations: ExpectationRule[];
  fabricExpectations: FabricExpectationRule[];
}

type Scalar = string | boolean;

interface Field {
  flag: string;
  type: 'string' | 'boolean' | 'duration' | 'integer' | 'regex' | 'level' | 'format' | 'shard';
}

// YAML path → flag name. The nesting of the file mirrors the dotted flag names.
const FIELDS: Record<string, Record<string, Field>> = {
  web: {
    listen_address: { flag: 'web.listen-address', type: 'string' },
    telemetry_path: { flag: 'web.telemetry-path', type: 'string' },
    config_file: { flag: 'web.config.file', type: 'string' },
    disable_exporter_metrics: { flag: 'web.disable-exporter-metrics', type: 'boolean' },
  },
  path: { sysfs: { flag: 'path.sysfs', type: 'string' } },
  collection: { interval: { flag: 'collection.interval', type: 'duration' } },
  diag: {
    enabled: { flag: 'collector.diag', type: 'boolean' },
    interval: { flag: 'diag.interval', type: 'duration' },
    timeout: { flag: 'diag.timeout', type: 'duration' },
    max_concurrent: { flag: 'diag.max-concurrent', type: 'integer' },
    perfquery_path: { flag: 'perfquery.path', type: 'string' },
    sminfo_path: { flag: 'sminfo.path', type: 'string' },
    smpquery_path: { flag: 'smpquery.path', type: 'string' },
  },
  devices: {
    include: { flag: 'device.include', type: 'regex' },
    exclude: { flag: 'device.exclude', type: 'regex' },
  },
  metrics: { port_state_series: { flag: 'metrics.port-state-series', type: 'boolean' } },
  fabric: {
    enabled: { flag: 'collector.fabric', type: 'boolean' },
    interval: { flag: 'fabric.interval', type: 'duration' },
    discovery_interval: { flag: 'fabric.discovery-interval', type: 'duration' },
    max_concurrent: { flag: 'fabric.max-concurrent', type: 'integer' },
    node_name_map: { flag: 'fabric.node-name-map', type: 'string' },
    hca_ports: { flag: 'fabric.hca-ports', type: 'boolean' },
    shard: { flag: 'fabric.shard', type: 'shard' },
    ibnetdiscover_path: { flag: 'ibnetdiscover.path', type: 'string' },
    iblinkinfo_path: { flag: 'iblinkinfo.path', type: 'string' },
    ibqueryerrors_path: { flag: 'ibqueryerrors.path', type: 'string' },
    saquery_path: { flag: 'saquery.path', type: 'string' },
  },
  log: {
    level: { flag: 'log.level', type: 'level' },
    format: { flag: 'log.format', type: 'format' },
  },
};

const SECTIONS = [...Object.keys(FIELDS), 'expectations'];
const EXPECTATION_KEYS = ['device', 'port', 'width', 'speed'];
const FABRIC_EXPECTATION_KEYS = ['node', 'ports', 'width', 'speed'];

/** `--fabric.shard` text: `i/n` with 1 ≤ i ≤ n. */
export function parseShard(text: string): { index: number; count: number } | undefined {
  const match = /^(\d{1,4})\/(\d{1,4})$/.exec(text.trim());
  if (!match) return undefined;
  const index = Number(match[1]);
  const count = Number(match[2]);
  return index >= 1 && index <= count ? { index, count } : undefined;
}

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export const LOG_FORMATS = ['json', 'logfmt'] as const;

/** Errors that name the file (and the line of a node) with the kind of file in front. */
export class FileContext {
  constructor(
    readonly file: string,
    private readonly lines: LineCounter,
    private readonly kind = 'config file',
  ) {}

  error(node: Node | null | undefined, message: string): UsageError {
    const line = this.line(node);
    return new UsageError(`${this.kind} ${line === undefined ? this.file : `${this.file}:${line}`}: ${message}`);
  }

  line(node: Node | null | undefined): number | undefined {
    const offset = node?.range?.[0];
    return offset === undefined ? undefined : this.lines.linePos(offset).line;
  }
}

/** Parse YAML text; a syntax error becomes a UsageError naming the file and line. Null for an empty document. */
export function parseYaml(text: string, file: string, kind = 'config file'): { root: Node | null; ctx: FileContext } {
  const lines = new (yaml().LineCounter)();
  const doc = yaml().parseDocument(text, { lineCounter: lines, uniqueKeys: true, prettyErrors: true });
  const firstError = doc.errors[0];
  if (firstError) {
    const line = firstError.linePos?.[0]?.line;
    const message = (firstError.message.split('\n')[0] ?? firstError.message).replace(/ at line \d+, column \d+:$/, '');
    throw new UsageError(`${kind} ${line === undefined ? file : `${file}:${line}`}: not valid YAML: ${message}`);
  }
  const root = doc.contents;
  return { root: root === null || (yaml().isScalar(root) && root.value === null) ? null : root, ctx: new FileContext(file, lines, kind) };
}

export function describe(node: unknown): string {
  if (yaml().isMap(node)) return 'a mapping';
  if (yaml().isSeq(node)) return 'a list';
  if (yaml().isScalar(node)) return node.value === null ? 'an empty value' : JSON.stringify(node.value);
  return 'nothing';
}

export function keyName(ctx: FileContext, key: unknown): string {
  if (yaml().isScalar(key) && typeof key.value === 'string') return key.value;
  throw ctx.error(key as Node, `keys must be plain words, got ${describe(key)}`);
}

export function validateScalar(type: Field['type'], value: unknown): { ok: true; value: Scalar } | { ok: false; expected: string } {
  switch (type) {
    case 'boolean':
      return typeof value === 'boolean' ? { ok: true, value } : { ok: false, expected: 'true or false' };
    case 'integer':
      return typeof value === 'number' && Number.isSafeInteger(value) && value >= 1
        ? { ok: true, value: String(value) }
        : { ok: false, expected: 'a whole number of at least 1' };
    case 'duration':
      return typeof value === 'string' && parseDuration(value) !== undefined
        ? { ok: true, value }
        : { ok: false, expected: 'a duration such as 10s, 1m or 500ms' };
    case 'regex':
      if (typeof value !== 'string') return { ok: false, expected: 'a regular expression in quotes' };
      try {
        new RegExp(value);
        return { ok: true, value };
      } catch (error) {
        return { ok: false, expected: `a valid regular expression (${(error as Error).message})` };
      }
    case 'level':
      return typeof value === 'string' && (LOG_LEVELS as readonly string[]).includes(value)
        ? { ok: true, value }
        : { ok: false, expected: `one of ${LOG_LEVELS.join(', ')}` };
    case 'format':
      return typeof value === 'string' && (LOG_FORMATS as readonly string[]).includes(value)
        ? { ok: true, value }
        : { ok: false, expected: `one of ${LOG_FORMATS.join(', ')}` };
    case 'string':
      return typeof value === 'string' && value.length > 0 ? { ok: true, value } : { ok: false, expected: 'a non-empty string' };
    case 'shard':
      return typeof value === 'string' && parseShard(value) !== undefined
        ? { ok: true, value }
        : { ok: false, expected: 'a shard such as 1/2 (this instance\'s number, from 1, then the number of instances)' };
  }
}

export function loadConfigFile(file: string): FileSettings {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new UsageError(`config file ${file}: cannot be read: ${(error as Error).message}`);
  }
  return parseConfigText(text, file);
}

export function parseConfigText(text: string, file: string): FileSettings {
  const { root, ctx } = parseYaml(text, file);
  const settings: FileSettings = { values: new Map(), lines: new Map(), expectations: [], fabricExpectations: [] };
  if (root === null) return settings;
  if (!yaml().isMap(root)) throw ctx.error(root, `expected a mapping of sections (${SECTIONS.join(', ')}), got ${describe(root)}`);

  for (const pair of root.items) {
    const section = keyName(ctx, pair.key);
    if (section === 'expectations') {
      settings.expectations = parseExpectations(ctx, pair.value as Node | null);
      continue;
    }
    const fields = FIELDS[section];
    if (!fields) throw ctx.error(pair.key as Node, `unknown section "${section}", expected one of: ${SECTIONS.join(', ')}`);
    const body = pair.value as Node | null;
    if (!yaml().isMap(body)) throw ctx.error(body ?? (pair.key as Node), `section "${section}" must be a mapping of ${Object.keys(fields).join(', ')}, got ${describe(body)}`);
    for (const item of body.items) {
      const key = keyName(ctx, item.key);
      if (section === 'fabric' && key === 'expectations') {
        settings.fabricExpectations = parseFabricExpectations(ctx, item.value as Node | null);
        continue;
      }
      const field = fields[key];
      if (!field) throw ctx.error(item.key as Node, `unknown key "${section}.${key}", expected one of: ${[...Object.keys(fields), ...(section === 'fabric' ? ['expectations'] : [])].map((k) => `${section}.${k}`).join(', ')}`);
      const valueNode = item.value as Node | null;
      const checked = validateScalar(field.type, yaml().isScalar(valueNode) ? valueNode.value : undefined);
      if (!checked.ok) throw ctx.error(valueNode ?? (item.key as Node), `"${section}.${key}" must be ${checked.expected}, got ${describe(valueNode)}`);
      settings.values.set(field.flag, checked.value);
      const line = ctx.line(valueNode);
      if (line !== undefined) settings.lines.set(field.flag, line);
    }
  }
  return settings;
}

function parseExpectations(ctx: FileContext, node: Node | null): ExpectationRule[] {
  if (node === null || (yaml().isScalar(node) && node.value === null)) return [];
  if (!yaml().isSeq(node)) throw ctx.error(node, `"expectations" must be a list of {device, port, width, speed}, got ${describe(node)}`);
  return node.items.map((item) => {
    const entry = item as Node;
    if (!yaml().isMap(entry)) throw ctx.error(entry, `each expectation must be a mapping with device and width and/or speed, got ${describe(entry)}`);
    const rule: ExpectationRule = { device: '', port: undefined, width: undefined, speed: undefined };
    for (const pair of entry.items) {
      const key = keyName(ctx, pair.key);
      const valueNode = pair.value as Node | null;
      const value = yaml().isScalar(valueNode) ? valueNode.value : undefined;
      switch (key) {
        case 'device':
          if (typeof value !== 'string' || value === '') throw ctx.error(valueNode ?? (pair.key as Node), `"device" must be a glob such as "mlx5_*", got ${describe(valueNode)}`);
          rule.device = value;
          break;
        case 'port':
          if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 255) throw ctx.error(valueNode ?? (pair.key as Node), `"port" must be a port number 1–255, got ${describe(valueNode)}`);
          rule.port = value;
          break;
        case 'width':
          rule.width = expectedWidth(ctx, pair.key as Node, valueNode);
          break;
        case 'speed':
          rule.speed = expectedSpeed(ctx, pair.key as Node, valueNode);
          break;
        default:
          throw ctx.error(pair.key as Node, `unknown key "${key}" in an expectation, expected one of: ${EXPECTATION_KEYS.join(', ')}`);
      }
    }
    if (rule.device === '') throw ctx.error(entry, 'an expectation needs "device" (a glob such as "mlx5_*")');
    if (rule.width === undefined && rule.speed === undefined) throw ctx.error(entry, `the expectation for "${rule.device}" needs "width" and/or "speed"`);
    return rule;
  });
}

function expectedWidth(ctx: FileContext, key: Node, valueNode: Node | null): LinkWidth {
  const value = yaml().isScalar(valueNode) ? valueNode.value : undefined;
  if (!(LINK_WIDTHS as readonly unknown[]).includes(value)) throw ctx.error(valueNode ?? key, `"width" must be a lane count, one of ${LINK_WIDTHS.join(', ')}, got ${describe(valueNode)}`);
  return value as LinkWidth;
}

function expectedSpeed(ctx: FileContext, key: Node, valueNode: Node | null): LinkSpeed {
  const value = yaml().isScalar(valueNode) ? valueNode.value : undefined;
  const speed = typeof value === 'string' ? value.toUpperCase() : undefined;
  if (!speed || !(LINK_SPEEDS as readonly string[]).includes(speed)) throw ctx.error(valueNode ?? key, `"speed" must be one of ${LINK_SPEEDS.join(' ')}, got ${describe(valueNode)}`);
  return speed as LinkSpeed;
}

function parseFabricExpectations(ctx: FileContext, node: Node | null): FabricExpectationRule[] {
  if (node === null || (yaml().isScalar(node) && node.value === null)) return [];
  if (!yaml().isSeq(node)) throw ctx.error(node, `"fabric.expectations" must be a list of {node, ports, width, speed}, got ${describe(node)}`);
  return node.items.map((item) => {
    const entry = item as Node;
    if (!yaml().isMap(entry)) throw ctx.error(entry, `each fabric expectation must be a mapping with node and width and/or speed, got ${describe(entry)}`);
    const rule: { -readonly [K in keyof FabricExpectationRule]: FabricExpectationRule[K] } = { node: '', ports: undefined, width: undefined, speed: undefined };
    for (const pair of entry.items) {
      const key = keyName(ctx, pair.key);
      const valueNode = pair.value as Node | null;
      switch (key) {
        case 'node': {
          const value = yaml().isScalar(valueNode) ? valueNode.value : undefined;
          if (typeof value !== 'string' || value === '') throw ctx.error(valueNode ?? (pair.key as Node), `"node" must be a glob on a node name or description such as "leaf-*", got ${describe(valueNode)}`);
          rule.node = value;
          break;
        }
        case 'ports': {
          const list = yaml().isSeq(valueNode) ? valueNode.items.map((port) => (yaml().isScalar(port) ? port.value : undefined)) : undefined;
          if (!list || list.length === 0 || !list.every((port) => typeof port === 'number' && Number.isInteger(port) && port >= 1 && port <= 255)) {
            throw ctx.error(valueNode ?? (pair.key as Node), `"ports" must be a list of port numbers 1–255 such as [1, 2], got ${describe(valueNode)}`);
          }
          rule.ports = list as number[];
          break;
        }
        case 'width':
          rule.width = expectedWidth(ctx, pair.key as Node, valueNode);
          break;
        case 'speed':
          rule.speed = expectedSpeed(ctx, pair.key as Node, valueNode);
          break;
        default:
          throw ctx.error(pair.key as Node, `unknown key "${key}" in a fabric expectation, expected one of: ${FABRIC_EXPECTATION_KEYS.join(', ')}`);
      }
    }
    if (rule.node === '') throw ctx.error(entry, 'a fabric expectation needs "node" (a glob such as "leaf-*")');
    if (rule.width === undefined && rule.speed === undefined) throw ctx.error(entry, `the fabric expectation for "${rule.node}" needs "width" and/or "speed"`);
    return rule;
  });
}
