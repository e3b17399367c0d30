// Fabrics for the cabling tests: from the tools' outputs recorded on test/fixtures/ibsim-topologies/rail-tree.net
// (test/fixtures/cabling/<scenario>/, see its README), or written as a cabling plan (one cable a line)
// for the tangles no simulator run needs.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseNodeNameMap } from '../../src/config/node-name-map.js';
import { cablingFindings, explainedByCabling } from '../../src/collectors/fabric/cabling/findings.js';
import { addressConflictFindings } from '../../src/collectors/fabric/discovery.js';
import { portFindings } from '../../src/collectors/fabric/ports/findings.js';
import { severityRank } from '../../src/model/finding.js';
import type { FabricMapInput } from '../../src/commands/serve/fabric-map-layout.js';
import { parsePlan } from '../../src/sources/fabric/cabling-plan.js';
import { resolvePlan } from '../../src/sources/fabric/cabling-plan-resolution.js';
import { formatPlan } from '../../src/sources/fabric/cabling-plan-writer.js';
import { buildTopology, nodesByPortGuid } from '../../src/sources/fabric/discovery.js';
import { parseIblinkinfo } from '../../src/sources/fabric/iblinkinfo.js';
import { parseIbnetdiscover } from '../../src/sources/fabric/ibnetdiscover.js';
import { currentCabling, type CablingPlan, type CablingReport, type ResolvedPlan } from '../../src/model/cabling.js';
import { judgeConformance } from '../../src/model/cabling-conformance.js';
import { composeFabric, fabricPortKey, type FabricNode, type FabricPortReading, type FabricTopology } from '../../src/model/fabric.js';
import { judgeRails } from '../../src/model/rails.js';
import type { LinkExpectation } from '../../src/model/link-rate.js';
import { CounterRow } from '../../src/model/counter-row.js';

export const CABLING_FIXTURES = fileURLToPath(new URL('../fixtures/cabling/', import.meta.url));

/** The node-name-map of the rail tree (its switches). */
export function railTreeNames(): Map<string, string> {
  return parseNodeNameMap(readFileSync(path.join(CABLING_FIXTURES, 'node-name-map'), 'utf8')).names;
}

export function cablingFixture(...parts: string[]): string {
  return readFileSync(path.join(CABLING_FIXTURES, ...parts), 'utf8');
}

/** A ports cycle's readings from an `iblinkinfo --line` output, as the fabric_ports collector makes them (no counters). */
export function readingsFromIblinkinfo(text: string, topology: FabricTopology): Map<string, FabricPortReading> {
  const nodeOfPort = nodesByPortGuid(topology);
  const readings = new Map<string, FabricPortReading>();
  for (const port of parseIblinkinfo(text).ports) {
    const nodeGuid = nodeOfPort.get(port.portGuid);
    if (nodeGuid === undefined) continue;
    const peerGuid = port.peer && nodeOfPort.get(port.peer.portGuid);
    const down = port.state.id <= 1;
    readings.set(fabricPortKey(nodeGuid, port.port), {
      nodeGuid,
      port: port.port,
      state: port.state,
      physicalState: port.physicalState,
      width: down ? undefined : port.width,
      speed: down ? undefined : port.speed,
      peer: peerGuid === undefined ? undefined : { nodeGuid: peerGuid, port: port.peer!.port },
      counters: CounterRow.EMPTY,
    });
  }
  return readings;
}

export interface RecordedFabric {
  topology: FabricTopology;
  readings: Map<string, FabricPortReading>;
}

/**
 * A recorded scenario of the rail tree: its discovery and the switch ports of its ports cycle. With
 * `discoveredIn`, the topology comes from another scenario (a discovery older than the cable move).
 */
export function recordedRailTree(scenario: string, discoveredIn = scenario, iblinkinfo = 'iblinkinfo-switches'): RecordedFabric {
  const topology = buildTopology(
    parseIbnetdiscover(cablingFixture(discoveredIn, 'ibnetdiscover.stdout')),
    undefined,
    railTreeNames(),
    1000,
  );
  return { topology, readings: readingsFromIblinkinfo(cablingFixture(scenario, `${iblinkinfo}.stdout`), topology) };
}

/** Parse a plan that must be valid. */
export function plan(text: string, file = 'plan.txt'): CablingPlan {
  const parsed = parsePlan(text, file);
  if (!parsed.plan) throw new Error(`plan errors: ${JSON.stringify(parsed.errors)}`);
  return parsed.plan;
}

/** Parse and resolve a plan that must be valid against `topology`. */
export function resolved(text: string, topology: FabricTopology, names: ReadonlyMap<string, string> = new Map()): ResolvedPlan {
  const result = resolvePlan(plan(text), topology, names);
  if (result.problems.length > 0) throw new Error(`plan resolution problems: ${JSON.stringify(result.problems)}`);
  return result;
}

