// Fabric mode keeps its event loop turning: a ports cycle that waits on its tools leaves /metrics
// and /ready answering, and the fabric's exposition is rendered in time slices when a cycle
// publishes, byte for byte what rendering it at once gives. (How long the loop is held is measured
// by `npm run bench -- fabric-scale`, not asserted here.)
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rm, rmdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FABRIC_PORTS } from '../../../src/collectors/fabric/ports/index.js';
import { FABRIC_PORTS_CYCLE } from '../../../src/collectors/fabric/fabric-mode.js';
import { inSlices } from '../../../src/event-loop/time-slices.js';
import { ExpositionBuffer } from '../../../src/exposition/buffer.js';
import { exporterFromFlags, settingsFromFlags } from '../../support/exporter.js';
import { samplesOf, scrape } from '../../support/exposition.js';
import { waitFor } from '../../../synthetic/processes.js';
import { fakeFabricTools, fakeToolFlags, generateFabric, writeScenario } from '../../../synthetic/fabric-generator/index.js';

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

/** A three-tier fat tree of 512 hosts on 16-port switches (about 1 500 switch ports), its fake tools, and a gate in front of iblinkinfo. */
async function fabricWithGate() {
  const dir = await mkdtemp(path.join(tmpdir(), 'ibx-slices-'));
  dirs.push(dir);
  const fabric = generateFabric({
    shape: { tiers: 3, hosts: 512, radix: 16 },
    faults: { seed: 7, pulledHostCables: 2, pulledSwitchCables: 1, narrowLinks: 2, slowLinks: 2, erroringPorts: 6, congestedPorts: 4 },
  });
  writeScenario(fabric, path.join(dir, 'scenario'), { perSwitch: true });
  const tools = await fakeFabricTools(path.join(dir, 'scenario'), path.join(dir, 'bin'));
  // While the gate (a directory) exists, iblinkinfo says it started and waits: a scan in progress.
  const gate = path.join(dir, 'gate');
  const started = path.join(dir, 'started');
  const gated = path.join(dir, 'bin', 'iblinkinfo-gated');
  await writeFile(
    gated,
    `#!/bin/sh\nif [ -d '${gate}' ]; then : > '${started}'; while [ -d '${gate}' ]; do sleep 0.02; done; fi\nexec '${tools.iblinkinfo}' "$@"\n`,
  );
  await chmod(gated, 0o755);
  return { tools: { ...tools, iblinkinfo: gated }, gate, started };
}

describe('fabric mode and its event loop', () => {
  it("answers /metrics (the last cycle's ports) and /ready while a ports cycle waits on iblinkinfo", async () => {
    const { tools, gate, started } = await fabricWithGate();
    const exporter = exporterFromFlags([
      '--path.sysfs',
      '/nonexistent',
      '--no-collector.diag',
      '--collector.fabric',
      ...fakeToolFlags(tools),
    ]);
    try {
      await exporter.collectOnce();
      await exporter.collectFabricOnce();
      const before = await scrape(exporter);
      const states = samplesOf(before, 'infiniband_fabric_port_state_id');
      expect(states.length).toBeGreaterThan(1000);

      await mkdir(gate);
      const cycle = exporter.collectors.runCycle(FABRIC_PORTS_CYCLE);
      await waitFor('iblinkinfo to start', () => (existsSync(started) ? true : undefined), 30_000, 10);
      // The cycle is under way, its scan not done: the server answers, with what the last cycle read.
      const during = await exporter.app.inject({ method: 'GET', url: '/metrics' });
      expect(during.statusCode).toBe(200);
      expect(samplesOf(during.body, 'infiniband_fabric_port_state_id')).toEqual(states);
      expect((await exporter.app.inject({ method: 'GET', url: '/ready' })).body).toBe('ready\n');
      const gzipped = await exporter.app.inject({ method: 'GET', url: '/metrics', headers: { 'accept-encoding': 'gzip' } });
      expect(gzipped.headers['content-encoding']).toBe('gzip');
      await rmdir(gate);
      await cycle;
      expect(samplesOf(await scrape(exporter), 'infiniband_fabric_port_state_id')).toEqual(states);
    } finally {
      await exporter.stop();
    }
  }, 60_000);

  it('renders the ports as work that pauses hundreds of times: the same text as at once, step by step or in time slices', async () => {
    const { tools } = await fabricWithGate();
    const flags = ['--path.sysfs', '/nonexistent', '--no-collector.diag', '--collector.fabric', ...fakeToolFlags(tools)];
    const exporter = exporterFromFlags(flags);
    try {
      await exporter.collectFabricOnce();
      const snapshot = exporter.collectors.snapshot!;
      const metrics = FABRIC_PORTS.metrics!;
      const settings = settingsFromFlags(flags);
      const atOnce = new ExpositionBuffer();
      metrics.write(snapshot, atOnce, settings);
      const stepped = new ExpositionBuffer();
      const steps = metrics.writeSteps!(snapshot, stepped, settings);
      let pauses = 0;
      for (let step = steps.next(); !step.done; step = steps.next()) pauses += 1;
      // About 1 500 ports and 17 families: a pause every 256 samples or ports.
      expect(pauses).toBeGreaterThan(50);
      expect(stepped.view().toString()).toBe(atOnce.view().toString());
      const sliced = new ExpositionBuffer();
      await inSlices(metrics.writeSteps!(snapshot, sliced, settings));
      expect(sliced.view().toString()).toBe(atOnce.view().toString());
      // What /metrics serves is that text, rendered at publish.
      expect(await scrape(exporter)).toContain(atOnce.view().toString());
    } finally {
      await exporter.stop();
    }
  }, 60_000);
});
