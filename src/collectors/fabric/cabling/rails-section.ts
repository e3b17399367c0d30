// `fabric.rails` in the config file: the rails of a rail-optimised fabric, for the rail check
// (model/rails.ts). Checked against its JSON Schema like the rest of the file: a mistake is a
// UsageError naming the file, the line and what was expected (exit 2).
//
//   fabric:
//     rails:                        # a list; first match wins for a switch and for an adapter
//       - name: rail0               # optional, the `rail` label of the violations ("rail 1", … by default)
//         leaves: ["rail0-leaf*"]   # globs (or one glob) on a switch's node-name-map name or NodeDescription
//         adapter: mlx5_0           # the host adapter of this rail: a device name, matched against the
//                                   # last word of the adapter's NodeDescription (rdma-ndd's default
//                                   # "<hostname> <device>"), or a glob on the whole NodeDescription
//                                   # when it has a space or a wildcard ("* HCA-1")
//       - name: rail1
//         leaves: ["rail1-leaf*"]
//         adapter: mlx5_1
//
// Without `fabric.rails`, the rails are inferred from the fabric (see model/rails.ts).
import type { JsonSchema, SchemaProblem, Section } from '../../../config/flags.js';
import type { RailRule } from '../../../model/cabling.js';

const RAIL_KEYS = ['name', 'leaves', 'adapter'] as const;
const GLOB: JsonSchema = { type: 'string', minLength: 1 };

const SCHEMA: JsonSchema = {
  type: 'array',
  items: {
    type: 'object',
    additionalProperties: false,
    required: ['leaves', 'adapter'],
    properties: {
      name: { anyOf: [{ type: 'string', minLength: 1 }, { type: 'number' }] },
      leaves: { anyOf: [GLOB, { type: 'array', minItems: 1, items: GLOB }] },
      adapter: { type: 'string', pattern: '\\S' },
    },
  },
};

type Entry = { name?: string | number; leaves: string | string[]; adapter: string };

const nameOf = (entry: Entry, index: number): string => (entry.name === undefined ? `rail ${index + 1}` : String(entry.name));

function explain({ path, keyword, property, value, got }: SchemaProblem): string {
  if (path.length === 0) return `"fabric.rails" must be a list of {name, leaves, adapter}, got ${got([])}`;
  const entry = value as Partial<Entry> | undefined;
  if (path.length === 1) {
    if (keyword === 'type') return `each rail must be a mapping with leaves and adapter, got ${got(path)}`;
    if (keyword === 'additionalProperties') return `unknown key "${property}" in a rail, expected one of: ${RAIL_KEYS.join(', ')}`;
    const name = entry?.name === undefined ? `rail ${Number(path[0]) + 1}` : String(entry.name);
    if (property === 'leaves') return `rail "${name}" needs "leaves" (globs on its switches' names)`;
    return `rail "${name}" needs "adapter" (the device name of its host adapter, such as mlx5_0)`;
  }
  switch (path[1]) {
    case 'name':
      return `"name" must be the rail's name such as rail0, got ${got(path.slice(0, 2))}`;
    case 'leaves':
      return `"leaves" must be a glob or a list of globs on switch names such as ["rail0-leaf*"], got ${got(path.slice(0, 2))}`;
    default:
      return `"adapter" must be a device name such as mlx5_0, or a glob on the adapter's NodeDescription such as "* HCA-1", got ${got(path.slice(0, 2))}`;
  }
}

export const FABRIC_RAILS_SECTION: Section<readonly RailRule[]> = {
  key: 'fabric.rails',
  schema: SCHEMA,
  empty: [],
  validate(value) {
    const seen = new Set<string>();
    for (const [index, entry] of (value as Entry[]).entries()) {
      const name = nameOf(entry, index);
      if (seen.has(name)) return { path: [index], message: `rail "${name}" is named twice: expected one entry per rail` };
      seen.add(name);
    }
    return undefined;
  },
  parse: (value) =>
    (value as Entry[]).map((entry, index) => ({
      name: nameOf(entry, index),
      leaves: typeof entry.leaves === 'string' ? [entry.leaves] : entry.leaves,
      adapter: entry.adapter.trim(),
    })),
  explain,
};