/**
 * A fabric written as a cabling plan: each name becomes a node (a switch when `isSwitch` says so,
 * else a CA whose NodeDescription is the name), GUIDs numbered in order of first appearance; every
 * cable is up at `rate` (4X HDR unless the line says otherwise). The readings are those of every port.
 */
export function fabricFromPlan(
  text: string,
  isSwitch: (name: string) => boolean = (name) => /^(leaf|spine|core|rail)/.test(name),
): RecordedFabric & { guidOf: (name: string) => string } {
  const cables = plan(text).cables;
  const guids = new Map<string, string>();
  const ports = new Map<string, number>();
  const guidOf = (name: string): string => {
    let guid = guids.get(name);
    if (guid === undefined)
      guids.set(name, (guid = `0x${(0x0002c90300000000n + BigInt(guids.size + 1) * 0x100n).toString(16).padStart(16, '0')}`));
    return guid;
  };
  for (const cable of cables) for (const end of cable.ends) ports.set(end.node.text, Math.max(ports.get(end.node.text) ?? 0, end.port));
  const nodes = new Map<string, FabricNode>();
  for (const [name, count] of ports) {
    const guid = guidOf(name);
    const type = isSwitch(name) ? 'switch' : 'ca';
    nodes.set(guid, {
      guid,
      type,
      description: name,
      name: undefined,
      lid: undefined,
      portCount: type === 'switch' ? Math.max(count, 40) : count,
      vendorId: undefined,
      deviceId: undefined,
    });
  }
  const topologyPorts = new Map<string, FabricTopology['ports'] extends ReadonlyMap<string, infer P> ? P : never>();
  const readings = new Map<string, FabricPortReading>();
  const up = { id: 4, name: 'ACTIVE' } as const;
  const linkUp = { id: 5, name: 'LinkUp' } as const;
  for (const cable of cables) {
    const [a, b] = cable.ends.map((end) => ({ nodeGuid: guidOf(end.node.text), port: end.port }));
    for (const [self, peer] of [
      [a!, b!],
      [b!, a!],
    ] as const) {
      const key = fabricPortKey(self.nodeGuid, self.port);
      topologyPorts.set(key, { ...self, portGuid: undefined, lid: undefined, peer, enabled: undefined });
      readings.set(key, {
        ...self,
        state: up,
        physicalState: linkUp,
        width: cable.width ?? 4,
        speed: cable.speed ?? 'HDR',
        peer,
        counters: CounterRow.EMPTY,
      });
    }
  }
  const topology: FabricTopology = { nodes, ports: topologyPorts, duplicateGuids: 0, duplicateLids: 0, discoveredAt: 0 };
  return { topology, readings, guidOf };
}

/**
 * The map's fixture: the rail tree miswired (a moved cable, a swap, an adapter on another rail, a
 * pulled inter-switch link; test/fixtures/cabling/miswired, discovered before the changes) judged
 * against the plan saved from it healthy, with on top an inter-switch link trained at 1X (rail2-leaf2
 * port 4 / spine-1 port 6), a host port stuck INIT (rail1-leaf2 port 3), rising errors on rail0-leaf2
 * port 5 and a bit error rate over the threshold on rail1-leaf1 port 4 (the last two as a caller
 * computes them from counters over time).
 */
export function railTreeMapInput(): FabricMapInput {
  const healthy = recordedRailTree('healthy');
  const { topology, readings } = recordedRailTree('miswired', 'healthy');
  const key = (leaf: number, port: number): string => fabricPortKey(`0x0002c90200700${leaf.toString(16).padStart(3, '0')}`, port);
  const spine1 = (port: number): string => fabricPortKey('0x0002c90200600001', port);
  for (const end of [key(6, 4), spine1(6)]) readings.set(end, { ...readings.get(end)!, width: 1 });
  readings.set(key(4, 3), { ...readings.get(key(4, 3))!, state: { id: 2, name: 'INIT' } });
  const expectations = new Map<string, LinkExpectation>(
    [...readings.keys()].map((end) => [end, { width: 4, speed: 'QDR', source: 'config' }]),
  );
  const planned = resolvePlan(plan(formatPlan(healthy.topology, healthy.readings), 'plan.txt'), topology, railTreeNames());
  const cabling: CablingReport = {
    conformance: judgeConformance(planned, topology, readings),
    rails: judgeRails(topology, currentCabling(topology, readings), undefined),
  };
  const fabric = composeFabric(topology, { ports: readings, expectations }, undefined, { index: 1, count: 1 });
  const explained = explainedByCabling(cabling);
  const findings = [
    ...cablingFindings(cabling, topology),
    ...[...portFindings(fabric), ...addressConflictFindings(fabric)].filter((finding) => !explained(finding)),
  ].sort((a, b) => severityRank(a.severity) - severityRank(b.severity));
  return {
    topology,
    readings,
    expectations,
    cabling,
    findings,
    risingErrors: new Set([key(2, 5)]),
    berOverThreshold: new Set([key(3, 4)]),
    takenAt: Date.parse('2026-11-24T12:00:00Z'),
  };
}
