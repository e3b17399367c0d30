#!/usr/bin/env node
// The entry point: V8's flags first (startup/set-v8-flags.ts), then the program (cli.ts), from the build's
// one-file bundle with V8's code cache (startup/bundle-loader.ts says why), or from the compiled modules
// when there is no bundle or it is older than they are.
import './startup/set-v8-flags.js';
import { runBundle } from './startup/bundle-loader.js';

if (!runBundle(new URL('./exporter.cjs', import.meta.url), new URL('./cli.js', import.meta.url))) await import('./cli.js');
