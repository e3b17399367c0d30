// A metric family as the exposition declares it: name, type, labels, and the HELP text a person on
// call reads. Collectors declare their families with these; the README's metric table and the
// HELP lines come from the same declarations.

export interface MetricSpec {
  name: string;
  type: 'gauge' | 'counter';
  labels: readonly string[];
  help: string;
}

export function gauge(name: string, labels: readonly string[], help: string): MetricSpec {
  return { name, type: 'gauge', labels, help };
}

export function counter(name: string, labels: readonly string[], help: string): MetricSpec {
  return { name, type: 'counter', labels, help };
}
