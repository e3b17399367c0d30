// YAML files a person writes (--config.file, --web.config.file): parsed with line numbers, so
// that every error names the file, the line and what was expected.
import type { Document, LineCounter, Node } from 'yaml';
import { atOnce, pacer, type Work } from '../event-loop/time-slices.js';
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
  return atOnce(yamlSteps(text, file, kind));
}

/**
 * parseYaml as work in steps (event-loop/time-slices.ts): a file read again while the server runs
 * (the web config) is lexed and parsed a slice at a time; only composing the document's nodes from
 * the parsed tokens is one step (about a quarter of the time).
 */
export function* yamlSteps(text: string, file: string, kind = 'config file'): Work<YamlFile> {
  const Y = yaml();
  const lines = new Y.LineCounter();
  // What parseDocument does, a lexical token at a time.
  const parser = new Y.Parser(lines.addNewLine);
  const composer = new Y.Composer({ uniqueKeys: false });
  const documents: Document.Parsed[] = [];
  const pace = pacer();
  lines.addNewLine(0);
  for (const lexeme of new Y.Lexer().lex(text, false)) {
    for (const token of parser.next(lexeme)) documents.push(...composer.next(token));
    if (pace()) yield;
  }
  for (const token of parser.end()) documents.push(...composer.next(token));
  documents.push(...composer.end(true, text.length));
  const document = documents[0]!;
  const syntaxError = (offset: number | undefined, message: string): UsageError => {
    const where = offset === undefined ? file : `${file}:${lines.linePos(offset).line}`;
    return new UsageError(`${kind} ${where}: not valid YAML: ${message.split('\n')[0] ?? message}`);
  };
  const firstError = document.errors[0];
  if (firstError) throw syntaxError(firstError.pos[0], firstError.message);
  if (documents.length > 1)
    throw syntaxError(documents[1]!.range[0], 'Source contains multiple documents; please use YAML.parseAllDocuments()');
  yield;
  const duplicate = firstDuplicateKey(document);
  if (duplicate) throw new FileContext(file, lines, kind).error(duplicate, 'not valid YAML: Map keys must be unique');
  const root = document.contents;
  return {
    root: root === null || (Y.isScalar(root) && root.value === null) ? null : root,
    document,
    ctx: new FileContext(file, lines, kind),
  };
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
