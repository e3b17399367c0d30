// The fabric map's layout (GET /fabric; fabric-map.ts draws it): every link with its worst state,
// switches in tiers derived from the cabling (leaves are the switches with hosts, spines one hop
// above, …), hosts under their leaf, and where each box goes.
import type { Finding } from '../../model/finding.js';
import { PHYSICAL_STATE_LINK_UP, PORT_STATE_INIT } from '../../model/port-state.js';
import { pacer, type Work } from '../../event-loop/time-slices.js';
import { compareNames, currentCablingSteps, nodeLabel, planPortKey, PLANNED_LINK_STATUS, type CablingReport } from '../../model/cabling.js';
import { fabricPortKey, type FabricNodeType, type FabricPortReading, type FabricTopology, type PortAddress } from '../../model/fabric.js';
import { assessLink } from '../../model/link-degradation.js';
import type { LinkExpectation } from '../../model/link-rate.js';
/** Link states, worst first: a link takes the first of these that applies to it. */
export const LINK_STATES = ['down', 'init', 'miswired', 'degraded', 'bad', 'ber', 'errors', 'ok'] as const;
export type LinkState = (typeof LINK_STATES)[number];

export const STATE_WORDS: Readonly<Record<LinkState, string>> = {
  down: 'down (vermilion): no link (long dashes, as every cable that is not there now)',
  init: 'stuck INIT (purple, short dashes): link up, no subnet manager configured it',
  miswired: 'miswired (blue, dash-dot): not where the plan or the rails put it (long dashes: where it belongs)',
  degraded: 'degraded (orange, dashes): below its expected or planned width or speed',
  bad: 'on the list to drain and replace (bluish green, thick): /fabric/bad-links',
  ber: 'bit error rate over the threshold (black, dotted)',
  errors: 'rising error counters (sky blue, dash-dot-dot)',
  ok: 'as expected',
};

export interface FabricMapInput {
  topology: FabricTopology;
  /** The last ports cycle's readings, by fabricPortKey. */
  readings: ReadonlyMap<string, FabricPortReading>;
  /** What each read port's link should run at, by fabricPortKey. */
  expectations: ReadonlyMap<string, LinkExpectation>;
  /** The cabling plan's and the rails' report, when there is one. */
  cabling?: CablingReport | undefined;
  /** Where the runbook links point (the exporter's /runbooks, or --web.runbook-url). */
  runbookBase?: string;
  /** The findings to list beside the picture (the fabric's and the cabling's), worst first. */
  findings: readonly Finding[];
  /** Ports (fabricPortKey) whose error counters rose over the caller's window. */
  risingErrors?: ReadonlySet<string>;
  /** Ports whose bit error rate is over the caller's threshold. */
  berOverThreshold?: ReadonlySet<string>;
  /** Ends (fabricPortKey) of the links on the bad-links list. */
  badLinks?: ReadonlySet<string>;
  /** Unix time (ms) of the data, for "as of". */
  takenAt?: number;
  /** A leaf with more hosts than this shows them as a count (default 8). */
  hostsPerLeaf?: number;
  /** Findings listed at most (default 200); the rest are counted. */
  listLimit?: number;
  /** A running job whose footprint is drawn (`/fabric?job=ID`): its words, and its links as their two port keys sorted and joined by a space. */
  job?: { title: string; links: ReadonlySet<string> };
}

export interface MapLink {
  id: string;
  ends: readonly [string, string];
  /** Node ids (GUIDs, or `?name` for a node of the plan no name resolved) of the two ends. */
  nodes: readonly [string, string];
  states: Set<LinkState>;
  /** A cable there now; otherwise (down, or a planned cable that is not there) drawn dashed. */
  present: boolean;
}

export interface MapNode {
  id: string;
  type: FabricNodeType | 'missing';
  name: string;
  label: string;
  tier: number;
  x: number;
  y: number;
  w: number;
  h: number;
  rotated: boolean;
}

