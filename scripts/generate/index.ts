// `npm run generate`: writes every generated file of the repository, in an order where a
// generator reads what an earlier one wrote (the Kubernetes manifests embed the dashboards).
// `npm run generate -- --skip-screenshots` leaves docs/fabric-map.png alone (it needs chromium).
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { dashboardFiles } from './dashboards.js';
import { REPOSITORY, type GeneratedFile } from './generated-file.js';
import { goldenFiles } from './golden.js';
import { kubernetesFiles } from './kubernetes.js';
import { readmeFiles } from './readme.js';
import { runbooksFiles } from './runbooks.js';
import { screenshotFiles } from './screenshots.js';

const GENERATORS: [string, () => GeneratedFile[] | Promise<GeneratedFile[]>][] = [
  ['golden', goldenFiles],
  ['readme', readmeFiles],
  ['runbooks', runbooksFiles],
  ['dashboards', dashboardFiles],
  ['kubernetes', kubernetesFiles],
  ['screenshots', screenshotFiles],
];

function current(file: string): Buffer | undefined {
  try {
    return readFileSync(path.join(REPOSITORY, file));
  } catch {
    return undefined;
  }
}

const skipped = new Set(process.argv.slice(2).flatMap((arg) => (arg.startsWith('--skip-') ? [arg.slice('--skip-'.length)] : [])));
for (const [name, generate] of GENERATORS) {
  if (skipped.has(name)) {
    process.stdout.write(`generate: ${name} skipped\n`);
    continue;
  }
  for (const file of await generate()) {
    const content = typeof file.content === 'string' ? Buffer.from(file.content) : file.content;
    if (current(file.path)?.equals(content)) continue;
    writeFileSync(path.join(REPOSITORY, file.path), content);
    process.stdout.write(`generate: wrote ${file.path}\n`);
  }
}
