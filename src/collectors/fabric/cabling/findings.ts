// The findings of the cabling plan and the rails (fabric mode with --fabric.topology-file, or
// fabric.rails): which cable to move, from where to where, in the words a person at the rack reads
// ("swap the cables of rail1-leaf1 ports 2 and 3", "move the cable in rail0-leaf1 port 6 to
// rail0-leaf1 port 1"). Each mirrors an alert of rules/infiniband-fabric-alerts.yml:
//   swap, rotation, moves, a link below the plan's rate   InfiniBandFabricCableMiswired (status 2, 3)
//   a planned cable without link, a node of the plan gone  InfiniBandFabricPlannedLinkMissing (status 1)
//   an adapter on another rail's switch                    InfiniBandFabricRailViolation
//   a name of the plan that does not resolve (several      InfiniBandExporterCollectorFailing
//   nodes have it, or none), a cable left out for it       (the collector fails while it lasts)
//   a cable the plan does not have (and no move explains)  info: add it to the plan, or unplug it
// Nothing here without a plan or rails: `cablingFindings` of an empty report is empty.
import { formatWidth, LANE_RATES, type LinkSpeed, type LinkWidth } from '../../../model/link-rate.js';
import {
  compareNames,
  nodeLabel,
  type CableMove,
  type CablingAction,
  type CablingConformance,
  type CablingReport,
  type RailReport,
  type ResolvedCable,
} from '../../../model/cabling.js';
import type { FabricPortReading, FabricTopology, PortAddress } from '../../../model/fabric.js';
import { plural } from '../../../model/finding.js';
import type { Finding } from '../../../model/finding.js';
import { CablingWords, portWasInUse } from './words.js';

export { CablingWords, portWasInUse };

const MISWIRED = { runbook: 'infinibandfabriccablemiswired', alert: 'InfiniBandFabricCableMiswired' } as const;
const MISSING = { runbook: 'infinibandfabricplannedlinkmissing', alert: 'InfiniBandFabricPlannedLinkMissing' } as const;
/**
 * A missing cable whose switch port shows it carried traffic (a link-down count, packets since the
 * counters were reset) was pulled, not forgotten: critical as the port-down finding it explains
 * (InfiniBandFabricPortDown), which it replaces with both ends and the plan's line.
 */
const IN_USE = { severity: 'critical', runbook: 'infinibandfabricportdown', alert: 'InfiniBandFabricPortDown' } as const;

const RAIL = { runbook: 'infinibandfabricrailviolation', alert: 'InfiniBandFabricRailViolation' } as const;
const UNRESOLVED = { runbook: 'infinibandexportercollectorfailing', alert: 'InfiniBandExporterCollectorFailing' } as const;

function subject(words: CablingWords, port: PortAddress, peer: PortAddress | undefined): Finding['subject'] {
  return { kind: 'fabric-port', node: words.node(port.nodeGuid), port: port.port, peer: peer && words.portName(peer) };
}

/** The steps of an action in order, joined for one line: unplug, then the moves or swaps, then plug. */
function remedyOf(words: CablingWords, action: CablingAction): string {
  const steps: string[] = action.unplug.map(
    (cable) => `unplug the cable between ${words.pair(cable.ends[0], cable.ends[1])} (the plan has no cable there)`,
  );
  if (action.kind === 'move') {
    // "move the cable in A to B; then the cable in C to A".
    action.moves.forEach((move, i) =>
      steps.push(
        `${i === 0 ? `${steps.length > 0 ? 'then move' : 'move'}` : 'then'} the cable in ${words.port(move.from)} to ${words.port(move.to)}`,
      ),
    );
  } else {
    // "swap the cables of leaf ports 1 and 3; then of ports 1 and 2".
    action.swaps.forEach(([a, b], i) =>
      steps.push(
        i === 0
          ? `${steps.length > 0 ? 'then swap' : 'swap'} the cables of ${words.pair(a, b)}`
          : `then of ${compactPair(words, action.swaps[0]!, [a, b])}`,
      ),
    );
  }
  for (const cable of action.plug) steps.push(`then plug a cable between ${words.cable(cable)} (planned, no link now)`);
  return steps.join('; ');
}

