// --jobs.file: the running jobs for a scheduler other than Slurm, written by the site's own
// tooling, as YAML (or JSON, which is YAML): a list of `{id, user, partition, name, hosts}`, each
// host a name or a Slurm hostlist. Read through the bounded file reader; a mistake is a UsageError
// naming the file and the line, at start (exit 2) or, read again while running, one log line with
// the last good jobs kept.
import type { Node } from 'yaml';
import { UsageError } from '../../config/errors.js';
import { describe, type FileContext, keyName, parseYaml } from '../../config/yaml-file.js';
import { yaml } from '../../config/yaml.js';
import { FileRefused, JOBS_FILE, readBoundedText } from '../../files/bounded-file.js';
import type { Job } from '../../model/jobs.js';
import { MAX_HOSTLIST_HOSTS, MAX_LISTED_HOSTS, expandHostlist } from './hostlist.js';

const KEYS = ['id', 'user', 'partition', 'name', 'hosts'] as const;

function text(ctx: FileContext, node: unknown, key: string, required: boolean): string {
  if (node === undefined || node === null) {
    if (required) throw ctx.error(null, `a job without "${key}"`);
    return '';
  }
  const Y = yaml();
  if (Y.isScalar(node) && (typeof node.value === 'string' || (typeof node.value === 'number' && Number.isSafeInteger(node.value)))) {
    const value = String(node.value).trim();
    if (value !== '' || !required) return value;
  }
  throw ctx.error(node as Node, `"${key}" must be ${key === 'id' ? 'a job id (text or a whole number)' : 'text'}, got ${describe(node)}`);
}

/** `budget.listed`: the hosts of the jobs before this one, against MAX_LISTED_HOSTS. */
function job(ctx: FileContext, node: unknown, budget: { listed: number }): Job {
  const Y = yaml();
  if (!Y.isMap(node)) throw ctx.error(node as Node, `each job must be a mapping of ${KEYS.join(', ')}, got ${describe(node)}`);
  const fields = new Map<string, unknown>();
  for (const pair of node.items) {
    const key = keyName(ctx, pair.key);
    if (!(KEYS as readonly string[]).includes(key))
      throw ctx.error(pair.key as Node, `unknown key "${key}" (a job has ${KEYS.join(', ')})`);
    fields.set(key, pair.value);
  }
  if (!fields.has('id')) throw ctx.error(node, 'a job without "id"');
  const hostsNode = fields.get('hosts');
  if (!Y.isSeq(hostsNode))
    throw ctx.error(
      (hostsNode as Node | undefined) ?? node,
      `"hosts" must be a list of host names or hostlists, got ${describe(hostsNode)}`,
    );
  const hosts = new Set<string>();
  for (const item of hostsNode.items) {
    const limit = Math.min(MAX_HOSTLIST_HOSTS - hosts.size, MAX_LISTED_HOSTS - budget.listed - hosts.size);
    const expansion = expandHostlist(text(ctx, item, 'hosts', true), limit);
    if (expansion.error !== undefined) throw ctx.error(item as Node, `not a host name or hostlist: ${expansion.error}`);
    for (const host of expansion.hosts) hosts.add(host);
  }
  budget.listed += hosts.size;
  return {
    id: text(ctx, fields.get('id'), 'id', true),
    user: text(ctx, fields.get('user'), 'user', false),
    partition: text(ctx, fields.get('partition'), 'partition', false),
    name: text(ctx, fields.get('name'), 'name', false),
    hosts: [...hosts],
  };
}

/** The jobs of a jobs file's text; an empty file is no job. */
export function parseJobsFile(content: string, file: string): Job[] {
  const { root, ctx } = parseYaml(content, file, JOBS_FILE.name);
  if (root === null) return [];
  if (!yaml().isSeq(root)) throw ctx.error(root, `expected a list of jobs ({id, user, partition, name, hosts}), got ${describe(root)}`);
  const budget = { listed: 0 };
  const jobs = root.items.map((item) => job(ctx, item, budget));
  const seen = new Set<string>();
  for (const [i, found] of jobs.entries()) {
    if (seen.has(found.id)) throw ctx.error(root.items[i] as Node, `job ${found.id} is listed twice`);
    seen.add(found.id);
  }
  return jobs;
}

/** Read and parse a jobs file; every failure is a UsageError naming `flag` and the file. */
export function readJobsFile(file: string, flag: string): Job[] {
  let content: string;
  try {
    content = readBoundedText(file, JOBS_FILE);
  } catch (error) {
    throw new UsageError(`${flag}: ${file} ${error instanceof FileRefused ? error.reason : (error as Error).message}`);
  }
  try {
    return parseJobsFile(content, file);
  } catch (error) {
    if (error instanceof UsageError) throw new UsageError(`${flag}: ${error.message}`);
    throw error;
  }
}
