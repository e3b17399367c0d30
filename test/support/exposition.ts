// Reading the exporter's /metrics in tests, as a Prometheus would see it.
import type { Exporter } from '../../src/commands/serve/exporter.js';

export async function scrape(exporter: Exporter): Promise<string> {
  return (await exporter.app.inject({ method: 'GET', url: '/metrics' })).body;
}

/** The value of one exact series (`name{labels}`), or undefined when it is absent. */
export function sampleValue(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** Every sample line of one metric name. */
export function samplesOf(text: string, name: string): string[] {
  return text.split('\n').filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `));
}
