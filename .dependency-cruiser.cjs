// The layout's rules (docs/architecture.md), checked by `npm run lint` inside `npm test`.
// Rooms are listed lowest first; a room may import only rooms of a lower rank, so a room added
// between two others is one line here.
const { readdirSync, readFileSync } = require('node:fs');
const path = require('node:path');

const RANKS = [
  ['event-loop', 'files'],
  ['model', 'exposition', 'startup'],
  ['config', 'log'],
  ['sources'],
  ['collection'],
  ['collectors'],
  ['metrics', 'findings'],
  ['commands'],
  ['cli.ts'],
  ['main.ts'],
];

const room = (name) => (name.endsWith('.ts') ? `^src/${name.replace('.', '\\.')}$` : `^src/${name}/`);
const anyOf = (names) => names.map(room).join('|');

const layerRules = RANKS.flatMap((names, rank) => {
  const notLower = RANKS.slice(rank).flat();
  if (notLower.length === 1) return []; // the top room: nothing is above it
  return names.map((name) => ({
    name: `layers:${name}`,
    comment: `${name} may import only rooms below it (${RANKS.slice(0, rank).flat().join(', ') || 'none'}): docs/architecture.md`,
    severity: 'error',
    from: { path: room(name) },
    to: { path: anyOf(notLower.filter((other) => other !== name)) },
  }));
});

// A collector module is a file that defines a collector, or the folder named for the collector
// that holds its definition (src/collectors/fabric/ports/ for fabric_ports). Found by reading the
// files, so the rule follows the collectors wherever they move under src/collectors/.
function collectorModules(directory = 'src/collectors') {
  const defining = readdirSync(directory, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => path.posix.join(entry.parentPath.split(path.sep).join('/'), entry.name))
    .flatMap((file) => {
      const name = /=\s*defineCollector\s*(?:<[^>]*>)?\(\{\s*name:\s*'(\w+)'/.exec(readFileSync(file, 'utf8'))?.[1];
      return name ? [{ file, name }] : [];
    });
  return defining.map(({ file, name }) => {
    const folder = path.posix.dirname(file);
    const named = folder !== directory && name.endsWith(path.posix.basename(folder).replaceAll('-', '_'));
    return named && defining.filter((other) => path.posix.dirname(other.file) === folder).length === 1 ? `${folder}/` : file;
  });
}
const escape = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const collectors = collectorModules();
const collectorRules = collectors.map((module) => ({
  name: 'collector-imports-collector',
  comment: `${module} imports another collector: what two collectors share lives in the model or a named module (STYLE.md)`,
  severity: 'error',
  from: { path: `^${escape(module)}` },
  to: { path: collectors.filter((other) => other !== module).map((other) => `^${escape(other)}`).join('|') },
}));

module.exports = {
  forbidden: [
    ...layerRules,
    ...collectorRules,
    {
      name: 'no-circular',
      comment: 'No import cycle, type-only imports included.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'src-imports-test',
      comment: 'The program never imports the tests, their harnesses or the synthetic fabrics.',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^(test|bench|scripts|synthetic)/' },
    },
    {
      name: 'room-not-in-ranks',
      comment: 'Every folder of src/ is a room with a rank in .dependency-cruiser.cjs.',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^src/', pathNot: anyOf(RANKS.flat()) },
    },
    {
      name: 'not-to-unresolvable',
      comment: 'An import that resolves to no file.',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // Type-only imports count: a lower room must not even name a higher room's types.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'], extensions: ['.ts', '.js'] },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