/** The later swaps of a rotation on one switch say only the ports: "then of ports 1 and 3". */
function compactPair(words: CablingWords, first: readonly [PortAddress, PortAddress], pair: readonly [PortAddress, PortAddress]): string {
  const [a, b] = pair;
  return a.nodeGuid === b.nodeGuid && a.nodeGuid === first[0].nodeGuid
    ? `ports ${Math.min(a.port, b.port)} and ${Math.max(a.port, b.port)}`
    : words.pair(a, b);
}

function actionFinding(words: CablingWords, action: CablingAction): Finding {
  const cables = action.moves
    .flatMap((move) => [words.plannedAt(move.anchor), words.plannedAt(move.to)])
    .filter((cable): cable is ResolvedCable => cable !== undefined);
  const lines = words.lines([...cables, ...action.plug]);
  const first = action.moves[0] ?? { from: action.unplug[0]!.ends[0], to: action.unplug[0]!.ends[1], anchor: action.unplug[0]!.ends[1] };
  const remedy = remedyOf(words, action);
  const common = {
    severity: 'warning' as const,
    subject: subject(words, first.from, first.anchor),
    meaning:
      'Traffic for the ports of these cables reaches the wrong port: routes, rails and the plan no longer match, jobs run slower or across the spines, and the port a job expects may be dark.',
    cause:
      'Cables plugged into the wrong ports at installation or during maintenance (neighbouring ports, two cables crossed, a cable put back in the wrong switch).',
    remedy,
    ...MISWIRED,
  };
  if (action.kind === 'swap') {
    const [a, b] = action.moves as [CableMove, CableMove];
    return {
      ...common,
      condition: 'cable-swapped',
      summary: `the cables in ${words.pair(a.from, b.from)} are swapped: ${words.port(a.from)} has the cable from ${words.port(a.anchor)} and ${words.port(b.from)} the one from ${words.port(b.anchor)}, the plan has them the other way round${lines}`,
    };
  }
  if (action.kind === 'rotate') {
    return {
      ...common,
      condition: 'cables-rotated',
      summary: `${action.moves.length} cables are each in the next one's port: ${action.moves.map((move) => `${words.port(move.from)} has the cable that belongs in ${words.port(move.to)}`).join(', ')}${lines}`,
    };
  }
  const moved = action.moves.map(
    (move) => `the cable from ${words.port(move.anchor)} is in ${words.port(move.from)}, the plan has it in ${words.port(move.to)}`,
  );
  const unplugged = action.unplug.map((cable) => `a cable the plan does not have joins ${words.pair(cable.ends[0], cable.ends[1])}`);
  return {
    ...common,
    condition: action.moves.length > 1 ? 'cables-misplaced' : 'cable-misplaced',
    summary: `${[...unplugged, ...moved].join('; ')}${lines}`,
  };
}

function rateText(width: LinkWidth | undefined, speed: LinkSpeed | undefined): string {
  const gbps = width !== undefined && speed !== undefined ? ` (${width * LANE_RATES[speed].nominalGbps} Gb/s)` : '';
  return `${[formatWidth(width), speed ?? ''].filter(Boolean).join(' ')}${gbps}`;
}

