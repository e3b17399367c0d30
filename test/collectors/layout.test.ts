// The layout of the collectors (docs/architecture.md): the engine (src/collection/) knows no
// collector, no collector imports another (a part another reads is declared in parts.ts, what two
// share lives in the model or in a shared module that is not a collector), and nothing under src/
// reads a file under test/. Imports are read as text, type-only ones included.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { COLLECTORS } from '../../src/collectors/registry.js';
import { PROJECT_ROOT } from '../support/trees.js';

const SRC = path.join(PROJECT_ROOT, 'src');

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const file = path.join(dir, name);
    return statSync(file).isDirectory() ? files(file) : file.endsWith('.ts') ? [file] : [];
  });
}

/** The files `file` names in a relative import, `import()` or `new URL()`, resolved to their .ts source where there is one. */
function referenced(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/(?:from\s+|import\(\s*|new URL\(\s*)'(\.{1,2}\/[^']+)'/g)].map((match) =>
    path.resolve(path.dirname(file), match[1]!.replace(/\.js$/, '.ts')),
  );
}

const SOURCES = files(SRC);
const relative = (file: string): string => path.relative(SRC, file).split(path.sep).join('/');

/** Each collector's module: the file that defines it, or its folder when that file is index.ts. */
const COLLECTOR_MODULES = SOURCES.filter(
  (file) => relative(file).startsWith('collectors/') && readFileSync(file, 'utf8').includes('defineCollector('),
).map((file) => (path.basename(file) === 'index.ts' ? `${relative(path.dirname(file))}/` : relative(file)));
const collectorOf = (file: string): string | undefined =>
  COLLECTOR_MODULES.find((module) => (module.endsWith('/') ? relative(file).startsWith(module) : relative(file) === module));

describe('the layout', () => {
  it('finds every collector of the registry in a module of its own', () => {
    expect(COLLECTOR_MODULES).toHaveLength(COLLECTORS.length);
    for (const module of COLLECTOR_MODULES) expect(module).toMatch(/^collectors\/(host|diag|fabric)\//);
  });

  it('no collector imports another', () => {
    const arrows = SOURCES.flatMap((file) => {
      const own = collectorOf(file);
      return own === undefined
        ? []
        : referenced(file)
            .filter((target) => collectorOf(target) !== undefined && collectorOf(target) !== own)
            .map((target) => `${relative(file)} → ${relative(target)}`);
    });
    expect(arrows).toEqual([]);
  });

  it('the engine imports no collector', () => {
    const arrows = SOURCES.filter((file) => relative(file).startsWith('collection/')).flatMap((file) =>
      referenced(file)
        .filter((target) => relative(target).startsWith('collectors/'))
        .map((target) => `${relative(file)} → ${relative(target)}`),
    );
    expect(arrows).toEqual([]);
  });

  it('no file under src/ reads a path under test/', () => {
    const test = path.join(PROJECT_ROOT, 'test') + path.sep;
    expect(
      SOURCES.flatMap((file) =>
        referenced(file)
          .filter((target) => target.startsWith(test))
          .map((target) => `${relative(file)} → ${target}`),
      ),
    ).toEqual([]);
  });
});
