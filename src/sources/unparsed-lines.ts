// The lines of a tool's output that a parser did not understand: counted, and the first few kept
// (shortened) for the log line that says what broke. A tool printing junk (`yes garbage` in a
// tool's place, another version's format) must not have every line of it held in memory.
export const UNPARSED_EXAMPLES = 5;
export const UNPARSED_EXAMPLE_CHARS = 200;

/** A line as UnparsedLines keeps it: its first UNPARSED_EXAMPLE_CHARS characters. */
export function unparsedExample(line: string): string {
  return line.length > UNPARSED_EXAMPLE_CHARS ? line.slice(0, UNPARSED_EXAMPLE_CHARS) : line;
}

export class UnparsedLines {
  /** How many lines were not understood. */
  count = 0;
  /** The first UNPARSED_EXAMPLES lines not understood, each cut to UNPARSED_EXAMPLE_CHARS. */
  readonly examples: string[] = [];

  /** With `lines`: those lines, as a parser would have added them one by one. */
  constructor(lines: Iterable<string> = []) {
    for (const line of lines) this.add(line);
  }

  add(line: string): void {
    this.count += 1;
    if (this.examples.length < UNPARSED_EXAMPLES) this.examples.push(unparsedExample(line));
  }
}