function conformanceFindings(words: CablingWords, conformance: CablingConformance): Finding[] {
  const findings = conformance.actions.map((action) => actionFinding(words, action));
  for (const link of conformance.belowPlan) {
    const [a, b] = link.cable.ends;
    findings.push({
      condition: 'link-below-plan',
      severity: 'warning',
      subject: subject(words, { nodeGuid: a.nodeGuid!, port: a.port }, { nodeGuid: b.nodeGuid!, port: b.port }),
      summary: `the link between ${words.cable(link.cable)} runs at ${rateText(link.width, link.speed)}, the plan says ${rateText(link.cable.width ?? link.width, link.cable.speed ?? link.speed)}${words.lines([link.cable])}`,
      meaning:
        'The cable is where the plan puts it, but it carries less than the plan is built for: every job routed over it gets a fraction of the bandwidth.',
      cause:
        'A cable or transceiver of a lower generation or a split (2X) cable where a full one was planned, a damaged cable that lost lanes, or a port configured narrower or slower.',
      remedy: `check that the cable and transceivers are the planned type, reseat the cable at both ends, and make the link retrain: ibportstate -G ${a.nodeGuid} ${a.port} reset`,
      ...MISWIRED,
    });
  }
  for (const { cable } of conformance.missingLinks) {
    const [a, b] = cable.ends;
    const used = words.inUse(a) || words.inUse(b);
    findings.push({
      condition: 'planned-link-missing',
      ...(used ? IN_USE : { severity: 'warning', ...MISSING }),
      subject: subject(words, { nodeGuid: a.nodeGuid!, port: a.port }, { nodeGuid: b.nodeGuid!, port: b.port }),
      summary: `no link between ${words.cable(cable)}, a cable of the plan${words.lines([cable])}: the cable is not plugged in, or it, a transceiver or a port is broken`,
      meaning:
        'A planned path is missing: on an inter-switch link the fabric has less bandwidth and fewer routes than it was built with; on a host link the adapter is cut off.',
      cause: 'The cable was never plugged in or was pulled, a transceiver is unseated or dead, or a port is disabled.',
      remedy: `plug the cable between ${words.cable(cable)}, or reseat it at both ends; if the link stays down, replace the cable or transceiver (ibportstate -G ${a.nodeGuid} ${a.port} query shows the port's state)`,
    });
  }
  findings.push(...problemFindings(words, conformance));
  for (const node of conformance.missingNodes) {
    if (node.guid === undefined) {
      findings.push(unknownNameFinding(words, node));
      continue;
    }
    const name = `${nodeLabel(words.topology, node.guid, node.written)} (${node.guid})`;
    const ends = node.cables.map(
      (cable) =>
        cable.ends.find((end) =>
          node.guid === undefined ? end.nodeGuid === undefined && end.written === node.written : end.nodeGuid !== node.guid,
        ) ?? cable.ends[1],
    );
    const first = node.cables[0];
    const peer = first?.ends.find((end) => end.nodeGuid !== node.guid && end.nodeGuid !== undefined);
    const used = ends.some((end) => words.inUse(end));
    findings.push({
      condition: 'plan-node-missing',
      ...(used ? IN_USE : { severity: 'warning', ...MISSING }),
      subject: peer ? subject(words, { nodeGuid: peer.nodeGuid!, port: peer.port }, undefined) : { kind: 'subnet' },
      summary: used
        ? `${ends
            .filter((end) => words.inUse(end))
            .map((end) => words.planPort(end))
            .join(
              ', ',
            )} has no link, and ${name} at the other end of ${node.cables.length === 1 ? 'its planned cable' : `its ${node.cables.length} planned cables`} is not in the fabric${words.lines(node.cables)}: the cable was pulled or ${nodeLabel(words.topology, node.guid, node.written)} went down`
        : `${name}, a node of the plan${node.cables.length > 0 ? ` with ${plural(node.cables.length, 'cable')} (to ${ends.map((end) => words.planPort(end)).join(', ')})` : ''}, is not in the fabric${words.lines(node.cables)}`,
      meaning:
        'A switch or host the fabric was planned with is not reachable: its links are dark, and for a switch every host behind it is cut off.',
      cause: used
        ? 'The cable was pulled or broke, a transceiver failed, or the node at the other end was powered off or failed (its switch port carried traffic before).'
        : 'It is powered off or not installed yet, every one of its cables is unplugged, or (a switch) it failed.',
      remedy: `power it on and check its cables${node.cables.length > 0 ? ` to ${ends.map((end) => words.planPort(end)).join(', ')}` : ''}${
        used
          ? ` (${ends
              .filter((end) => words.inUse(end))
              .map((end) => `ibportstate -G ${end.nodeGuid} ${end.port} query`)
              .join(', ')} shows the switch side)`
          : '; a node not installed yet can wait'
      }`,
    });
  }
  // Cables the plan does not have and no action explains: between two nodes of the plan, on ports it leaves free.
  const explained = new Set(
    conformance.actions
      .flatMap((action) => [...action.moves.flatMap((move) => [move.from, move.anchor]), ...action.unplug.flatMap((cable) => cable.ends)])
      .map((end) => `${end.nodeGuid}/${end.port}`),
  );
  for (const cable of conformance.unplanned) {
    if (cable.ends.some((end) => explained.has(`${end.nodeGuid}/${end.port}`))) continue;
    findings.push({
      condition: 'cable-unplanned',
      severity: 'info',
      subject: subject(words, cable.ends[0], cable.ends[1]),
      summary: `a cable joins ${words.port(cable.ends[0])} and ${words.port(cable.ends[1])}, two nodes of the plan, where the plan has none`,
      meaning:
        'The fabric has a link the plan does not: an extra inter-switch link changes the routes, an extra host link changes where its traffic goes.',
      cause: 'A cable added during maintenance, or a plan that was not updated.',
      remedy: 'add it to the plan if it belongs there (infiniband-exporter topology save writes the fabric as it is), or unplug it',
      alert: undefined,
      runbook: MISWIRED.runbook,
    });
  }
  return findings;
}

