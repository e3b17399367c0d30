// Tool output damaged the ways a pipe, a wrapper or a terminal damages it, for the tests of
// partial output: cut short at a line or in the middle of one, or garbled line by line.

/** The text up to (not including) line `n`, as a tool whose output was cut short there prints it. */
export function firstLines(text: string, n: number): string {
  return text.split('\n').slice(0, n).join('\n') + '\n';
}

/** Every cut of `text` at a line boundary that leaves out something other than blank lines. */
export function lineCuts(text: string): number[] {
  const lines = text.split('\n');
  let last = lines.length;
  while (last > 0 && lines[last - 1]!.trim() === '') last -= 1;
  return Array.from({ length: last - 1 }, (_, i) => i + 1);
}

/** `text` cut in the middle of its line `n` (from 0). */
export function midLine(text: string, n: number): string {
  const lines = text.split('\n');
  const line = lines[n]!;
  return [...lines.slice(0, n), line.slice(0, Math.floor(line.length / 2))].join('\n');
}

/** Every third line replaced by noise. */
export function garbled(text: string): string {
  return text
    .split('\n')
    .map((line, i) => (i % 3 === 2 && line !== '' ? `\u0001${line.slice(3, 20)}\u0002` : line))
    .join('\n');
}

/** The indexes of the lines that are not blank. */
export function nonBlankLines(text: string): number[] {
  return text.split('\n').flatMap((line, i) => (line.trim() === '' ? [] : [i]));
}
