// GET /fabric: the fabric as a picture, for the person on call who wants to *see* where the trouble
// is. One HTML page with the SVG drawn here, on the server: no script is needed to read it.
//   - switches by tier, derived from the cabling: leaves are the switches with hosts, the tier
//     above them the switches one hop from a leaf (spines), then two hops (cores), …;
//   - hosts under their leaf, each adapter a box; above `hostsPerLeaf` hosts a leaf shows a count
//     and only its hosts with a problem one by one;
//   - every link coloured by its worst state: down, stuck INIT, miswired (not as the plan or the
//     rails say), degraded, BER over threshold, rising errors (the last two computed by the
//     caller); a planned cable that is not there is drawn dashed between the ports it should join;
//   - beside the picture, the problem links in the words of the findings (`check`'s), each a link
//     to its line in the picture (`#l-…`, highlighted when targeted), and a legend.
// Healthy links are thin lines without ids; problem links and nodes carry ids and classes
// (`link down`, `node switch problem`) for people, tests and user stylesheets. At 1 918 nodes
// (18 spines, 100 leaves, 1 800 hosts) the page is a few hundred kilobytes.
import { runbookUrl, severityRank, type Finding, type Severity } from '../../model/finding.js';
import { atOnce, pacer, type Work } from '../../event-loop/time-slices.js';
import { fabricPortKey, type FabricNodeType, type FabricTopology } from '../../model/fabric.js';
import { linkCountSteps } from '../../model/cabling.js';
import { escapeHtml } from './landing-page.js';
import {
  LINK_STATES,
  STATE_WORDS,
  collectLinks,
  idPart,
  layout,
  MARGIN,
  nodeOfKey,
  worst,
  type FabricMapInput,
  type MapLink,
  type MapNode,
} from './fabric-map-layout.js';

const STYLE = `
body{font-family:system-ui,sans-serif;margin:0;padding:1em;color:#1b1b1b;line-height:1.4}
h1{font-size:1.4em;margin:0 0 .2em}
.summary{margin:.2em 0 .8em;color:#333}
.layout{display:grid;grid-template-columns:minmax(0,1fr) minmax(16em,24em);gap:1em;align-items:start}
@media (max-width:60em){.layout{grid-template-columns:1fr}}
.picture{overflow:auto;border:1px solid #ddd;max-height:88vh;background:#fff}
.picture svg{display:block;height:auto}
aside{max-height:88vh;overflow:auto}
aside h2{font-size:1.1em;margin:.2em 0 .4em}
ol.problems{list-style:none;padding:0;margin:0}
ol.problems li{border-left:.35em solid #999;background:#fafafa;padding:.3em .6em;margin:.35em 0;font-size:.9em}
ol.problems li.critical{border-color:#d55e00;background:#fdecea}
ol.problems li.warning{border-color:#e69f00;background:#fff4e0}
ol.problems li.info{border-color:#0072b2}
ol.problems .remedy{color:#333;margin-top:.1em}
ul.legend{list-style:none;padding:0;font-size:.85em}
ul.legend li{display:flex;gap:.5em;align-items:center}
.note{color:#555;font-size:.85em}
svg text{font-size:11px;fill:#1b1b1b}
svg .tier{font-size:12px;fill:#666;font-weight:bold}
svg .node rect{fill:#eef3f8;stroke:#5b7083;stroke-width:1}
svg .node.ca rect{fill:#f4f4f4;stroke:#999}
svg .node.missing rect{fill:#fff;stroke:#d55e00;stroke-dasharray:4 3}
svg .node.problem rect{stroke:#e69f00;stroke-width:2.5;stroke-dasharray:5 2}
svg .node.critical rect{stroke:#d55e00;stroke-width:2.5;stroke-dasharray:none}
svg .count rect{fill:#f4f4f4;stroke:#999}
svg .bus{stroke:#bbb;stroke-width:1}
.link{fill:none;stroke-linecap:round}
.link.ok{stroke:#9aa5b1;stroke-width:.7;opacity:.55}
/* Square ends on problem links: round caps would fill the gaps of their dashes. */
.link.problem{stroke-linecap:butt}
.link.down{stroke:#d55e00;stroke-width:3.5}
.link.init{stroke:#cc79a7;stroke-width:3.5;stroke-dasharray:2 4}
.link.miswired{stroke:#0072b2;stroke-width:3.5;stroke-dasharray:12 3 3 3}
.link.degraded{stroke:#e69f00;stroke-width:3.5;stroke-dasharray:6 3}
.link.bad{stroke:#009e73;stroke-width:5.5}
.link.ber{stroke:#000;stroke-width:3.5;stroke-dasharray:3 3}
.link.errors{stroke:#56b4e9;stroke-width:3;stroke-dasharray:9 2 2 2 2 2}
.link.absent{stroke-dasharray:7 5}
.link:target{stroke-width:8;opacity:1}
.link.job{stroke:#1565c0;stroke-width:3;opacity:.85}
`;

