// Sets the V8 flags the exporter chooses for itself (v8-flags.ts says why each) before anything
// else is loaded: main.ts and cli.ts import this module first, so that they hold however it is
// started, `node dist/main.js` included, and before the bundle is compiled: a code cache holds
// only for the flags it was made with. Once per process (the bundle imports it again); what it set
// is recorded (v8FlagsSet) for the code cache's name.
import { createRequire } from 'node:module';
import { setFlagsFromString } from 'node:v8';
import { CONFIG_FILE, readBoundedText } from '../files/bounded-file.js';
import { asksForFabricMode, chooseV8Flags, recordV8FlagsSet, v8FlagsSet } from './v8-flags.js';

if (v8FlagsSet() === undefined) {
  const given = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)];
  // The config file is parsed here only when one is named: then the program loads yaml anyway.
  // Read as the program reads it (a FIFO or a huge file is refused, never waited on).
  // Duplicate keys are the program's to report; the yaml package's own check of them is quadratic.
  const readConfig = (file: string): unknown =>
    (createRequire(import.meta.url)('yaml') as { parse(text: string, options: object): unknown }).parse(
      readBoundedText(file, CONFIG_FILE),
      { uniqueKeys: false },
    );
  const fabric = asksForFabricMode(process.argv.slice(2), readConfig);
  const flags = chooseV8Flags(given, { fabric });
  recordV8FlagsSet(flags);
  for (const flag of flags) setFlagsFromString(flag);
}
