// Flags, declared once each where they are used (a collector, a command): the command-line name,
// the config file key, the kind of value, the default and the help. The command line, --help, the
// config file's schema and the Settings a program reads are all derived from these declarations.
import { parseDuration } from './duration.js';
import { parseListenAddress, type ListenAddress } from './listen-address.js';
import { UsageError } from './errors.js';

/** A JSON Schema fragment (the config file is checked against one built from every flag). */
export type JsonSchema = Readonly<Record<string, unknown>>;

export type Checked<T> = { ok: true; value: T } | { ok: false; expected: string };

/** What a flag's value is: how it is checked, and how it reads in --help and in errors. */
export interface FlagKind<T> {
  /** `<duration>` in --help; undefined for a boolean (a switch). */
  placeholder: string | undefined;
  /** The value's JSON Schema in the config file. */
  schema: JsonSchema;
  /** A command-line text or a config file value (a YAML scalar) → the value, or what was expected. */
  check(value: unknown): Checked<T>;
}

function kind<T>(
  placeholder: string | undefined,
  schema: JsonSchema,
  expected: string,
  parse: (value: unknown) => T | undefined,
): FlagKind<T> {
  return {
    placeholder,
    schema,
    check: (value) => {
      const parsed = parse(value);
      return parsed === undefined ? { ok: false, expected } : { ok: true, value: parsed };
    },
  };
}

const text = (value: unknown): string | undefined => (typeof value === 'string' && value.length > 0 ? value : undefined);

export const BOOLEAN = kind<boolean>(undefined, { type: 'boolean' }, 'true or false', (value) =>
  typeof value === 'boolean' ? value : undefined,
);
export const STRING = kind<string>('string', { type: 'string', minLength: 1 }, 'a non-empty string', text);
export const DURATION = kind<number>('duration', { type: 'string', format: 'duration' }, 'a duration such as 10s, 1m or 500ms', (value) =>
  typeof value === 'string' ? parseDuration(value) : undefined,
);
/** A whole number of at least 1 (a number in the config file, digits on the command line). */
export const COUNT = kind<number>('n', { type: 'integer', minimum: 1 }, 'a whole number of at least 1', (value) => {
  const number = typeof value === 'string' && /^\s*\d+\s*$/.test(value) ? Number(value) : value;
  return typeof number === 'number' && Number.isSafeInteger(number) && number >= 1 ? number : undefined;
});
export const ADDRESS = kind<ListenAddress>(
  'address',
  { type: 'string', format: 'listen-address' },
  'a listen address: host:port, :port or [ipv6]:port, e.g. ":10460"',
  (value) => {
    try {
      return typeof value === 'string' ? parseListenAddress(value, '') : undefined;
    } catch {
      return undefined;
    }
  },
);
export const HTTP_PATH = kind<string>(
  'path',
  { type: 'string', pattern: '^/' },
  'a path: it must start with "/" and must not be /healthz or /ready',
  (value) => (typeof value === 'string' && value.startsWith('/') && value !== '/healthz' && value !== '/ready' ? value : undefined),
);

export const REGEX: FlagKind<RegExp> = {
  placeholder: 'regex',
  schema: { type: 'string', format: 'regex' },
  check(value) {
    if (typeof value !== 'string') return { ok: false, expected: 'a regular expression in quotes' };
    try {
      return { ok: true, value: new RegExp(value) };
    } catch (error) {
      return { ok: false, expected: `a valid regular expression (${(error as Error).message})` };
    }
  },
};

/** One of a fixed list of words. */
export function choice<const T extends string>(values: readonly T[]): FlagKind<T> {
  const expected = values.length === 2 ? `${values[0]} or ${values[1]}` : `one of ${values.join(', ')}`;
  return kind<T>(values.join('|'), { type: 'string', enum: values }, expected, (value) =>
    (values as readonly unknown[]).includes(value) ? (value as T) : undefined,
  );
}

/** A value written `i/n`, e.g. `--fabric.shard`. */
export function formatted<T>(placeholder: string, format: string, expected: string, parse: (text: string) => T | undefined): FlagKind<T> {
  return kind<T>(placeholder, { type: 'string', format }, expected, (value) => (typeof value === 'string' ? parse(value) : undefined));
}

export interface Flag<T> {
  /** `--<name>`, node_exporter style: `diag.timeout`, `collector.fabric`. */
  readonly name: string;
  /** Its key in the config file, `section.key`; undefined: command line only. */
  readonly key: string | undefined;
  readonly kind: FlagKind<T>;
  /** As it would be written on the command line; undefined: not set unless given. */
  readonly default: string | boolean | undefined;
  readonly help: string;
  /** `infiniband-exporter check` honours it (it accepts every flag, so one ARGS line serves both). */
  readonly check: boolean;
}

