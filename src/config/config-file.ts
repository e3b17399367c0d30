// The YAML config file (--config.file): every key optional. Its schema is built from the flags'
// declarations (a flag `diag.timeout` with key `diag.timeout` is the file's `diag: {timeout: …}`)
// and the sections that have no flag (lists of rules); the file is checked against it by ajv, and
// the first problem becomes one UsageError naming the file, the line and what was expected.
import { createRequire } from 'node:module';
import type { Ajv as AjvInstance, ErrorObject, Options as AjvOptions } from 'ajv';
import type { Node } from 'yaml';
import { yaml } from './yaml.js';
import { UsageError } from './errors.js';
import type { Flag, JsonSchema, Section } from './flags.js';
import { describe, parseYaml, type YamlFile } from './yaml-file.js';
import { CONFIG_FILE, readBoundedText } from '../files/bounded-file.js';

export interface ConfigFile {
  values: Map<Flag<unknown>, unknown>;
  sections: Map<Section<unknown>, unknown>;
  /** Where each value was set, as an error found later names it: `config file <file>:<line>: "path.sysfs"`. */
  places: Map<Flag<unknown>, string>;
}

// ajv, loaded only when a config file is read: a host started without one never loads it.
const require = createRequire(import.meta.url);
type AjvConstructor = new (options: AjvOptions) => AjvInstance;
let loadedAjv: AjvConstructor | undefined;
function ajv(): AjvConstructor {
  loadedAjv ??= (require('ajv') as { default: AjvConstructor }).default;
  return loadedAjv;
}

const segments = (key: string): string[] => key.split('.');

/** The top-level sections of the file, each with the keys of its flags (and nested sections). */
function layout(
  flags: readonly Flag<unknown>[],
  sections: readonly Section<unknown>[],
): Map<string, Map<string, Flag<unknown> | Section<unknown>>> {
  const tree = new Map<string, Map<string, Flag<unknown> | Section<unknown>>>();
  const place = (key: string, item: Flag<unknown> | Section<unknown>): void => {
    const [section, field] = segments(key);
    let fields = tree.get(section!);
    if (!fields) tree.set(section!, (fields = new Map()));
    if (field !== undefined) fields.set(field, item);
  };
  for (const flag of flags) if (flag.key !== undefined) place(flag.key, flag);
  for (const section of sections) place(section.key, section);
  return tree;
}

/** The JSON Schema of the whole file. */
export function configSchema(flags: readonly Flag<unknown>[], sections: readonly Section<unknown>[]): JsonSchema {
  const properties: Record<string, JsonSchema> = {};
  for (const [name, fields] of layout(flags, sections)) {
    const root = sections.find((section) => section.key === name);
    if (root) {
      properties[name] = root.schema;
      continue;
    }
    const inner: Record<string, JsonSchema> = {};
    for (const [field, item] of fields) inner[field] = 'kind' in item ? item.kind.schema : item.schema;
    properties[name] = { type: 'object', additionalProperties: false, properties: inner };
  }
  return { type: 'object', additionalProperties: false, properties };
}

/** ajv's formats, from the flags' kinds (a value is in a format when its kind accepts it) and the sections. */
function formats(flags: readonly Flag<unknown>[], sections: readonly Section<unknown>[]): Map<string, (value: string) => boolean> {
  const found = new Map<string, (value: string) => boolean>();
  for (const flag of flags) {
    const format = flag.kind.schema.format;
    if (typeof format === 'string' && !found.has(format)) found.set(format, (value) => flag.kind.check(value).ok);
  }
  for (const section of sections) for (const [name, test] of Object.entries(section.formats ?? {})) found.set(name, test);
  return found;
}