/** The least a picture is scaled down to fit the window: 11 px names read at 8 px. */
const SMALLEST_SCALE = 0.7;
/** Beyond this width the picture is not scaled at all: a fabric of thousands of nodes is scrolled. */
const SCALED_UP_TO = 2400;

function rect(x: number, y: number, w: number, h: number): string {
  return `<rect x="${x.toFixed(1)}" y="${y.toFixed(1)}" width="${w.toFixed(1)}" height="${h.toFixed(1)}" rx="3"/>`;
}

/** As much of `text` as fits in `width` pixels at the map's font (about 6.2 px a character). */
function fit(text: string, width: number): string {
  const chars = Math.max(1, Math.floor(width / 6.2));
  return text.length <= chars ? text : `${text.slice(0, Math.max(1, chars - 1))}…`;
}

function nodeElement(node: MapNode, severity: Severity | undefined): string {
  const classes = ['node', node.type === 'missing' ? 'missing' : node.type, ...(severity ? ['problem', severity] : [])].join(' ');
  const title = `<title>${escapeHtml(node.type === 'missing' ? `${node.name}: in the plan, not in the fabric` : `${node.name} (${node.id})`)}</title>`;
  const cx = node.x + node.w / 2;
  const label = node.rotated
    ? `<text transform="translate(${(cx + 4).toFixed(1)},${(node.y + node.h - 5).toFixed(1)}) rotate(-90)">${escapeHtml(fit(node.label, node.h - 8))}</text>`
    : `<text x="${(node.x + 4).toFixed(1)}" y="${(node.y + node.h / 2 + 4).toFixed(1)}">${escapeHtml(fit(node.label, node.w - 8))}</text>`;
  return `<g class="${classes}" id="n-${idPart(node.id)}">${title}${rect(node.x, node.y, node.w, node.h)}${label}</g>`;
}

/** The end points of a link: switch to switch from box edge to box edge, leaf to host along the host's left side. */
function linkPath(a: MapNode, b: MapNode, offset: number): string {
  const [upper, lower] = a.tier >= b.tier ? [a, b] : [b, a];
  if (lower.tier === 0 && upper.tier === 1 && Math.abs(upper.x + 8 - lower.x) < 1) {
    // A host in its leaf's column: from the leaf's bottom down the column, into the host box.
    const x = upper.x + 3;
    return `M${x.toFixed(1)},${(upper.y + upper.h).toFixed(1)}V${(lower.y + lower.h / 2).toFixed(1)}H${lower.x.toFixed(1)}`;
  }
  const x1 = upper.x + upper.w / 2 + offset;
  const x2 = lower.x + lower.w / 2 + offset;
  if (upper.tier === lower.tier && upper.tier > 0) {
    // Two switches of one tier: an arc above them.
    const lift = Math.min(60, 12 + Math.abs(x2 - x1) / 6);
    return `M${x1.toFixed(1)},${upper.y.toFixed(1)}C${x1.toFixed(1)},${(upper.y - lift).toFixed(1)} ${x2.toFixed(1)},${(lower.y - lift).toFixed(1)} ${x2.toFixed(1)},${lower.y.toFixed(1)}`;
  }
  return `M${x1.toFixed(1)},${(upper.y + upper.h).toFixed(1)}L${x2.toFixed(1)},${lower.y.toFixed(1)}`;
}

/** The port of a finding's subject (and its peer), to find its link. */
function findingPorts(finding: Finding): string[] {
  const { subject } = finding;
  if (subject.kind !== 'fabric-port') return [];
  return [
    fabricPortKey(subject.node.guid, subject.port),
    ...(subject.peer ? [fabricPortKey(subject.peer.node.guid, subject.peer.port)] : []),
  ];
}

/** The whole page. */
export function renderFabricMap(input: FabricMapInput): string {
  return atOnce(renderFabricMapSteps(input));
}

