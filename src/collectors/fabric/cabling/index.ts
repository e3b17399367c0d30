// The fabric_cabling collector: the fabric against its cabling plan (--fabric.topology-file) and
// its rails (fabric.rails in the config file, else inferred), after every ports cycle, on the same
// view of where each cable is now. It says which cable to move from where to where (two swapped
// cables are one swap; a chain of moves the fewest moves), which planned cable has no link, which
// adapter is on another rail's leaf, and writes the cabling families. Without a plan and without
// rails it is off: nothing of it runs and no series exists.
//
// The plan is parsed at start (a malformed line or a port cabled twice: exit 2, with the file and
// line) and read again when the file changes or on SIGHUP; a new version that does not parse is
// refused and the plan read before stays in force, with the reason as the collector's failure.
// The plan in force is resolved against every new discovery. A name that does not resolve (the
// NodeDescription of several nodes, a name no node has) is never an exit, at start or later: the
// fabric is untrusted, any host can copy another's NodeDescription at any time, and the fabric may
// be half down at start. Each is a finding naming its plan lines, and an error of the collector
// (infiniband_exporter_collector_success 0: InfiniBandExporterCollectorFailing); every other line
// of the plan is still judged.
import { statSync, type Stats } from 'node:fs';
import { CABLING_PLAN_FILE, FileRefused, readBoundedTextAsync } from '../../../files/bounded-file.js';
import { UsageError } from '../../../config/errors.js';
import { STRING, optionalFlag, type Settings } from '../../../config/flags.js';
import { atOnce, inSlices, type Work } from '../../../event-loop/time-slices.js';
import type { ExpositionBuffer } from '../../../exposition/buffer.js';
import type { CablingPlan, CablingReport, RailRule, ResolvedPlan } from '../../../model/cabling.js';
import type { FabricTopology } from '../../../model/fabric.js';
import { judgeCablingSteps } from '../../../model/cabling-conformance.js';
import type { Snapshot } from '../../../model/snapshot.js';
import {
  defineCollector,
  type Collector,
  type CollectorContext,
  type Off,
  type Reader,
  type Reading,
} from '../../../collection/collector.js';
import { CABLING_METRIC_ORDER, writeCablingMetricsSteps } from './metrics.js';
import { cablingFindings, explainedByCabling } from './findings.js';
import {
  FABRIC_CABLING_PART,
  FABRIC_DISCOVERY_PART as FABRIC_DISCOVERY,
  FABRIC_PORTS_PART as FABRIC_PORTS,
  type DiscoveryPart,
} from '../../parts.js';
import { FABRIC_RAILS_SECTION } from './rails-section.js';
import { FABRIC_PORTS_CYCLE, FABRIC_SWITCH } from '../fabric-mode.js';

export const FABRIC_TOPOLOGY_FILE = optionalFlag(STRING, {
  name: 'fabric.topology-file',
  key: 'fabric.topology_file',
  help: 'The fabric as it should be, compared with it every fabric cycle: a cabling plan (one cable a line: <node> <port> <peer node> <peer port> [width] [speed]) or a saved ibnetdiscover output.',
  check: true,
});

/** `fabric.rails` in the config file: each rail's leaves and the host adapter that belongs to it. */
export const FABRIC_RAILS = FABRIC_RAILS_SECTION;

/** The plan file as last read: its text parsed, and what identifies that version of the file. */
interface PlanFile {
  plan: CablingPlan;
  version: string;
}

const versionOf = (stats: Stats): string => `${stats.ino}:${stats.size}:${stats.mtimeMs}`;

// The plan's parser and resolver are fabric mode's sources: loaded when first needed, never by a
// host that does not run fabric mode.
type PlanSource = typeof import('../../../sources/fabric/cabling-plan.js') &
  typeof import('../../../sources/fabric/cabling-plan-resolution.js');
let planSource: Promise<PlanSource> | undefined;
const loadPlanSource = (): Promise<PlanSource> =>
  (planSource ??= Promise.all([
    import('../../../sources/fabric/cabling-plan.js'),
    import('../../../sources/fabric/cabling-plan-resolution.js'),
  ]).then(([parsing, resolution]) => ({ ...parsing, ...resolution })));