/** A name of the plan several nodes have, or a cable left out as resolved: the plan line(s), the nodes, and why. */
function problemFindings(words: CablingWords, conformance: CablingConformance): Finding[] {
  return conformance.plan.problems
    .filter((problem) => problem.kind !== 'unknown')
    .map((problem) => ({
      condition: problem.kind === 'ambiguous' ? 'plan-name-ambiguous' : 'plan-cable-conflict',
      severity: 'warning' as const,
      subject: { kind: 'subnet' },
      summary: `${problem.message}${words.lines(problem.lines.map((line) => ({ line })))}`,
      meaning:
        problem.kind === 'ambiguous' && problem.boundTo === undefined
          ? 'The plan cannot say which node it means: the cables of these lines are not checked, so a miswired or missing cable there goes unreported. The rest of the plan is checked.'
          : problem.kind === 'ambiguous'
            ? 'The cables of these lines are still checked as the node the name named before, but a restart of the exporter would no longer know which node is meant, and another host now claims this name.'
            : 'The plan names one port twice once its names are resolved: this cable is not checked. The rest of the plan is checked.',
      cause:
        problem.kind === 'ambiguous'
          ? 'Any host sets its own NodeDescription: a host was given the name of another (a copied rdma-ndd or node_desc setting, a reinstalled host with an old hostname), or adapters still carry the factory description. In a node-name-map, a line copied without changing its name.'
          : 'A node named twice in the plan under two names (its GUID or node-name-map name and a NodeDescription), or a host that took the NodeDescription of another node of the plan.',
      remedy:
        problem.kind === 'ambiguous'
          ? `find the nodes that share it (${problem.guids.join(', ')}: smpquery nodedesc -G <guid>), give each host its own NodeDescription (rdma-ndd, /sys/class/infiniband/*/node_desc), and name the node by GUID or node-name-map name in the plan (infiniband-exporter topology save does)`
          : 'name the node one way in the plan, by GUID or node-name-map name',
      ...UNRESOLVED,
    }));
}

/** A name of the plan no node has: missing (counted) and an error of the plan until it resolves. */
function unknownNameFinding(words: CablingWords, node: CablingConformance['missingNodes'][number]): Finding {
  const ends = node.cables.map(
    (cable) => cable.ends.find((end) => !(end.nodeGuid === undefined && end.written === node.written)) ?? cable.ends[1],
  );
  const peer = ends.find((end) => end.nodeGuid !== undefined);
  return {
    condition: 'plan-node-missing',
    severity: 'warning',
    subject: peer ? subject(words, { nodeGuid: peer.nodeGuid!, port: peer.port }, undefined) : { kind: 'subnet' },
    summary: `"${node.written}", a node of the plan${node.cables.length > 0 ? ` with ${plural(node.cables.length, 'cable')} (to ${ends.map((end) => words.planPort(end)).join(', ')})` : ''}, names no node of the fabric: no node-name-map name or NodeDescription is "${node.written}"${words.lines(node.cables)}`,
    meaning:
      'Either a host the fabric was planned with is down and has not been seen since the exporter started, or the plan has a typo: its cables are not checked until the name resolves.',
    cause:
      'A typo in the plan, a host powered off or not installed yet, or a host whose NodeDescription changed (renamed, reinstalled, rdma-ndd not running).',
    remedy: `check the spelling against ibnetdiscover or smpquery nodedesc; name a node that is not up yet by GUID or node-name-map name in the plan${node.cables.length > 0 ? `, then check its cables to ${ends.map((end) => words.planPort(end)).join(', ')}` : ''}`,
    ...UNRESOLVED,
  };
}

