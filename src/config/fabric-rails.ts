// `fabric.rails` in the config file: the rails of a rail-optimised fabric, for the rail check
// (snapshot/rails.ts). The config loader hands the value of the key to `parseFabricRails`; a
// mistake is a UsageError naming the file, the line and what was expected (exit 2).
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
// Without `fabric.rails`, the rails are inferred from the fabric (see snapshot/rails.ts).
import type { Node } from 'yaml';
import type { RailRule } from '../snapshot/cabling.js';
import { describe, keyName, type FileContext } from './config-file.js';
import { yaml } from './yaml.js';

/** The key under `fabric:`. */
export const FABRIC_RAILS_KEY = 'rails';
const RAIL_KEYS = ['name', 'leaves', 'adapter'] as const;

/** The rails of `fabric.rails`; an empty or absent value is none. */
export function parseFabricRails(ctx: FileContext, node: Node | null): RailRule[] {
  if (node === null || (yaml().isScalar(node) && node.value === null)) return [];
  if (!yaml().isSeq(node)) throw ctx.error(node, `"fabric.rails" must be a list of {name, leaves, adapter}, got ${describe(node)}`);
  const names = new Set<string>();
  return node.items.map((item, index) => {
    const entry = item as Node;
    if (!yaml().isMap(entry)) throw ctx.error(entry, `each rail must be a mapping with leaves and adapter, got ${describe(entry)}`);
    let name: string | undefined;
    let leaves: string[] | undefined;
    let adapter: string | undefined;
    for (const pair of entry.items) {
      const key = keyName(ctx, pair.key);
      const valueNode = pair.value as Node | null;
      const value = yaml().isScalar(valueNode) ? valueNode.value : undefined;
      switch (key) {
        case 'name':
          if (typeof value !== 'string' && typeof value !== 'number') throw ctx.error(valueNode ?? (pair.key as Node), `"name" must be the rail's name such as rail0, got ${describe(valueNode)}`);
          name = String(value);
          if (name === '') throw ctx.error(valueNode, '"name" must not be empty');
          break;
        case 'leaves': {
          const list = yaml().isSeq(valueNode) ? valueNode.items.map((leaf) => (yaml().isScalar(leaf) ? leaf.value : undefined)) : [value];
          if (list.length === 0 || !list.every((leaf): leaf is string => typeof leaf === 'string' && leaf !== '')) {
            throw ctx.error(valueNode ?? (pair.key as Node), `"leaves" must be a glob or a list of globs on switch names such as ["rail0-leaf*"], got ${describe(valueNode)}`);
          }
          leaves = list;
          break;
        }
        case 'adapter':
          if (typeof value !== 'string' || value.trim() === '') throw ctx.error(valueNode ?? (pair.key as Node), `"adapter" must be a device name such as mlx5_0, or a glob on the adapter's NodeDescription such as "* HCA-1", got ${describe(valueNode)}`);
          adapter = value.trim();
          break;
        default:
          throw ctx.error(pair.key as Node, `unknown key "${key}" in a rail, expected one of: ${RAIL_KEYS.join(', ')}`);
      }
    }
    name ??= `rail ${index + 1}`;
    if (leaves === undefined) throw ctx.error(entry, `rail "${name}" needs "leaves" (globs on its switches' names)`);
    if (adapter === undefined) throw ctx.error(entry, `rail "${name}" needs "adapter" (the device name of its host adapter, such as mlx5_0)`);
    if (names.has(name)) throw ctx.error(entry, `rail "${name}" is named twice: expected one entry per rail`);
    names.add(name);
    return { name, leaves, adapter };
  });
}
