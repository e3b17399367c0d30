// GET /fabric: the fabric map (fabric-map.ts) of the current snapshot, with the fabric's findings in
// check's words beside it. Rendered once per snapshot that is viewed (tens of milliseconds at 2 000
// nodes, seconds at 120 000 ports: in time slices, the event loop turning meanwhile), never per
// scrape.
import type { Collector } from '../../collection/collector.js';
import { FABRIC_CABLING } from '../../collectors/fabric/cabling/index.js';
import { FABRIC_DISCOVERY } from '../../collectors/fabric/discovery.js';
import { FABRIC_PORTS } from '../../collectors/fabric/ports/index.js';
import { JOBS_PART } from '../../collectors/parts.js';
import { FABRIC_VERDICT } from '../../collectors/fabric/verdict/index.js';
import { inSlices, type Work } from '../../event-loop/time-slices.js';
import { findingsSteps, groupOf } from '../../findings/findings.js';
import { fabricPortKey, type FabricTopology } from '../../model/fabric.js';
import type { Snapshot } from '../../model/snapshot.js';
import { renderFabricMapSteps } from './fabric-map.js';
import { PageCache } from './page-cache.js';

export class FabricPage {
  private readonly cache = new PageCache();

  constructor(
    private readonly collectors: readonly Collector[],
    private readonly runbookBase?: string,
  ) {}

  /** The page of `snapshot`, or why there is no fabric to draw. */
  async of(snapshot: Snapshot | undefined, takenAt: number | undefined, jobId?: string): Promise<{ html: string } | { missing: string }> {
    const discovery = snapshot && FABRIC_DISCOVERY.of(snapshot);
    if (!snapshot || !discovery)
      return { missing: 'no fabric map: fabric mode is off (--collector.fabric), or its first discovery has not finished' };
    const topology = discovery.topology;
    if (!topology) return { missing: 'no fabric map yet: no fabric discovery has succeeded' };
    if (jobId === undefined) return { html: await this.cache.get([snapshot], () => inSlices(this.render(snapshot, topology, takenAt))) };
    // A job's page is drawn when asked (jobs change; one page per job is not kept).
    const placed = JOBS_PART.of(snapshot)?.jobs.find((candidate) => candidate.job.id === jobId);
    if (!placed)
      return {
        missing: `no running job ${jobId} on the fabric (jobs need --squeue.path or --jobs.file, and at least --jobs.min-hosts hosts)`,
      };
    const { job } = placed;
    const title = `${job.id}${[job.user, job.name].some(Boolean) ? ` (${[job.user, job.name].filter(Boolean).join(', ')})` : ''} on ${placed.onFabric.length} hosts${placed.notFound.length > 0 ? `, ${placed.notFound.length} not found on the fabric` : ''}`;
    return {
      html: await inSlices(
        this.render(snapshot, topology, takenAt, { title, links: new Set(Array.from(placed.links, (link) => link.key)) }),
      ),
    };
  }

  private *render(
    snapshot: Snapshot,
    topology: FabricTopology,
    takenAt: number | undefined,
    job?: { title: string; links: ReadonlySet<string> },
  ): Work<string> {
    const ports = FABRIC_PORTS.of(snapshot);
    // The fabric's findings (its ports, the subnet, its collectors, the cabling), not the host's.
    const findings = (yield* findingsSteps(snapshot, this.collectors)).filter((finding) => {
      const group = groupOf(finding.subject, this.collectors).kind;
      return group === 'subnet' || group === 'fabric-node';
    });
    return yield* renderFabricMapSteps({
      topology,
      readings: ports?.ports ?? new Map(),
      expectations: ports?.expectations ?? new Map(),
      cabling: FABRIC_CABLING.of(snapshot),
      findings,
      ...(ports && { risingErrors: ports.trend.risingErrors, berOverThreshold: ports.trend.berOverThreshold }),
      badLinks: new Set(
        FABRIC_VERDICT.of(snapshot)?.listed.flatMap((link) => [
          fabricPortKey(link.end.nodeGuid, link.end.port),
          fabricPortKey(link.peer.nodeGuid, link.peer.port),
        ]),
      ),
      ...(takenAt !== undefined && { takenAt }),
      ...(this.runbookBase !== undefined && { runbookBase: this.runbookBase }),
      ...(job && { job }),
    });
  }
}
