// The README's metric table, from the metric catalog (src/metrics/catalog.ts).
import { withMetricTable } from '../../src/metrics/metric-table.js';
import { committed, type GeneratedFile } from './generated-file.js';

export function readmeFiles(): GeneratedFile[] {
  return [{ path: 'README.md', content: withMetricTable(committed('README.md')) }];
}