/** Read and parse the plan file (in time slices: a reload must not hold the loop): the plan, or the one line that says why it cannot be used. */
async function loadPlan(
  { parsePlanSteps, planErrorMessage }: PlanSource,
  file: string,
  source: string,
): Promise<{ loaded: PlanFile } | { error: string }> {
  let text: string;
  let version: string;
  try {
    version = versionOf(statSync(file));
    text = await readBoundedTextAsync(file, CABLING_PLAN_FILE);
  } catch (error) {
    return { error: `${source}: ${file} ${error instanceof FileRefused ? error.reason : `cannot be read: ${(error as Error).message}`}` };
  }
  const parsed = await inSlices(parsePlanSteps(text, file));
  if (!parsed.plan) return { error: planErrorMessage(source, file, parsed.errors[0]!) };
  return { loaded: { plan: parsed.plan, version } };
}

/** At start (serve and check): a plan file that cannot be read or parsed is a usage error. */
async function verify(settings: Settings): Promise<void> {
  const file = settings.get(FABRIC_TOPOLOGY_FILE);
  if (file === undefined) return;
  const result = await loadPlan(await loadPlanSource(), file, settings.placeOf(FABRIC_TOPOLOGY_FILE));
  if ('error' in result) throw new UsageError(result.error);
}

/** The plan in force: its last resolution and the topology it was resolved against (none before the first discovery). */
interface InForce {
  file: PlanFile;
  resolved: ResolvedPlan | undefined;
  against: FabricTopology | undefined;
}

class CablingReader implements Reader<CablingReport> {
  private readonly file: string | undefined;
  private readonly source: string;
  /** The plan in force, its last resolution and the topology it was resolved against. */
  private inForce: InForce | undefined;
  /** A changed file that could not be used (that version of it), and why: said once, failing each cycle until the file changes. */
  private refused: { version: string; message: string } | undefined;
  private bindings: ReadonlyMap<string, string> = new Map();
  private reloadAsked = false;

  constructor(
    private readonly context: CollectorContext,
    private readonly rails: readonly RailRule[] | undefined,
  ) {
    this.file = context.settings.get(FABRIC_TOPOLOGY_FILE);
    this.source = context.settings.placeOf(FABRIC_TOPOLOGY_FILE);
  }

  reload(): void {
    this.reloadAsked = true;
  }

  async read(snapshot: Snapshot): Promise<Reading<CablingReport>> {
    const failures: string[] = [];
    const discovery = FABRIC_DISCOVERY.of(snapshot);
    if (this.file !== undefined) {
      await this.consider(await loadPlanSource(), this.file, discovery, failures);
      if (this.refused && this.inForce) failures.push(`${this.refused.message}; the plan read before stays in force`);
    }
    // Names of the plan that do not resolve: errors of the collector, each with its first line.
    const problems = (this.inForce?.resolved?.problems ?? []).map((problem) => ({
      item: `${this.source} ${this.file}:${problem.lines[0]}`,
      message: problem.message,
    }));
    // Every cable of the fabric: judged in time slices.
    const report = await inSlices(
      judgeCablingSteps(this.inForce?.resolved, this.rails, discovery?.topology, FABRIC_PORTS.of(snapshot)?.ports ?? new Map()),
    );
    return {
      ...(report && { part: report }),
      ...(failures.length > 0 && { failure: failures.join('; ') }),
      ...(problems.length > 0 && { errors: problems, failOnErrors: true }),
    };
  }

