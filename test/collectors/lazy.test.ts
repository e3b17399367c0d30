// Without --collector.fabric fabric mode's sources (its parsers and command bookkeeping, most of
// its code) are not even loaded: no module of them is reachable from the process entry through
// static imports. The fabric collectors, which declare flags, metrics and findings, are in the
// registry like every collector; they load their sources with import() when they first read.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../support/trees.js';

const SRC = path.join(PROJECT_ROOT, 'src');
const FABRIC_MODULES = ['sources/fabric/'];

/** Every source file reachable from `entry` through static `import … from` / `export … from` (type-only imports excluded). */
function staticClosure(entry: string): Set<string> {
  const seen = new Set<string>();
  const pending = [entry];
  while (pending.length > 0) {
    const file = pending.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    const text = readFileSync(file, 'utf8');
    for (const match of text.matchAll(/^(?:import|export)\s+(?!type\b)[^;]*?from\s+'(\.[^']+)'/gms)) {
      pending.push(path.resolve(path.dirname(file), match[1]!.replace(/\.js$/, '.ts')));
    }
  }
  return seen;
}

describe('fabric mode is loaded lazily', () => {
  // cli.ts (the program that main.ts runs) loads the server (exporter.ts) or the check command on
  // demand: each is a start of its own. In the build's bundle the same import() calls become
  // modules evaluated when first called.
  it.each(['cli.ts', 'commands/serve/exporter.ts', 'commands/check/command.ts'])(
    'no fabric module is statically reachable from src/%s',
    (entry) => {
      const reachable = [...staticClosure(path.join(SRC, entry))].map((file) => path.relative(SRC, file));
      expect(reachable.length).toBeGreaterThan(3);
      expect(reachable.filter((file) => FABRIC_MODULES.some((module) => file.startsWith(module)))).toEqual([]);
    },
  );

  it('the server reaches the fabric collectors statically (the closure is not vacuous)', () => {
    const reachable = [...staticClosure(path.join(SRC, 'commands/serve/exporter.ts'))].map((file) => path.relative(SRC, file));
    expect(reachable).toEqual(
      expect.arrayContaining([
        'collection/scheduler.ts',
        'collectors/fabric/discovery.ts',
        'collectors/fabric/ports/index.ts',
        'collectors/fabric/sa.ts',
      ]),
    );
  });

  it.each([
    ['fabric/discovery.ts', ['commands', 'discovery']],
    ['fabric/ports/reader.ts', ['commands', 'ports']],
    ['fabric/sa.ts', ['commands', 'sa-records']],
    ['fabric/cabling/index.ts', ['cabling-plan', 'cabling-plan-resolution']],
  ])('collectors/%s imports its sources dynamically, when it first reads', (file, sources) => {
    const module = path.join(SRC, 'collectors', file);
    const text = readFileSync(module, 'utf8');
    const fabricSources = path.relative(path.dirname(module), path.join(SRC, 'sources/fabric'));
    for (const source of sources) expect(text).toContain(`import('${fabricSources}/${source}.js')`);
  });
});
