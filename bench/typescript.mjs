// The benchmark loads the TypeScript it shares with the tests (synthetic/, the ibsim lab of
// test/support/) as it is, through tsx's loader: nothing is compiled into a cache first.
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { register } from 'tsx/esm/api';

const PROJECT = fileURLToPath(new URL('..', import.meta.url));
let registered = false;

/** Import a TypeScript module of the repository by its path from the repository's root. */
export function importTypeScript(file) {
  if (!registered) {
    register();
    registered = true;
  }
  return import(pathToFileURL(path.join(PROJECT, file)).href);
}