/** The same, as work that may pause: at 120 000 ports the picture is megabytes. */
export function* renderFabricMapSteps(input: FabricMapInput): Work<string> {
  const pace = pacer();
  const links = yield* collectLinks(input);
  const linkCount = yield* linkCountSteps(input.topology, input.readings);
  const map = yield* layout(input, links);
  const { nodes } = map;

  // Which link each port's findings point at, and the worst finding of each node.
  const linkOfPort = new Map<string, MapLink>();
  for (const link of links.values()) {
    if (pace()) yield;
    if (worst(link) === 'ok') continue;
    for (const end of link.ends) if (!linkOfPort.has(end) || !linkOfPort.get(end)!.present) linkOfPort.set(end, link);
  }
  const nodeSeverity = new Map<string, Severity>();
  const titles = new Map<MapLink, string[]>();
  for (const finding of input.findings) {
    if (pace()) yield;
    const ports = findingPorts(finding);
    if (finding.subject.kind === 'fabric-port') {
      const id = finding.subject.node.guid;
      const known = nodeSeverity.get(id);
      if (known === undefined || severityRank(finding.severity) < severityRank(known)) nodeSeverity.set(id, finding.severity);
    }
    const link = ports.map((port) => linkOfPort.get(port)).find(Boolean);
    if (link) titles.set(link, [...(titles.get(link) ?? []), finding.summary]);
  }

  // Links: healthy ones first, thin and without ids; problem ones on top, worst last.
  const parallel = new Map<string, number>();
  const drawn = [...links.values()].filter((link) => nodes.has(link.nodes[0]) && nodes.has(link.nodes[1]));
  yield;
  drawn.sort((a, b) => LINK_STATES.indexOf(worst(b)) - LINK_STATES.indexOf(worst(a)));
  yield;
  const healthy: string[] = [];
  const problems: string[] = [];
  const footprint: string[] = [];
  for (const link of drawn) {
    if (pace()) yield;
    const pair = [...link.nodes].sort().join(' ');
    const index = parallel.get(pair) ?? 0;
    parallel.set(pair, index + 1);
    const offset = ((index % 5) - 2) * 2.5;
    const path = linkPath(nodes.get(link.nodes[0])!, nodes.get(link.nodes[1])!, offset);
    const state = worst(link);
    if (input.job?.links.has([...link.ends].sort().join(' '))) footprint.push(`<path class="link job" d="${path}"/>`);
    if (state === 'ok') {
      healthy.push(`<path class="link ok" d="${path}"/>`);
      continue;
    }
    const classes = ['link', 'problem', state, ...(link.present ? [] : ['absent'])].join(' ');
    const what = `${link.ends
      .map((end) => {
        const node = nodes.get(nodeOfKey(end));
        return `${node?.name ?? nodeOfKey(end)} port ${end.slice(end.lastIndexOf('/') + 1)}`;
      })
      .join(' – ')}: ${[...link.states].filter((s) => s !== 'ok').join(', ')}${link.present ? '' : ' (no cable there now)'}`;
    const title = [what, ...(titles.get(link) ?? [])].join('\n');
    problems.push(`<path class="${classes}" id="${link.id}" d="${path}"><title>${escapeHtml(title)}</title></path>`);
  }

  const tiers = map.tierNames.map(({ y, name }) => `<text class="tier" x="${MARGIN}" y="${(y + 16).toFixed(1)}">${name}</text>`);
  const buses: string[] = [];
  const counts: string[] = [];
  for (const [leaf, { count, box }] of map.counts) {
    const title = `${count} more host${count === 1 ? '' : 's'} under ${nodes.get(leaf)!.name}, every link as expected`;
    const label = box.w >= 60 ? `${count} hosts` : String(count);
    counts.push(
      `<g class="count"><title>${escapeHtml(title)}</title>${rect(box.x, box.y, box.w, box.h)}<text x="${(box.x + 4).toFixed(1)}" y="${(box.y + box.h / 2 + 4).toFixed(1)}">${escapeHtml(fit(label, box.w - 8))}</text></g>`,
    );
    const leafNode = nodes.get(leaf)!;
    buses.push(
      `<path class="bus" d="M${(leafNode.x + box.w / 2).toFixed(1)},${(leafNode.y + leafNode.h).toFixed(1)}V${box.y.toFixed(1)}"/>`,
    );
  }
  const boxes: string[] = [];
  for (const node of nodes.values()) {
    boxes.push(nodeElement(node, nodeSeverity.get(node.id)));
    if (pace()) yield;
  }
  // Scaled to the window, down to SMALLEST_SCALE of its size (below that its names no longer read,
  // and it scrolls); a picture wider than SCALED_UP_TO (thousands of nodes) keeps its own size.
  const width = Math.ceil(map.width);
  const minWidth = width > SCALED_UP_TO ? width : Math.ceil(width * SMALLEST_SCALE);
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" style="width:100%;max-width:${width}px;min-width:${minWidth}px" width="${Math.ceil(map.width)}" height="${Math.ceil(map.height)}" viewBox="0 0 ${Math.ceil(map.width)} ${Math.ceil(map.height)}" role="img" aria-label="InfiniBand fabric map">
<g class="tiers">${tiers.join('')}</g>
<g class="links">
${healthy.join('\n')}
</g>
<g class="footprint">${footprint.join('\n')}</g>
<g class="buses">${buses.join('')}</g>
<g class="nodes">
${boxes.join('\n')}
${counts.join('\n')}
</g>
<g class="problems">
${problems.join('\n')}
</g>
</svg>`;

  // The list beside it: every finding in check's words, linked to its line.
  const limit = input.listLimit ?? 200;
  const shown = input.findings.slice(0, limit);
  const items = shown.map((finding, i) => {
    const link = findingPorts(finding)
      .map((port) => linkOfPort.get(port))
      .find(Boolean);
    const summary = escapeHtml(finding.summary);
    return `<li class="${finding.severity}" id="f-${i + 1}"><div class="what">${link ? `<a href="#${link.id}">${summary}</a>` : summary}</div><div class="remedy">→ ${escapeHtml(finding.remedy)} <a href="${escapeHtml(runbookUrl(finding, input.runbookBase))}">runbook</a></div></li>`;
  });
  const more =
    input.findings.length > shown.length
      ? `<p class="note">… and ${input.findings.length - shown.length} more: <code>infiniband-exporter check --collector.fabric</code> lists them all.</p>`
      : '';
  const problemCount = problems.length;
  const legend = LINK_STATES.map(
    (state) =>
      `<li><svg width="34" height="10" aria-hidden="true"><path class="link ${state}${state === 'down' ? ' absent' : ''}" d="M2,5H32"/></svg>${escapeHtml(STATE_WORDS[state])}</li>`,
  );
  const counted = countTypes(input.topology);
  const when =
    input.takenAt === undefined
      ? ''
      : `, as of <time datetime="${new Date(input.takenAt).toISOString()}">${new Date(input.takenAt).toISOString()}</time>`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>InfiniBand fabric map</title>
<style>${STYLE}</style>
</head>
<body>
<h1>InfiniBand fabric map</h1>
<p class="summary">${counted.switch} switches in ${map.tierNames.length} tier${map.tierNames.length === 1 ? '' : 's'}, ${counted.ca} host adapters, ${linkCount} links, <strong>${problemCount} problem link${problemCount === 1 ? '' : 's'}</strong>${when}. <a href="/">Findings and ports</a></p>
${input.job ? `<p class="summary">Job ${escapeHtml(input.job.title)}: its ${input.job.links.size} links (its hosts' adapter links and the inter-switch links between its leaves) drawn in blue, those of hosts beyond the ones shown under a leaf left out. <a href="/fabric">The whole fabric</a></p>\n` : ''}<div class="layout">
<div class="picture">
${svg}
</div>
<aside>
<h2>Problems (${input.findings.length})</h2>
${input.findings.length === 0 ? '<p>Nothing to report: every link is as expected.</p>' : `<ol class="problems">\n${items.join('\n')}\n</ol>${more}`}
<h2>Legend</h2>
<ul class="legend">
${legend.join('\n')}
</ul>
<p class="note">Each link takes its worst state. Leaves are the switches with hosts; hosts beyond ${input.hostsPerLeaf ?? 8} under a leaf are counted, and only those with a problem drawn. Hover a box or a line for its name.</p>
</aside>
</div>
</body>
</html>
`;
}

function countTypes(topology: FabricTopology): Record<FabricNodeType, number> {
  const counts: Record<FabricNodeType, number> = { switch: 0, ca: 0, router: 0 };
  for (const node of topology.nodes.values()) counts[node.type] += 1;
  return counts;
}
