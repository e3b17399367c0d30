// src/commands/serve/runbooks-markdown.ts: docs/runbooks.md as a string the exporter serves at
// /runbooks, so that the bundle and the single binary carry it without a file beside them.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { REPOSITORY, type GeneratedFile } from './generated-file.js';

export const RUNBOOKS_MODULE = 'src/commands/serve/runbooks-markdown.ts';

export function runbooksFiles(): GeneratedFile[] {
  const markdown = readFileSync(path.join(REPOSITORY, 'docs/runbooks.md'), 'utf8');
  return [
    {
      path: RUNBOOKS_MODULE,
      content: `// Generated from docs/runbooks.md by \`npm run generate\` (scripts/generate/runbooks.ts): do not edit.
export const RUNBOOKS_MARKDOWN = ${JSON.stringify(markdown)};
`,
    },
  ];
}
