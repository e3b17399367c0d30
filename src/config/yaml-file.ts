// YAML files a person writes (--config.file, --web.config.file): parsed with line numbers, so
// that every error names the file, the line and what was expected.
import type { Document, LineCounter, Node } from 'yaml';
import { yaml } from './yaml.js';
import { UsageError } from './errors.js';

/** Errors that name the file (and the line of a node) with the kind of file in front. */
export class FileContext {
  constructor(
    readonly file: string,
    private readonly lines: LineCounter,
    private readonly kind = 'config file',
  ) {}

  error(node: Node | null | undefined, message: string): UsageError {
    return new UsageError(`${this.where(node)}: ${message}`);
  }

  /** `config file <file>:<line>` of a node, as an error names it (without the line when unknown). */
  where(node: Node | null | undefined): string {
    const offset = node?.range?.[0];
    return `${this.kind} ${offset === undefined ? this.file : `${this.file}:${this.lines.linePos(offset).line}`}`;
  }
}

export interface YamlFile {
  /** The document's top node; null for an empty document (or one holding only comments). */
  root: Node | null;
  document: Document.Parsed;
  ctx: FileContext;
}

/**
 * The first key of a mapping that repeats an earlier key of the same mapping (scalar keys, compared
 * by value as the yaml package's `uniqueKeys` does). Its own check compares each key with every
 * earlier one: 20 000 users in a web config took 28 s; a set per mapping takes milliseconds.
 */
function firstDuplicateKey(document: Document.Parsed): Node | undefined {
  let duplicate: Node | undefined;
  yaml().visit(document, {
    Map(_key, map) {
      const seen = new Set<unknown>();
      for (const { key } of map.items) {
        if (!yaml().isScalar(key)) continue;
        if (seen.has(key.value)) {
          duplicate = key;
          return yaml().visit.BREAK;
        }
        seen.add(key.value);
      }
      return undefined;
    },
  });
  return duplicate;
}

/** Parse YAML text; a syntax error becomes a UsageError naming the file and line. */
export function parseYaml(text: string, file: string, kind = 'config file'): YamlFile {
  const lines = new (yaml().LineCounter)();
  const document = yaml().parseDocument(text, { lineCounter: lines, uniqueKeys: false, prettyErrors: true });
  const firstError = document.errors[0];
  if (firstError) {
    const line = firstError.linePos?.[0]?.line;
    const message = (firstError.message.split('\n')[0] ?? firstError.message).replace(/ at line \d+, column \d+:$/, '');
    throw new UsageError(`${kind} ${line === undefined ? file : `${file}:${line}`}: not valid YAML: ${message}`);
  }
  const duplicate = firstDuplicateKey(document);
  if (duplicate) throw new FileContext(file, lines, kind).error(duplicate, 'not valid YAML: Map keys must be unique');
  const root = document.contents;
  return { root: root === null || (yaml().isScalar(root) && root.value === null) ? null : root, document, ctx: new FileContext(file, lines, kind) };
}

/** How a node reads in an error message: `got …`. */
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
