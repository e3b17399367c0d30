// Without --collector.fabric nothing of fabric mode is even loaded: no module of it is reachable
// from the process entry through static imports (the exporter loads it with import() when the
// flag is on).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../support/trees.js';

const SRC = path.join(PROJECT_ROOT, 'src');
const FABRIC_MODULES = ['collection/fabric.ts', 'metrics/fabric.ts', 'sources/fabric/'];

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
  it.each(['cli.ts', 'commands/serve/exporter.ts', 'commands/check/command.ts'])('no fabric module is statically reachable from src/%s', (entry) => {
    const reachable = [...staticClosure(path.join(SRC, entry))].map((file) => path.relative(SRC, file));
    expect(reachable.length).toBeGreaterThan(3);
    expect(reachable.filter((file) => FABRIC_MODULES.some((module) => file.startsWith(module)))).toEqual([]);
  });

  it('the server reaches the collection loop statically (the closure is not vacuous)', () => {
    expect([...staticClosure(path.join(SRC, 'commands/serve/exporter.ts'))].map((file) => path.relative(SRC, file))).toContain('collection/collection.ts');
  });

  it('the exporter imports them dynamically', () => {
    const exporter = readFileSync(path.join(SRC, 'commands/serve/exporter.ts'), 'utf8');
    expect(exporter).toContain("import('../../collection/fabric.js')");
    expect(exporter).toContain("import('../../metrics/fabric.js')");
  });

  it('check imports the fabric loops dynamically, only with --collector.fabric', () => {
    const cycle = readFileSync(path.join(SRC, 'commands/check/one-cycle.ts'), 'utf8');
    expect(cycle).toContain("await import('../../collection/fabric.js')");
    expect(cycle).toMatch(/settings\.fabric\.enabled \? collectFabricOnce\(/);
  });
});
