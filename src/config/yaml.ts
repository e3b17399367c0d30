// The yaml package, loaded the first time a file is parsed: a host started without --config.file
// and --web.config.file never loads it (about 8 MiB of resident memory, docs/benchmarks.md).
import { createRequire } from 'node:module';
import type * as Yaml from 'yaml';

const require = createRequire(import.meta.url);
let loaded: typeof Yaml | undefined;

export function yaml(): typeof Yaml {
  loaded ??= require('yaml') as typeof Yaml;
  return loaded;
}
