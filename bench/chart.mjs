// The benchmark chart as SVG: throughput and p99 latency per host size, this exporter beside
// node_exporter, on log scales (they differ by orders of magnitude). bench/run.mjs turns it into a
// PNG with rsvg-convert.

const COLORS = { ours: '#2b6cb0', node: '#c05621' };

function panel({ x, title, unit, rows, value, width, height }) {
  // autocannon measures latency in whole milliseconds: 0 means "under 1 ms", drawn at 0.5.
  const shown = (v) => Math.max(v, 0.5);
  const values = rows.flatMap((row) => [shown(value(row.ours)), shown(value(row.node))]);
  const low = 10 ** Math.floor(Math.log10(Math.min(...values)));
  const high = 10 ** Math.ceil(Math.log10(Math.max(...values)));
  const top = 50;
  const bottom = height - 50;
  const left = x + 60;
  const right = x + width - 10;
  const scale = (v) => bottom - ((Math.log10(Math.max(v, low)) - Math.log10(low)) / (Math.log10(high) - Math.log10(low))) * (bottom - top);
  const parts = [`<text x="${(left + right) / 2}" y="25" text-anchor="middle" font-size="15" font-weight="bold">${title}</text>`];
  for (let tick = low; tick <= high; tick *= 10) {
    const y = scale(tick);
    parts.push(`<line x1="${left}" x2="${right}" y1="${y}" y2="${y}" stroke="#ddd"/>`);
    parts.push(`<text x="${left - 6}" y="${y + 4}" text-anchor="end" font-size="11">${tick >= 1 ? tick : tick.toPrecision(1)}</text>`);
  }
  parts.push(
    `<text x="${x + 14}" y="${(top + bottom) / 2}" font-size="11" transform="rotate(-90 ${x + 14} ${(top + bottom) / 2})" text-anchor="middle">${unit} (log scale)</text>`,
  );
  const group = (right - left) / rows.length;
  rows.forEach((row, i) => {
    const gx = left + i * group;
    const bar = group / 3;
    for (const [j, who] of [
      [0, 'ours'],
      [1, 'node'],
    ]) {
      const v = value(row[who]);
      const y = scale(shown(v));
      const label = v < 1 ? '&lt;1' : v >= 100 ? Math.round(v) : v.toPrecision(2);
      parts.push(`<rect x="${gx + bar * (0.5 + j)}" y="${y}" width="${bar * 0.9}" height="${bottom - y}" fill="${COLORS[who]}"/>`);
      parts.push(`<text x="${gx + bar * (0.95 + j)}" y="${y - 4}" text-anchor="middle" font-size="10">${label}</text>`);
    }
    parts.push(`<text x="${gx + group / 2}" y="${bottom + 18}" text-anchor="middle" font-size="12">${row.devices} dev</text>`);
  });
  parts.push(`<line x1="${left}" x2="${right}" y1="${bottom}" y2="${bottom}" stroke="#333"/>`);
  return parts.join('\n');
}

/** rows: [{ devices, ours: {throughput, p99}, node: {throughput, p99} }] */
export function chartSvg(rows, caption) {
  const width = 900;
  const height = 380;
  const half = width / 2;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height + 30}" font-family="sans-serif">
<rect width="100%" height="100%" fill="white"/>
${panel({ x: 0, title: 'Scrapes per second (higher is better)', unit: 'scrapes/s', rows, value: (r) => r.throughput, width: half, height })}
${panel({ x: half, title: 'Scrape latency p99 (lower is better)', unit: 'ms', rows, value: (r) => r.p99, width: half, height })}
<rect x="300" y="${height - 8}" width="12" height="12" fill="${COLORS.ours}"/><text x="318" y="${height + 2}" font-size="12">infiniband-exporter</text>
<rect x="460" y="${height - 8}" width="12" height="12" fill="${COLORS.node}"/><text x="478" y="${height + 2}" font-size="12">node_exporter infiniband collector</text>
<text x="${width / 2}" y="${height + 24}" text-anchor="middle" font-size="11" fill="#555">${caption}</text>
</svg>
`;
}