export function loadConfigFile(file: string, flags: readonly Flag<unknown>[], sections: readonly Section<unknown>[]): ConfigFile {
  let text: string;
  try {
    text = readBoundedText(file, CONFIG_FILE);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  return parseConfigText(text, file, flags, sections);
}

export function parseConfigText(
  text: string,
  file: string,
  flags: readonly Flag<unknown>[],
  sections: readonly Section<unknown>[],
): ConfigFile {
  const parsed = parseYaml(text, file);
  const config: ConfigFile = { values: new Map(), sections: new Map(), places: new Map() };
  if (parsed.root === null) return config;
  let data: unknown;
  try {
    data = parsed.document.toJS();
  } catch (error) {
    // An alias to an anchor that does not exist, or an alias bomb: the document has no value.
    throw new UsageError(`config file ${file}: not valid YAML: ${(error as Error).message.split('\n')[0]}`);
  }

  // A list left empty (`fabric.rails:` with nothing under it) is no list: as if the key were absent.
  for (const section of sections) {
    const path = segments(section.key);
    const parent = path
      .slice(0, -1)
      .reduce<unknown>(
        (value, part) => (value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[part] : undefined),
        data,
      );
    if (parent !== null && typeof parent === 'object' && (parent as Record<string, unknown>)[path.at(-1)!] === null)
      delete (parent as Record<string, unknown>)[path.at(-1)!];
  }

  const checker = new (ajv())({
    allErrors: true,
    strict: true,
    strictRequired: false,
    formats: Object.fromEntries(formats(flags, sections)),
  });
  const validate = checker.compile(configSchema(flags, sections));
  if (!validate(data)) throw explain(mostTelling(validate.errors!), parsed, data, flags, sections);

  const at = (key: string): unknown =>
    segments(key).reduce<unknown>(
      (value, part) => (value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[part] : undefined),
      data,
    );
  for (const flag of flags) {
    if (flag.key === undefined) continue;
    const value = at(flag.key);
    if (value === undefined) continue;
    const checked = flag.kind.check(value);
    // The schema accepted it, so the kind does too; a kind stricter than its schema says so here.
    if (!checked.ok)
      throw problemAt(
        parsed,
        segments(flag.key),
        `"${flag.key}" must be ${checked.expected}, got ${describe(nodeAt(parsed, segments(flag.key)))}`,
      );
    config.values.set(flag, checked.value);
    config.places.set(flag, `${parsed.ctx.where(nodeAt(parsed, segments(flag.key)))}: "${flag.key}"`);
  }
  for (const section of sections) {
    const value = at(section.key);
    if (value === undefined || value === null) continue;
    const problem = section.validate?.(value);
    if (problem) throw problemAt(parsed, [...segments(section.key), ...problem.path], problem.message);
    config.sections.set(section, section.parse(value));
  }
  return config;
}

/** How telling each kind of problem is, when one value has several: an unknown key says most. */
const TELLING = [
  'additionalProperties',
  'type',
  'enum',
  'format',
  'minimum',
  'maximum',
  'minItems',
  'minLength',
  'pattern',
  'required',
  'anyOf',
];

/** The one problem to tell a person: the deepest in the file, and of those the most telling. */
function mostTelling(errors: readonly ErrorObject[]): ErrorObject {
  const rank = (error: ErrorObject): number => (TELLING.includes(error.keyword) ? TELLING.indexOf(error.keyword) : TELLING.length);
  const depth = (error: ErrorObject): number => pointer(error.instancePath).length;
  return [...errors].sort((a, b) => depth(b) - depth(a) || rank(a) - rank(b))[0]!;
}

/** JSON pointer → path segments (`/diag/timeout` → ['diag', 'timeout']; list indexes as numbers). */
function pointer(path: string): (string | number)[] {
  if (path === '') return [];
  return path
    .slice(1)
    .split('/')
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((part) => (/^\d+$/.test(part) ? Number(part) : part));
}

function nodeAt(file: YamlFile, path: readonly (string | number)[]): Node | null {
  return (path.length === 0 ? file.root : (file.document.getIn(path, true) as Node | undefined)) ?? null;
}

/** The node of a key within the mapping at `path` (for "unknown key"). */
function keyNode(file: YamlFile, path: readonly (string | number)[], key: string): Node | null {
  const map = nodeAt(file, path);
  if (!yaml().isMap(map)) return map;
  return (map.items.find((pair) => yaml().isScalar(pair.key) && String(pair.key.value) === key)?.key as Node | undefined) ?? map;
}

function problemAt(file: YamlFile, path: readonly (string | number)[], message: string, node = nodeAt(file, path)): UsageError {
  return file.ctx.error(node ?? nodeAt(file, path.slice(0, -1)), message);
}

function explain(
  error: ErrorObject,
  file: YamlFile,
  data: unknown,
  flags: readonly Flag<unknown>[],
  sections: readonly Section<unknown>[],
): UsageError {
  const path = pointer(error.instancePath);
  const property =
    (error.params as { additionalProperty?: string; missingProperty?: string }).additionalProperty ??
    (error.params as { missingProperty?: string }).missingProperty;
  const tree = layout(flags, sections);

  const section = sections.find((candidate) => {
    const key = segments(candidate.key);
    return key.every((part, i) => path[i] === part);
  });
  if (section) {
    const base = segments(section.key);
    const below = path.slice(base.length);
    const value = path.reduce<unknown>((inner, part) => (inner as Record<string | number, unknown>)?.[part], data);
    const node = error.keyword === 'additionalProperties' ? keyNode(file, path, property!) : nodeAt(file, path);
    const got = (at: readonly (string | number)[]): string => describe(nodeAt(file, [...base, ...at]));
    return problemAt(file, path, section.explain({ keyword: error.keyword, path: below, property, value, got }), node);
  }

  const names = [...tree.keys()];
  if (path.length === 0) {
    if (error.keyword === 'additionalProperties')
      return problemAt(file, [], `unknown section "${property}", expected one of: ${names.join(', ')}`, keyNode(file, [], property!));
    return problemAt(file, [], `expected a mapping of sections (${names.join(', ')}), got ${describe(file.root)}`);
  }
  const name = String(path[0]);
  const fields = [...(tree.get(name)?.keys() ?? [])];
  if (path.length === 1) {
    if (error.keyword === 'additionalProperties') {
      return problemAt(
        file,
        path,
        `unknown key "${name}.${property}", expected one of: ${fields.map((field) => `${name}.${field}`).join(', ')}`,
        keyNode(file, path, property!),
      );
    }
    return problemAt(file, path, `section "${name}" must be a mapping of ${fields.join(', ')}, got ${describe(nodeAt(file, path))}`);
  }
  const key = `${name}.${String(path[1])}`;
  const flag = flags.find((candidate) => candidate.key === key);
  const node = nodeAt(file, path);
  const value = yaml().isScalar(node) ? node.value : undefined;
  const checked = flag?.kind.check(value);
  const expected = checked && !checked.ok ? checked.expected : (error.message ?? 'something else');
  return problemAt(file, path, `"${key}" must be ${expected}, got ${describe(node)}`);
}
