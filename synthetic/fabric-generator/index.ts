// A generated fabric of any size for tests and benchmarks: its topology (topology.ts), the outputs
// of the tools fabric mode runs (outputs.ts, cache.ts), ibsim's net file for the same fabric
// (net.ts), a replayable scenario written to disk (scenario.ts) and fake tools replaying it through
// the exporter's real command runner (fake-tools.ts). Test code only: not part of the bundle.
export * from './topology.js';
export * from './outputs.js';
export { discoveryCache } from './cache.js';
export { fixed3, gidGroups, gidText, humanReadable } from './mad.js';
export { ibsimNet, IBSIM_MAX_NODES, type NetOptions } from './net.js';
export { writeScenario, scenarioCommands, SQUEUE_COMMAND, type ScenarioOptions, type WrittenScenario } from './scenario.js';
export { autogroupNice, fakeFabricTools, fakeToolFlags, FAKE_JOB_TOOLS, FAKE_TOOLS, type FakeTool } from './fake-tools.js';
export { compressHostlist, generateJobs, hostName, squeueOutput, type GeneratedJob, type JobsSpec } from './jobs.js';
