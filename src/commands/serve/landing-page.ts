// The landing page `/`: what is wrong on this host and what to do (the findings of the current
// snapshot, worst first), a table of every port, in fabric mode a summary of the fabric, then the
// links. Plain server-rendered HTML that needs no JavaScript; every string from the host or the
// fabric is escaped. Nothing grows with the fabric unbounded: long lists are cut and say so.
import { badLinksOf } from '../../collectors/fabric/verdict/index.js';
import { atOnce, type Work } from '../../event-loop/time-slices.js';
import { fabricOf, fabricOverviewSteps, type FabricOverview, type UnhealthyFabricPort } from '../../findings/fabric-overview.js';
import { countBySeverity, runbookUrl, type FabricPortName, type Finding } from '../../model/finding.js';
import { LANE_RATES } from '../../model/link-rate.js';
import { findingsSteps } from '../../findings/findings.js';
import { portOverview, type PortOverview } from '../../findings/port-overview.js';
import type { Snapshot } from '../../model/snapshot.js';
import type { Collector } from '../../collection/collector.js';

export interface LandingPageOptions {
  telemetryPath: string;
  version: string;
  /** The current snapshot; undefined before the first collection finished. */
  snapshot: Snapshot | undefined;
  /** The collectors that judge it (the registry's by default). */
  collectors?: readonly Collector[];
  /** Unix time (ms) of the snapshot, for "as of". */
  takenAt: number | undefined;
  /** The host's name (os.hostname()), in the title and the heading. */
  hostname?: string;
  /** What was not checked and why, as `check` prints it (findings/not-checked.ts). */
  notChecked?: readonly string[];
  /** Seconds between collections: the page reloads itself at this interval (no script needed). */
  refreshSeconds?: number;
  /** Where the runbooks are: the exporter's own /runbooks, or --web.runbook-url. */
  runbookBase?: string;
}

/** Where the snapshot's age goes: computed at each request, the rest of the page once per snapshot. */
export const AGE_MARK = '<!--age-->';

/** "collected 12 s ago", for the snapshot taken at `takenAt` (ms), at `now` (ms). */
export function ageText(takenAt: number, now: number): string {
  const seconds = Math.max(0, Math.round((now - takenAt) / 1000));
  if (seconds < 120) return `collected ${seconds} s ago`;
  if (seconds < 7200) return `collected ${Math.round(seconds / 60)} min ago`;
  return `collected ${Math.round(seconds / 3600)} h ago`;
}

