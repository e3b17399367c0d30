// `topology save` on recorded tool outputs (test/fixtures/fabric-recordings/healthy): the names it writes
// resolve, read back, each to its node alone — a NodeDescription two hosts share (any host sets its
// own) is written as the GUID, and the command says how many and why.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runTopology } from '../../../src/commands/topology/command.js';
import type { FabricCommand } from '../../../src/sources/fabric/commands.js';
import { parsePlan } from '../../../src/sources/fabric/cabling-plan.js';
import { resolvePlan } from '../../../src/sources/fabric/cabling-plan-resolution.js';
import { buildTopology } from '../../../src/sources/fabric/discovery.js';
import { parseIbnetdiscover } from '../../../src/sources/fabric/ibnetdiscover.js';
import { HOST11, HOST12, HOST13 } from '../../support/fabric-recordings.js';
import { recording, ReplayRunner, result, writeRecordedCache, type Override } from '../../support/replay.js';
import { NO_INFINIBAND } from '../../support/trees.js';

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

/** The recorded discovery with node12 and node13 describing themselves as node11. */
const CLONED = recording('fabric', 'healthy', 'ibnetdiscover').stdout.replace(/"node1[23] HCA-1"/g, '"node11 HCA-1"');
const cloning: Override<FabricCommand> = (command, args) => {
  if (command !== 'ibnetdiscover') return undefined;
  writeRecordedCache('healthy', args);
  return result(command, args, { stdout: CLONED });
};

async function save(override?: Override<FabricCommand>): Promise<{ code: number; stderr: string; text: string }> {
  const dir = await mkdtemp(path.join(tmpdir(), 'topology-save-'));
  dirs.push(dir);
  const file = path.join(dir, 'plan.txt');
  const out = { stdout: '', stderr: '' };
  const code = await runTopology(
    ['save', file, '--path.sysfs', NO_INFINIBAND, '--diag.timeout', '2s'],
    { stdout: { write: (text: string) => (out.stdout += text) }, stderr: { write: (text: string) => (out.stderr += text) } },
    {
      runners: { module: 'not-installed', fabric: new ReplayRunner<FabricCommand>('fabric', ['healthy'], override) },
      now: () => new Date('2026-11-27T12:00:00Z'),
    },
  );
  return { code, stderr: out.stderr, text: code === 0 ? await readFile(file, 'utf8') : '' };
}

describe('topology save', () => {
  it('writes every host by its NodeDescription when each is its own, and says nothing of GUIDs', async () => {
    const { code, stderr, text } = await save();
    expect(code).toBe(0);
    expect(stderr).not.toContain('by GUID');
    expect(text).toMatch(/"node12 HCA-1"/);
  });

  it('writes the nodes whose NodeDescription another node has too by GUID, says how many and why, and the plan reads back without a problem', async () => {
    const { code, stderr, text } = await save(cloning);
    expect(code).toBe(0);
    expect(stderr.split('\n').filter(Boolean)).toEqual([
      expect.stringMatching(
        /^infiniband-exporter topology save: wrote the fabric \(14 nodes, \d+ cables\) to .*plan\.txt as a cabling plan$/,
      ),
      'infiniband-exporter topology save: named 3 nodes by GUID, as no name is theirs alone: 3 share their NodeDescription with another node',
    ]);
    expect(text).toContain('# 3 nodes by GUID, as no name is theirs alone: 3 share their NodeDescription with another node.\n');
    expect(text).not.toContain('node11 HCA-1');
    for (const guid of [HOST11, HOST12, HOST13]) expect(text).toMatch(new RegExp(`\\s${guid}\\s`));
    // Read back against the same fabric: every name resolves to one node, every cable is judged.
    const parsed = parsePlan(text, 'plan.txt');
    const topology = buildTopology(parseIbnetdiscover(CLONED), undefined, new Map(), 1000);
    const resolved = resolvePlan(parsed.plan!, topology, new Map());
    expect(resolved.problems).toEqual([]);
    expect(resolved.unjudged).toEqual([]);
    expect(resolved.cables.length).toBe(parsed.plan!.cables.length);
  });
});