interface FlagSpec {
  name: string;
  key?: string;
  help: string;
  check?: boolean;
}

/** A flag with a default: it always has a value. */
export function flag<T>(kind: FlagKind<T>, spec: FlagSpec & { default: string | boolean }): Flag<T> {
  return { key: undefined, check: false, ...spec, kind };
}

/** A flag without a default: undefined unless given. */
export function optionalFlag<T>(kind: FlagKind<T>, spec: FlagSpec): Flag<T | undefined> {
  return { key: undefined, check: false, ...spec, kind: kind as FlagKind<T | undefined>, default: undefined };
}

/** A `--collector.<x>` switch (and its `--no-` form), `<section>.enabled` in the config file. */
export function collectorSwitch(name: string, section: string, on: boolean, help: string): Flag<boolean> {
  return flag(BOOLEAN, { name: `collector.${name}`, key: `${section}.enabled`, default: on, help, check: true });
}

/**
 * A structured part of the config file that has no flag (lists of rules): its JSON Schema, how a
 * valid value becomes settings, and the words for each way it can be wrong.
 */
export interface Section<T> {
  /** `expectations`, `fabric.expectations`. */
  readonly key: string;
  readonly schema: JsonSchema;
  /** The string formats its schema names (`format: "link-speed"`): whether a value is in each. */
  readonly formats?: Readonly<Record<string, (value: string) => boolean>>;
  readonly empty: T;
  /** The value, already valid against `schema`. */
  parse(value: unknown): T;
  /**
   * What the schema cannot say (two entries with one name): the first problem of a value valid
   * against `schema`, at a path below the section, in words; undefined when there is none.
   */
  validate?(value: unknown): { path: readonly (string | number)[]; message: string } | undefined;
  /** What to say about a value that is not valid here (see config-file.ts). */
  explain(problem: SchemaProblem): string;
}

/** One reason a config file value is not valid, as a section explains it. */
export interface SchemaProblem {
  /** JSON Schema keyword that failed: `type`, `required`, `additionalProperties`, `enum`, `anyOf`, … */
  keyword: string;
  /** Path below the section: `[]` the section itself, `[0, 'width']` the width of its first rule. */
  path: readonly (string | number)[];
  /** The missing or unknown property (`required`, `additionalProperties`). */
  property: string | undefined;
  /** The value at that path (for `required`/`additionalProperties`: the object holding it). */
  value: unknown;
  /** How the value at a path below the section reads in an error (`got …`): "a list", "3", "\"QDR2\"". */
  got(path: readonly (string | number)[]): string;
}

export type FlagValue = string | boolean;

/** Every flag's value: the command line's, else the config file's, else the default. */
export class Settings {
  constructor(
    private readonly values: ReadonlyMap<Flag<unknown>, unknown>,
    private readonly sections: ReadonlyMap<Section<unknown>, unknown>,
    private readonly given: ReadonlySet<Flag<unknown>> = new Set(),
    private readonly places: ReadonlyMap<Flag<unknown>, string> = new Map(),
  ) {}

  get<T>(flag: Flag<T>): T {
    if (this.values.has(flag)) return this.values.get(flag) as T;
    if (flag.default === undefined) return undefined as T;
    const checked = flag.kind.check(flag.default);
    if (!checked.ok) throw new Error(`the default of --${flag.name} is not ${checked.expected}`);
    return checked.value;
  }

  /** Whether the command line or the config file set it. */
  isSet(flag: Flag<unknown>): boolean {
    return this.values.has(flag);
  }

  /** Whether the command line set it. */
  isGiven(flag: Flag<unknown>): boolean {
    return this.given.has(flag);
  }

  /**
   * Where a flag's value comes from, as an error about it found after parsing names it: `--path.sysfs`
   * (the command line, or the default), or `config file <file>:<line>: "path.sysfs"`.
   */
  placeOf(flag: Flag<unknown>): string {
    return (!this.given.has(flag) && this.places.get(flag)) || `--${flag.name}`;
  }

  section<T>(section: Section<T>): T {
    return this.sections.has(section) ? (this.sections.get(section) as T) : section.empty;
  }

  /** The same settings with some flags set otherwise (demo mode, a check without user-MAD access). */
  with(changes: readonly (readonly [Flag<unknown>, unknown])[]): Settings {
    const values = new Map(this.values);
    for (const [flag, value] of changes) values.set(flag, value);
    return new Settings(values, this.sections, this.given, this.places);
  }
}

/** Check the command line's value of a flag: the value, or a UsageError naming the flag. */
export function checkFlag<T>(flag: Flag<T>, given: FlagValue): T {
  const checked = flag.kind.check(given);
  if (!checked.ok) throw new UsageError(`--${flag.name}: ${JSON.stringify(given)} is not ${checked.expected}`);
  return checked.value;
}
