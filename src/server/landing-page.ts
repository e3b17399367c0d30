// The landing page `/`: what is wrong on this host and what to do (the findings of the current
// snapshot, worst first), a table of every port, then the links. Plain server-rendered HTML that
// needs no JavaScript; every string from the host or the fabric is escaped.
import { countBySeverity, runbookUrl, type Finding } from '../findings/finding.js';
import { findingsOf } from '../findings/findings.js';
import { portOverview, type PortOverview } from '../findings/port-overview.js';
import type { Snapshot } from '../snapshot/types.js';

export interface LandingPageOptions {
  telemetryPath: string;
  version: string;
  /** The current snapshot; undefined before the first collection finished. */
  snapshot: Snapshot | undefined;
  /** Unix time (ms) of the snapshot, for "as of". */
  takenAt: number | undefined;
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
.note{color:#555;font-size:.85em}
`;

function findingItem(finding: Finding): string {
  return `<li class="${finding.severity}"><span class="severity">${finding.severity}</span><div><div class="what">${escapeHtml(finding.summary)}</div>
<div class="remedy">→ ${escapeHtml(finding.remedy)} <a href="${escapeHtml(runbookUrl(finding))}">runbook</a></div></div></li>`;
}

function findingsSection(snapshot: Snapshot | undefined, takenAt: number | undefined): { html: string; ports: PortOverview[] } {
  if (!snapshot) return { html: '<p>The first collection has not finished yet: reload in a few seconds.</p>', ports: [] };
  const findings = findingsOf(snapshot);
  const counts = countBySeverity(findings);
  const when = takenAt === undefined ? '' : ` as of <time datetime="${new Date(takenAt).toISOString()}">${new Date(takenAt).toISOString()}</time>`;
  const summary = `<p class="summary">${counts.critical} critical, ${counts.warning} warning, ${counts.info} info${when}</p>`;
  const list = findings.length === 0
    ? '<p>Nothing to report: every port, IPoIB interface and collector looks right.</p>'
    : `<ol class="findings">\n${findings.map(findingItem).join('\n')}\n</ol>`;
  return { html: `${summary}\n${list}`, ports: portOverview(snapshot, findings) };
}

function cell(value: string | number | undefined): string {
  return `<td>${value === undefined || value === '' ? '—' : escapeHtml(String(value))}</td>`;
}

function portRow(row: PortOverview): string {
  const device = `<td><strong>${escapeHtml(row.device)}</strong>${row.nodeDescription ? `<br><span class="note">${escapeHtml(row.nodeDescription)}</span>` : ''}</td>`;
  const rate = row.width !== undefined || row.speed !== undefined ? `${row.width ?? '?'}X ${row.speed ?? '?'}` : undefined;
  const expected = row.expected ? `${row.expected.width ?? '?'}X ${row.expected.speed ?? '?'} (${row.expected.source === 'config' ? 'config' : 'both ends enabled'})` : undefined;
  const peer = row.peer ? `${row.peer.description ?? row.peer.guid} port ${row.peer.port}` : undefined;
  return `<tr class="${row.worst ?? 'ok'}">${device}${cell(row.port)}${cell(row.linkLayer)}${cell(row.state)}${cell(row.physicalState)}${cell(rate)}${cell(expected)}${cell(row.ipoib.join(', '))}${cell(peer)}</tr>`;
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

export function landingPage(options: LandingPageOptions): string {
  const metrics = escapeHtml(options.telemetryPath);
  const { html, ports } = findingsSection(options.snapshot, options.takenAt);
  return `<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>InfiniBand Exporter</title>
<style>${STYLE}</style></head>
<body>
<h1>InfiniBand Exporter</h1>
<p>Prometheus exporter for InfiniBand hosts: port and link health, subnet manager, PMA counters, IPoIB settings. Version ${escapeHtml(options.version)}.</p>
<section id="findings">
<h2>What is wrong and what to do</h2>
${html}
<p class="note">The same findings, for a script or a node health check: <code>infiniband-exporter check</code>.</p>
</section>
<section id="ports">
<h2>Ports</h2>
${portTable(ports)}
</section>
<h2>Endpoints</h2>
<ul>
<li><a href="${metrics}">${metrics}</a> — metrics</li>
<li><a href="/healthz">/healthz</a> — the process is alive</li>
<li><a href="/ready">/ready</a> — the last collection is recent</li>
</ul>
</body>
</html>
`;
}
