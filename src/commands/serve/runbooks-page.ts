// GET /runbooks: docs/runbooks.md as one HTML page, carried in the bundle (runbooks-markdown.ts,
// generated), so that the pages' and the findings' runbook links work on a host without internet.
// Rendered with marked; raw HTML in the Markdown is shown as text, not passed through. Each
// heading gets the anchor GitHub gives it: the alerts' runbook_url (`#infinibandportlinkdown`)
// and the findings' runbook fields point at the same sections here and on GitHub.
import { Marked, type Tokens } from 'marked';
import { escapeHtml } from './landing-page.js';
import { RUNBOOKS_MARKDOWN } from './runbooks-markdown.js';

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to dashes; repeats numbered. */
export function headingAnchor(text: string, seen: Map<string, number>): string {
  const base = text
    .trim()
    .toLowerCase()
    .replace(/<[^>]*>/g, '')
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
  const count = seen.get(base) ?? 0;
  seen.set(base, count + 1);
  return count === 0 ? base : `${base}-${count}`;
}

const STYLE = `
body{font-family:system-ui,sans-serif;max-width:60em;margin:2em auto;padding:0 1em;line-height:1.5;color:#1b1b1b}
pre{background:#f4f4f4;padding:.6em;overflow-x:auto}
code{background:#eee;padding:0 .2em}
h2{margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse}
th,td{border:1px solid #ddd;padding:.25em .5em;text-align:left}
`;

export function renderRunbooks(markdown: string = RUNBOOKS_MARKDOWN): string {
  const seen = new Map<string, number>();
  const marked = new Marked({
    gfm: true,
    renderer: {
      heading(
        this: { parser: { parseInline(tokens: Tokens.Heading['tokens']): string } },
        { tokens, depth, text }: Tokens.Heading,
      ): string {
        const id = headingAnchor(text, seen);
        return `<h${depth} id="${escapeHtml(id)}">${this.parser.parseInline(tokens)}</h${depth}>\n`;
      },
      // Raw HTML is shown as written, never interpreted.
      html({ text }: Tokens.HTML | Tokens.Tag): string {
        return escapeHtml(text);
      },
    },
  });
  const body = marked.parse(markdown, { async: false });
  return `<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Runbooks — InfiniBand Exporter</title>
<style>${STYLE}</style></head>
<body>
<p><a href="/">← the exporter</a></p>
${body}
</body>
</html>
`;
}