  /** Read the plan file again when it changed (or SIGHUP asked), and resolve the plan against the fabric. */
  private async consider(plans: PlanSource, file: string, discovery: DiscoveryPart | undefined, failures: string[]): Promise<void> {
    const { logger } = this.context;
    let candidate = this.inForce?.file;
    let version: string | undefined;
    try {
      version = versionOf(statSync(file));
    } catch (error) {
      if (!candidate) return this.context.fatal(new UsageError(`${this.source}: ${file} cannot be read: ${(error as Error).message}`));
      failures.push(`${this.source}: ${file} cannot be read: ${(error as Error).message}; the plan read before stays in force`);
    }
    const reload = this.reloadAsked;
    this.reloadAsked = false;
    if (version !== undefined && (!candidate || reload || (version !== candidate.version && version !== this.refused?.version))) {
      const result = await loadPlan(plans, file, this.source);
      if ('loaded' in result) {
        if (candidate) logger.info({ file }, 'cabling plan read again');
        candidate = result.loaded;
      } else if (!candidate) {
        return this.context.fatal(new UsageError(result.error));
      } else {
        if (this.refused?.version !== version)
          logger.error({ file, error: result.error }, 'the changed cabling plan is not usable; the plan read before stays in force');
        this.refused = { version, message: result.error };
      }
    }
    const topology = discovery?.topology;
    if (!candidate) return;
    const current = this.inForce;
    if (current?.file === candidate && current.against === topology) return;
    if (current?.file !== candidate) this.refused = undefined;
    // No fabric to resolve it against yet: in force, judged once a discovery succeeds.
    if (!topology) {
      this.inForce = { file: candidate, resolved: undefined, against: undefined };
      return;
    }
    const resolved = await inSlices(plans.resolvePlanSteps(candidate.plan, topology, discovery.names, this.bindings));
    this.inForce = { file: candidate, resolved, against: topology };
    this.bindings = resolved.bindings;
  }
}

const PLAN_REFUSED = {
  consequence: 'the cabling plan in force may not be the file as it is now: the cables are judged against the plan read before',
  meaning: 'A changed plan that does not parse is refused so that a typo never passes for a miswired fabric.',
  cause:
    'An edit of the plan file with a malformed line, a port cabled twice, or an unknown width or speed; or the file was removed or made unreadable.',
};

function setUp(context: CollectorContext): Reader<CablingReport> | Off {
  const rails = context.settings.section(FABRIC_RAILS);
  if (context.settings.get(FABRIC_TOPOLOGY_FILE) === undefined && rails.length === 0) {
    return { off: 'no cabling plan (--fabric.topology-file) and no fabric.rails in the config file' };
  }
  return new CablingReader(context, rails.length > 0 ? rails : undefined);
}

function* writeMetrics(snapshot: Snapshot, out: ExpositionBuffer): Work<void> {
  const report = FABRIC_CABLING.of(snapshot);
  const shard = FABRIC_DISCOVERY.of(snapshot)?.shard;
  if (report && shard) yield* writeCablingMetricsSteps(report, shard, out);
}

export const FABRIC_CABLING: Collector<CablingReport> = defineCollector({
  name: FABRIC_CABLING_PART.name,
  checks: 'the cabling against its plan and rails',
  enabledBy: FABRIC_SWITCH,
  flags: [FABRIC_TOPOLOGY_FILE],
  sections: [FABRIC_RAILS],
  scope: 'fabric',
  // After each ports cycle, on its readings.
  schedule: { cycle: FABRIC_PORTS_CYCLE, after: [FABRIC_PORTS] },
  onOverrun: 'keep',
  verify,
  setUp,
  metrics: { families: CABLING_METRIC_ORDER, write: (snapshot, out) => atOnce(writeMetrics(snapshot, out)), writeSteps: writeMetrics },
  findings: (snapshot) =>
    cablingFindings(FABRIC_CABLING.of(snapshot), FABRIC_DISCOVERY.of(snapshot)?.topology, FABRIC_PORTS.of(snapshot)?.ports),
  explains: (snapshot) => {
    const report = FABRIC_CABLING.of(snapshot);
    return report && explainedByCabling(report);
  },
  // A name of the plan that does not resolve is a finding of its own (fabric-cabling-findings.ts);
  // the words here are for a changed plan file that was refused.
  failure: (_snapshot, report) => (report.errors.some((error) => error.item === 'collector') ? PLAN_REFUSED : undefined),
});
