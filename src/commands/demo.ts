// What `--demo=fabric` puts in place of the fabric tools: their outputs recorded on a simulated
// fabric (demo/fabric, recorded by scripts/demo/record-fabric.sh), replayed through the one runner.
import type { Settings } from '../config/flags.js';
import type { CommandRunner } from '../sources/command-runner.js';
import { RecordedRunner } from '../sources/recorded-runner.js';
import { DEMO, DEMO_FABRIC } from './command-line.js';

/** The runners of the demo by tool group key (collectors' ToolGroup.key); none outside the fabric demo. */
export function demoRunners(settings: Settings): Record<string, CommandRunner<string>> {
  return settings.get(DEMO) === 'fabric' ? { fabric: new RecordedRunner(DEMO_FABRIC) } : {};
}