function railFindings(words: CablingWords, rails: RailReport): Finding[] {
  const from = rails.source === 'config' ? 'fabric.rails' : 'where most hosts cable that adapter';
  return rails.violations.map((violation) => {
    // Where the plan (if any) puts this adapter's cable: the other end of its planned cable.
    const cable = words.plannedAt(violation.adapter);
    const planned = cable?.ends.find((end) => end.nodeGuid !== violation.adapter.nodeGuid || end.port !== violation.adapter.port);
    const belongs = violation.railLeaves.map((guid) => words.node(guid).name).sort(compareNames);
    const leafRail = violation.leafRail === '' ? 'a switch of no rail' : `a switch of rail ${violation.leafRail}`;
    return {
      condition: 'rail-violation',
      severity: 'warning',
      subject: subject(words, violation.adapter, violation.leaf),
      summary: `${words.port(violation.adapter)} belongs to rail ${violation.rail} (${from}) but is cabled to ${words.port(violation.leaf)}, ${leafRail}`,
      meaning: `A rail-optimised fabric keeps the traffic of each adapter of every host on its own rail's switches. This adapter's traffic to its rail goes through the spines instead: a collective operation of a whole job slows down to the spines' share of bandwidth.`,
      cause: "The host's cables were plugged into the wrong switch, or two of its adapters' cables were crossed at the host.",
      remedy: planned
        ? `move its cable to ${words.planPort(planned)}, where the plan puts it`
        : `move its cable to a free port of a switch of rail ${violation.rail}${belongs.length > 0 ? ` (${belongs.join(', ')})` : ''}`,
      ...RAIL,
    };
  });
}

/**
 * The fabric findings a cabling report explains better, for a caller that shows both lists: a
 * switch port "down" (fabric-port-down) that is a port a cable should be moved into or out of
 * — the cable was moved, not pulled. Everything else stands.
 */
export function explainedByCabling(report: CablingReport | undefined): (finding: Finding) => boolean {
  const ports = new Set<string>();
  const degraded = new Set<string>();
  const conformance = report?.conformance;
  for (const action of conformance?.actions ?? []) {
    for (const move of action.moves) for (const end of [move.from, move.to]) ports.add(`${end.nodeGuid}/${end.port}`);
  }
  // A pulled cable is one finding: the plan's missing link (or missing node) names both ends.
  for (const { cable } of conformance?.missingLinks ?? []) for (const end of cable.ends) ports.add(`${end.nodeGuid}/${end.port}`);
  for (const node of conformance?.missingNodes ?? []) {
    for (const cable of node.cables) for (const end of cable.ends) if (end.nodeGuid !== undefined) ports.add(`${end.nodeGuid}/${end.port}`);
  }
  // A link below the plan is one finding with the plan's line, not a second one from the expectations.
  for (const { cable } of conformance?.belowPlan ?? []) for (const end of cable.ends) degraded.add(`${end.nodeGuid}/${end.port}`);
  return (finding) => {
    if (finding.subject.kind !== 'fabric-port') return false;
    const key = `${finding.subject.node.guid}/${finding.subject.port}`;
    return (
      (finding.condition === 'fabric-port-down' && ports.has(key)) || (finding.condition === 'fabric-link-degraded' && degraded.has(key))
    );
  };
}

/**
 * Every finding of a cabling report (`topology`: the discovery they were judged against, for the
 * names). Actions first (each with every step in order), then missing links and nodes, links below
 * the plan, rail violations, and the cables the plan does not have.
 */
export function cablingFindings(
  report: CablingReport | undefined,
  topology: FabricTopology | undefined,
  readings: ReadonlyMap<string, FabricPortReading> = new Map(),
): Finding[] {
  if (!report) return [];
  const words = new CablingWords(topology, report.conformance, readings);
  return [
    ...(report.conformance ? conformanceFindings(words, report.conformance) : []),
    ...(report.rails ? railFindings(words, report.rails) : []),
  ].sort((a, b) => (a.severity === b.severity ? 0 : a.severity === 'warning' ? -1 : 1));
}