export const keyOf = (address: PortAddress): string => fabricPortKey(address.nodeGuid, address.port);
export const nodeOfKey = (key: string): string => key.slice(0, key.lastIndexOf('/'));
export const idPart = (key: string): string =>
  key
    .replace(/^0x/, '')
    .replace(/[^A-Za-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');

/** The id of a link's element: `l-<guid>-<port>-<guid>-<port>`, ends in sorted order. */
export function linkElementId(a: string, b: string): string {
  return `l-${[a, b].sort().map(idPart).join('-')}`;
}

/** A short label: the node-name-map name, else a Mellanox switch description's hostname (`MF0;leaf-3:SX6036/U1` → `leaf-3`), else the description. */
export function shortLabel(name: string): string {
  return /^[^;:\s]*;([^:;]+):/.exec(name)?.[1] ?? name;
}

/** Every link to draw, by the sorted keys of its ends, with the states that apply to it. */
export function* collectLinks(input: FabricMapInput): Work<Map<string, MapLink>> {
  const pace = pacer();
  const { topology, readings, expectations, cabling } = input;
  const links = new Map<string, MapLink>();
  const add = (a: string, b: string, state: LinkState, present = false): MapLink => {
    const ends = [a, b].sort() as [string, string];
    const id = ends.join(' ');
    let link = links.get(id);
    if (!link)
      links.set(
        id,
        (link = { id: linkElementId(a, b), ends, nodes: [nodeOfKey(ends[0]), nodeOfKey(ends[1])], states: new Set(), present }),
      );
    link.present ||= present;
    link.states.add(state);
    return link;
  };
  const cables = yield* currentCablingSteps(topology, readings);
  for (const [key, peer] of cables) {
    if (pace()) yield;
    const peerKey = keyOf(peer);
    if (key > peerKey) continue;
    const link = add(key, peerKey, 'ok', true);
    for (const end of [key, peerKey]) {
      const reading = readings.get(end);
      if (!reading) continue;
      if (reading.state?.id === PORT_STATE_INIT && reading.physicalState?.id === PHYSICAL_STATE_LINK_UP) link.states.add('init');
      const { widthDegraded, speedDegraded } = assessLink(reading, expectations.get(end));
      if (widthDegraded || speedDegraded) link.states.add('degraded');
      if (input.badLinks?.has(end)) link.states.add('bad');
      if (input.berOverThreshold?.has(end)) link.states.add('ber');
      if (input.risingErrors?.has(end)) link.states.add('errors');
    }
  }
  const conformance = cabling?.conformance;
  for (const link of conformance?.links ?? []) {
    const [a, b] = link.cable.ends.map(planPortKey) as [string, string];
    if (link.status === PLANNED_LINK_STATUS.noLink) add(a, b, 'down');
    else if (link.status === PLANNED_LINK_STATUS.connectedElsewhere) add(a, b, 'miswired');
    else if (link.status === PLANNED_LINK_STATUS.belowPlan) add(a, b, 'degraded');
  }
  for (const cable of conformance?.unplanned ?? []) add(keyOf(cable.ends[0]), keyOf(cable.ends[1]), 'miswired');
  for (const violation of cabling?.rails?.violations ?? []) add(keyOf(violation.adapter), keyOf(violation.leaf), 'miswired');
  // A cable discovery saw on a port that is read without a link now: down, unless the plan says
  // where that cable went (a planned cable connected elsewhere is miswired, not broken).
  for (const [key, port] of topology.ports) {
    if (pace()) yield;
    const reading = readings.get(key);
    if (!port.peer || !reading || reading.state === undefined || reading.peer || cables.has(key)) continue;
    const known = links.get([key, keyOf(port.peer)].sort().join(' '));
    if (!known?.states.has('miswired')) add(key, keyOf(port.peer), 'down');
  }
  return links;
}

/** The worst state of a link. */
export function worst(link: MapLink): LinkState {
  return LINK_STATES.find((state) => state !== 'ok' && link.states.has(state)) ?? 'ok';
}

export interface Layout {
  nodes: Map<string, MapNode>;
  width: number;
  height: number;
  tierNames: { tier: number; y: number; name: string }[];
  /** Hosts collapsed into a count, by leaf: [count, worst state among them]. */
  counts: Map<string, { count: number; box: { x: number; y: number; w: number; h: number } }>;
}

export const MARGIN = 24;
export const TIER_GAP = 150;
export const HOST_HEIGHT = 16;
export const HOST_GAP = 3;

/** Tiers, rows and boxes. */
export function* layout(input: FabricMapInput, links: ReadonlyMap<string, MapLink>): Work<Layout> {
  const pace = pacer();
  const { topology } = input;
  const hostsPerLeaf = input.hostsPerLeaf ?? 8;
  const ids = new Set<string>();
  for (const link of links.values()) {
    for (const node of link.nodes) ids.add(node);
    if (pace()) yield;
  }
  for (const node of topology.nodes.values()) if (node.type === 'switch') ids.add(node.guid);
  const typeOf = (id: string): FabricNodeType | 'missing' => topology.nodes.get(id)?.type ?? 'missing';
  const neighbours = new Map<string, Set<string>>();
  for (const link of links.values()) {
    if (pace()) yield;
    const [a, b] = link.nodes;
    if (a === b) continue;
    neighbours.set(a, (neighbours.get(a) ?? new Set()).add(b));
    neighbours.set(b, (neighbours.get(b) ?? new Set()).add(a));
  }
  const switchLike = (id: string): boolean => {
    const type = typeOf(id);
    if (type === 'switch') return true;
    // A node of the plan the fabric lacks: a switch when it is planned to two switches or more.
    return type === 'missing' && [...(neighbours.get(id) ?? [])].filter((peer) => typeOf(peer) === 'switch').length >= 2;
  };
  const switches: string[] = [];
  for (const id of ids) {
    if (switchLike(id)) switches.push(id);
    if (pace()) yield;
  }
  const isHost = (id: string): boolean => !switchLike(id);
  // Leaves have hosts; each further tier is one switch hop further from the nearest leaf.
  const tier = new Map<string, number>();
  let frontier = switches.filter((id) => [...(neighbours.get(id) ?? [])].some(isHost));
  for (const id of frontier) tier.set(id, 1);
  for (let level = 2; frontier.length > 0; level++) {
    const next: string[] = [];
    for (const id of frontier) {
      if (pace()) yield;
      for (const peer of neighbours.get(id) ?? []) {
        if (!switchLike(peer) || tier.has(peer)) continue;
        tier.set(peer, level);
        next.push(peer);
      }
    }
    frontier = next;
  }
  const top = Math.max(1, ...tier.values());
  // Switches no leaf reaches (a fabric without hosts, an island): a row of their own on top.
  for (const id of switches) if (!tier.has(id)) tier.set(id, top + 1);
  const tiers = Math.max(1, ...tier.values());

  const name = (id: string): string =>
    id.startsWith('?') ? id.slice(1) : nodeLabel(topology, id, input.cabling?.conformance?.plan.nodes.get(id));
  const byName = (a: string, b: string): number => compareNames(name(a), name(b)) || (a < b ? -1 : 1);
  const rows = new Map<number, string[]>();
  for (const [id, level] of tier) rows.set(level, [...(rows.get(level) ?? []), id]);
  for (const row of rows.values()) {
    row.sort(byName);
    yield;
  }
  const widest = Math.max(1, ...[...rows.values()].map((row) => row.length));
  const pitch = Math.max(34, Math.min(130, Math.floor(1800 / widest)));
  const width = MARGIN * 2 + widest * pitch + 70;
  const boxWidth = pitch - 6;
  const rotated = boxWidth < 90;
  const switchHeight = rotated ? 92 : 30;

  const nodes = new Map<string, MapNode>();
  const tierNames: Layout['tierNames'] = [];
  const tierName = (level: number): string =>
    level === 1 ? 'leaves' : level === 2 ? 'spines' : level === 3 && tiers === 3 ? 'cores' : `tier ${level}`;
  for (let level = tiers; level >= 1; level--) {
    const row = rows.get(level) ?? [];
    const y = MARGIN + (tiers - level) * (switchHeight + TIER_GAP);
    if (row.length > 0) tierNames.push({ tier: level, y, name: tierName(level) });
    const rowPitch = (widest * pitch) / Math.max(1, row.length);
    for (const [i, id] of row.entries()) {
      const x = MARGIN + 70 + i * rowPitch + (rowPitch - boxWidth) / 2;
      nodes.set(id, {
        id,
        type: typeOf(id),
        name: name(id),
        label: shortLabel(name(id)),
        tier: level,
        x,
        y,
        w: boxWidth,
        h: switchHeight,
        rotated,
      });
      if (pace()) yield;
    }
  }

  // Hosts under the leaf of their first link (a cable there now before a planned one).
  const leafY = MARGIN + (tiers - 1) * (switchHeight + TIER_GAP);
  const hostTop = leafY + switchHeight + 24;
  const hostsOf = new Map<string, string[]>();
  const placed = new Set<string>();
  const sortedLinks = [...links.values()].sort((a, b) => Number(b.present) - Number(a.present));
  yield;
  for (const link of sortedLinks) {
    if (pace()) yield;
    for (const [host, other] of [
      [link.nodes[0], link.nodes[1]],
      [link.nodes[1], link.nodes[0]],
    ] as const) {
      if (placed.has(host) || !isHost(host) || tier.get(other) !== 1) continue;
      placed.add(host);
      hostsOf.set(other, [...(hostsOf.get(other) ?? []), host]);
    }
  }
  const problemHosts = new Set<string>();
  for (const link of links.values()) {
    if (worst(link) !== 'ok') for (const node of link.nodes) if (isHost(node)) problemHosts.add(node);
    if (pace()) yield;
  }
  const counts: Layout['counts'] = new Map();
  let bottom = hostTop;
  for (const [leaf, hosts] of hostsOf) {
    if (pace()) yield;
    const column = nodes.get(leaf)!;
    hosts.sort(byName);
    const collapsed = hosts.length > hostsPerLeaf;
    let y = hostTop;
    const shown = collapsed ? hosts.filter((host) => problemHosts.has(host)) : hosts;
    if (collapsed) {
      counts.set(leaf, { count: hosts.length - shown.length, box: { x: column.x, y, w: column.w, h: HOST_HEIGHT + 6 } });
      y += HOST_HEIGHT + 6 + HOST_GAP;
    }
    // In a narrow column a host's name reads upwards, as the switches'.
    const hostHeight = rotated ? 72 : HOST_HEIGHT;
    for (const host of shown) {
      nodes.set(host, {
        id: host,
        type: typeOf(host),
        name: name(host),
        label: name(host),
        tier: 0,
        x: column.x + 8,
        y,
        w: column.w - 8,
        h: hostHeight,
        rotated,
      });
      y += hostHeight + HOST_GAP;
    }
    bottom = Math.max(bottom, y);
  }
  return { nodes, width, height: bottom + MARGIN, tierNames, counts };
}