/** The page of `landingPageSteps` with its age filled in for this request. */
export function withAge(page: string, takenAt: number | undefined, now: number): string {
  return page.replace(AGE_MARK, takenAt === undefined ? '' : ageText(takenAt, now));
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const STYLE = `
body{font-family:system-ui,sans-serif;max-width:72em;margin:2em auto;padding:0 1em;line-height:1.45;color:#1b1b1b}
code{background:#eee;padding:0 .2em}
h2{margin-top:1.6em;border-bottom:1px solid #ddd}
.summary{font-weight:bold}
ol.findings{list-style:none;padding:0}
ol.findings li{display:grid;grid-template-columns:6.5em 1fr;border-left:.35em solid #999;padding:.3em .7em;margin:.4em 0;background:#fafafa}
ol.findings li.critical{border-color:#c62828;background:#fdecea}
ol.findings li.warning{border-color:#ef8f00;background:#fff4e0}
ol.findings li.info{border-color:#1e88e5}
.severity{font-weight:bold;text-transform:uppercase;font-size:.85em;padding-top:.1em}
li.critical .severity{color:#b71c1c}
li.warning .severity{color:#a35f00}
li.info .severity{color:#1565c0}
.remedy{margin-top:.15em;font-size:.95em;color:#333}
table{border-collapse:collapse;width:100%;font-size:.92em}
th,td{border:1px solid #ddd;padding:.25em .5em;text-align:left;vertical-align:top}
th{background:#f0f0f0}
tr.critical td:first-child{border-left:.35em solid #c62828}
tr.warning td:first-child{border-left:.35em solid #ef8f00}
td.problem{font-weight:bold;background:#fff4e0}
.marker{font-weight:bold}
.note{color:#555;font-size:.85em}
dl.fabric{display:grid;grid-template-columns:max-content 1fr;gap:.1em 1em}
dl.fabric dt{font-weight:bold}
dl.fabric dd{margin:0}
`;

/** At most this many findings and unhealthy fabric ports are listed: a fabric without a subnet manager has thousands. */
export const LANDING_PAGE_LIST_LIMIT = 100;

function more(shown: number, total: number, what: string): string {
  return total > shown
    ? `\n<p class="note">… and ${total - shown} more ${what}: <code>infiniband-exporter check --collector.fabric</code> lists them all.</p>`
    : '';
}

function findingItem(finding: Finding, runbookBase: string | undefined): string {
  return `<li class="${finding.severity}"><span class="severity">${finding.severity}</span><div><div class="what">${escapeHtml(finding.summary)}</div>
<div class="remedy">→ ${escapeHtml(finding.remedy)} <a href="${escapeHtml(runbookUrl(finding, runbookBase))}">runbook</a></div></div></li>`;
}

interface FindingsSection {
  html: string;
  ports: PortOverview[];
  fabric: FabricOverview | undefined;
}

function* findingsSection(
  snapshot: Snapshot | undefined,
  takenAt: number | undefined,
  collectors: readonly Collector[] | undefined,
  runbookBase: string | undefined,
): Work<FindingsSection> {
  if (!snapshot)
    return { html: '<p>The first collection has not finished yet: reload in a few seconds.</p>', ports: [], fabric: undefined };
  const findings = yield* findingsSteps(snapshot, collectors);
  const fabric = fabricOf(snapshot);
  const counts = countBySeverity(findings);
  const when =
    takenAt === undefined
      ? ''
      : `, <time datetime="${new Date(takenAt).toISOString()}" title="${new Date(takenAt).toISOString()}">${AGE_MARK}</time>`;
  const summary = `<p class="summary">${counts.critical} critical, ${counts.warning} warning, ${counts.info} info${when}</p>`;
  const shown = findings.slice(0, LANDING_PAGE_LIST_LIMIT);
  const list =
    findings.length === 0
      ? '<p>Nothing to report: every port, IPoIB interface and collector looks right.</p>'
      : `<ol class="findings">\n${shown.map((finding) => findingItem(finding, runbookBase)).join('\n')}\n</ol>${more(shown.length, findings.length, 'findings')}`;
  return {
    html: `${summary}\n${list}`,
    ports: portOverview(snapshot, findings),
    fabric: fabric && (yield* fabricOverviewSteps(fabric, findings)),
  };
}

function cell(value: string | number | undefined): string {
  return `<td>${value === undefined || value === '' ? '—' : escapeHtml(String(value))}</td>`;
}

/** A cell whose value is a problem (INIT, Polling, 1X, a speed below the expected one): marked in words and by a class, not by colour alone. */
function problemCell(value: string | undefined, problem: boolean): string {
  if (!problem || value === undefined) return cell(value);
  return `<td class="problem"><span class="marker" title="problem">⚠ </span>${escapeHtml(value)}</td>`;
}

function nominalGbps(speed: string | undefined): number | undefined {
  return speed === undefined ? undefined : (LANE_RATES as Readonly<Record<string, { nominalGbps: number }>>)[speed]?.nominalGbps;
}

function portRow(row: PortOverview): string {
  const device = `<td><strong>${escapeHtml(row.device)}</strong>${row.nodeDescription ? `<br><span class="note">${escapeHtml(row.nodeDescription)}</span>` : ''}</td>`;
  const rate = row.width !== undefined || row.speed !== undefined ? `${row.width ?? '?'}X ${row.speed ?? '?'}` : undefined;
  const expected = row.expected
    ? `${row.expected.width ?? '?'}X ${row.expected.speed ?? '?'} (${row.expected.source === 'config' ? 'config' : 'both ends enabled'})`
    : undefined;
  const peer = row.peer ? `${row.peer.description ?? row.peer.guid} port ${row.peer.port}` : undefined;
  const stateProblem = row.state !== undefined && row.state.toUpperCase() !== 'ACTIVE';
  const physicalProblem = row.physicalState !== undefined && row.physicalState !== 'LinkUp';
  const narrow = row.width !== undefined && (row.width === 1 || (row.expected?.width !== undefined && row.width < row.expected.width));
  const actual = nominalGbps(row.speed);
  const wanted = nominalGbps(row.expected?.speed);
  const slow = actual !== undefined && wanted !== undefined && actual < wanted;
  return `<tr class="${row.worst ?? 'ok'}">${device}${cell(row.port)}${cell(row.linkLayer)}${problemCell(row.state, stateProblem)}${problemCell(row.physicalState, physicalProblem)}${problemCell(rate, narrow || slow)}${cell(expected)}${cell(row.ipoib.join(', '))}${cell(peer)}</tr>`;
}

function portTable(ports: readonly PortOverview[]): string {
  if (ports.length === 0) return '<p>No InfiniBand port.</p>';
  return `<table>
<thead><tr><th>device</th><th>port</th><th>link layer</th><th>state</th><th>physical state</th><th>width × speed</th><th>expected</th><th>IPoIB</th><th>link peer</th></tr></thead>
<tbody>
${ports.map(portRow).join('\n')}
</tbody>
</table>`;
}

function endText(end: FabricPortName): string {
  return `${end.node.name} port ${end.port}`;
}

function unhealthyRow(row: UnhealthyFabricPort): string {
  const rate = row.width !== undefined || row.speed !== undefined ? `${row.width ?? '?'}X ${row.speed ?? '?'}` : undefined;
  const expected = row.expected
    ? `${row.expected.width ?? '?'}X ${row.expected.speed ?? '?'} (${row.expected.source === 'config' ? 'config' : 'both ends enable'})`
    : undefined;
  const state =
    row.state === undefined && row.physicalState === undefined ? undefined : `${row.state ?? '?'} / ${row.physicalState ?? '?'}`;
  return `<tr class="${row.severity}">${cell(row.severity)}${cell(endText(row.end))}${cell(row.peer && endText(row.peer))}${cell(state)}${cell(rate)}${cell(expected)}${cell(row.condition)}</tr>`;
}

function fabricSection(fabric: FabricOverview): string {
  const nodes = `${fabric.nodes.switch} switches, ${fabric.nodes.ca} CAs${fabric.nodes.router > 0 ? `, ${fabric.nodes.router} routers` : ''}`;
  const discovered =
    fabric.discoveredAt === undefined ? 'no discovery has succeeded yet' : new Date(fabric.discoveredAt * 1000).toISOString();
  const shard =
    fabric.shard.count > 1
      ? `<dt>shard</dt><dd>${fabric.shard.index} of ${fabric.shard.count}: ports of this shard's switches only</dd>`
      : '';
  const sms =
    fabric.subnetManagers.length === 0
      ? '<p>No subnet manager record (the subnet administrator did not answer).</p>'
      : `<table>
<thead><tr><th>subnet manager GUID</th><th>on</th><th>LID</th><th>state</th><th>priority</th></tr></thead>
<tbody>
${fabric.subnetManagers.map((sm) => `<tr>${cell(sm.guid)}${cell(sm.host)}${cell(sm.lid)}${cell(sm.state)}${cell(sm.priority)}</tr>`).join('\n')}
</tbody>
</table>`;
  const shown = fabric.unhealthy.slice(0, LANDING_PAGE_LIST_LIMIT);
  const unhealthy =
    fabric.unhealthy.length === 0
      ? '<p>No unhealthy link: no port down that was in use, stuck INIT or degraded.</p>'
      : `<table>
<thead><tr><th>severity</th><th>port</th><th>other end</th><th>state / physical</th><th>width × speed</th><th>expected</th><th>finding</th></tr></thead>
<tbody>
${shown.map(unhealthyRow).join('\n')}
</tbody>
</table>${more(shown.length, fabric.unhealthy.length, 'unhealthy ports')}`;
  return `<section id="fabric">
<h2>Fabric</h2>
<dl class="fabric"><dt>nodes</dt><dd>${nodes}</dd><dt>links</dt><dd>${fabric.links} (discovered ${escapeHtml(discovered)})</dd><dt>ports read</dt><dd>${fabric.portsRead}, ${fabric.portsUp} with a link</dd>${shard}</dl>
<h3>Subnet managers</h3>
${sms}
<h3>Unhealthy links</h3>
${unhealthy}
</section>`;
}

export function landingPage(options: LandingPageOptions): string {
  return atOnce(landingPageSteps(options));
}

/** The same, as work that may pause: in fabric mode the findings and the overview walk every port. */
export function* landingPageSteps(options: LandingPageOptions): Work<string> {
  const metrics = escapeHtml(options.telemetryPath);
  const { html, ports, fabric } = yield* findingsSection(options.snapshot, options.takenAt, options.collectors, options.runbookBase);
  const host = options.hostname === undefined ? '' : `${escapeHtml(options.hostname)} — `;
  const refresh =
    options.refreshSeconds === undefined ? '' : `<meta http-equiv="refresh" content="${Math.max(1, Math.round(options.refreshSeconds))}">`;
  const notChecked =
    options.notChecked && options.notChecked.length > 0
      ? `<section id="not-checked">
<h2>Not checked</h2>
<ul>
${options.notChecked.map((item) => `<li>${escapeHtml(item)}</li>`).join('\n')}
</ul>
</section>
`
      : '';
  const badLinks = options.snapshot && badLinksOf(options.snapshot);
  return `<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">${refresh}<title>${host}InfiniBand Exporter</title>
<style>${STYLE}</style></head>
<body>
<h1>${host}InfiniBand Exporter</h1>
<p>Prometheus exporter for InfiniBand hosts: port and link health, subnet manager, PMA counters, IPoIB settings. Version ${escapeHtml(options.version)}.</p>
<section id="findings">
<h2>What is wrong and what to do</h2>
${html}
<p class="note">The same findings, for a script or a node health check: <code>infiniband-exporter check${fabric ? ' --collector.fabric' : ''}</code>.</p>
</section>
${notChecked}<section id="ports">
<h2>Ports</h2>
${portTable(ports)}
</section>
${fabric ? `${fabricSection(fabric)}\n` : ''}<h2>Endpoints</h2>
<ul>
<li><a href="${metrics}">${metrics}</a> — metrics</li>
${fabric ? '<li><a href="/fabric">/fabric</a> — the fabric as a picture: switches by tier, every link coloured by its worst state</li>\n' : ''}${badLinks ? `<li><a href="/fabric/bad-links">/fabric/bad-links</a> — <strong>${badLinks.links.length}</strong> link${badLinks.links.length === 1 ? '' : 's'} to drain and replace${badLinks.overCap > 0 ? ` (and ${badLinks.overCap} more over the cap)` : ''}, as JSON (<a href="/fabric/bad-links?format=csv">CSV</a>)</li>\n` : ''}<li><a href="/healthz">/healthz</a> — the process is alive</li>
<li><a href="/ready">/ready</a> — the last collection is recent</li>
<li><a href="${escapeHtml(options.runbookBase ?? '/runbooks')}">runbooks</a> — what each alert and finding means and what to do</li>
</ul>
</body>
</html>
`;
}
