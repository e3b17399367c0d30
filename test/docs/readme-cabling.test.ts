// The README's cabling example is what the findings say on the recorded miswired rail tree
// (test/fixtures/cabling/miswired) against the plan saved from it healthy, word for word.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { cablingFindings } from '../../src/collectors/fabric/cabling/findings.js';
import { resolvePlan } from '../../src/sources/fabric/cabling-plan-resolution.js';
import { formatPlan } from '../../src/sources/fabric/cabling-plan-writer.js';
import { currentCabling } from '../../src/model/cabling.js';
import { judgeConformance } from '../../src/model/cabling-conformance.js';
import { judgeRails } from '../../src/model/rails.js';
import { plan, railTreeNames, recordedRailTree } from '../support/cabling.js';

describe('README cabling example', () => {
  it('quotes the findings of the miswired rail tree', () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const section = readme.slice(readme.indexOf('## Check the cabling of a new cluster in one command'));
    const block = /\(exit status 1\):\n\n```\n([\s\S]*?)```/.exec(section)?.[1];
    const healthy = recordedRailTree('healthy');
    const { topology, readings } = recordedRailTree('miswired');
    const resolved = resolvePlan(plan(formatPlan(healthy.topology, healthy.readings), 'plan.txt'), topology, railTreeNames());
    const report = {
      conformance: judgeConformance(resolved, topology, readings),
      rails: judgeRails(topology, currentCabling(topology, readings), undefined),
    };
    const expected = cablingFindings(report, topology)
      .map((finding) => `${finding.summary}\n  → ${finding.remedy}\n`)
      .join('');
    expect(block).toBe(expected);
  });
});
