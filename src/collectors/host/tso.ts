// The tso collector: whether TCP segmentation offload is on for the IPoIB interfaces of adapters
// with the TSO erratum (model/tso-erratum.ts), from `ethtool -k`. Only hosts with an affected
// adapter ever run ethtool; on every other host it reads nothing.
import { collectorSwitch } from '../../config/flags.js';
import { hasTsoErratum } from '../../model/tso-erratum.js';
import type { IpoibInterface, TsoReading } from '../../model/host.js';
import type { Finding } from '../../model/finding.js';
import type { Snapshot } from '../../model/snapshot.js';
import { ExecaRunner, locateTools, type CommandRunner } from '../../sources/command-runner.js';
import { ETHTOOL_MAX_OUTPUT_BYTES, ETHTOOL_TIMEOUT_MS, readTcpSegmentationOffload, type EthtoolCommand } from '../../sources/ethtool.js';
import {
  defineCollector,
  type Collector,
  type CollectorContext,
  type Reader,
  type Reading,
  type ToolGroup,
} from '../../collection/collector.js';
import { HOST_READING } from './host-reading.js';
import { IPOIB_PART } from '../parts.js';

export const TSO_SWITCH = collectorSwitch(
  'tso',
  'tso',
  true,
  'Check TCP segmentation offload (ethtool -k) of IPoIB interfaces on adapters with the TSO erratum (ConnectX hardware revision a0).',
);

export const ETHTOOL: ToolGroup<EthtoolCommand> = { key: 'ethtool', tools: ['ethtool'] };

/** The real ethtool, bounded like every tool, or undefined when it is not installed. */
function ethtoolRunner(context: CollectorContext): CommandRunner<EthtoolCommand> | undefined {
  const injected = context.runner(ETHTOOL);
  if (injected !== undefined) return injected === 'not-installed' ? undefined : injected;
  const path = locateTools(ETHTOOL.tools, {}).found.ethtool;
  if (path === undefined) return undefined;
  return new ExecaRunner({
    paths: { ethtool: path },
    timeoutMs: ETHTOOL_TIMEOUT_MS,
    maxConcurrent: 1,
    maxOutputBytes: ETHTOOL_MAX_OUTPUT_BYTES,
  });
}

class TsoReader implements Reader<ReadonlyMap<string, TsoReading>> {
  private runner: CommandRunner<EthtoolCommand> | undefined | null = null;

  constructor(private readonly context: CollectorContext) {}

  async read(snapshot: Snapshot, signal: AbortSignal): Promise<Reading<ReadonlyMap<string, TsoReading>>> {
    const affected = new Set(snapshot.devices.filter(hasTsoErratum).map((device) => device.name));
    const interfaces = (IPOIB_PART.of(snapshot) ?? [])
      .filter((iface) => iface.device !== undefined && affected.has(iface.device))
      .map((iface) => iface.name);
    if (interfaces.length === 0) return { part: new Map() };
    // Looked for on the first host that needs it.
    if (this.runner === null) this.runner = ethtoolRunner(this.context);
    const { readings, errors, ran } = await readTcpSegmentationOffload(this.runner, interfaces, signal);
    return { part: readings, errors, read: (item) => ran.has(item) };
  }
}

function tsoFinding(iface: IpoibInterface | undefined, name: string, reading: TsoReading): Finding {
  const where = iface?.device === undefined ? '' : ` on ${iface.device}`;
  const base = {
    condition: 'ipoib-tso-erratum',
    subject: { kind: 'interface', interface: name, device: iface?.device, port: iface?.port },
    meaning:
      'ConnectX adapters of hardware revision a0 cannot do TCP segmentation offload; kernels before about 2014 offered it anyway, and with it on, large TCP sends over IPoIB leave as corrupt IP fragments (NFS and MPI over IPoIB stall or fail).',
    cause: 'A ConnectX of hardware revision a0 (ibstat: "Hardware version: a0") with TSO on, as older kernels set it by default.',
    remedy: `ethtool -K ${name} tso off, and make it permanent (NetworkManager: nmcli connection modify <connection> ethtool.feature-tso off; ifcfg: ETHTOOL_OPTS="-K ${name} tso off")`,
    runbook: 'connectx-revision-a0-ipoib-tso',
    alert: undefined,
  } as const;
  const adapter = `IPoIB ${name}${where} (ConnectX hardware revision a0)`;
  if (reading.state === 'on') {
    return {
      ...base,
      severity: 'warning',
      summary: `${adapter} has TCP segmentation offload (TSO) on: this adapter cannot do it and sends large TCP transfers as corrupt IP fragments`,
    };
  }
  if (reading.state === 'unknown') {
    return {
      ...base,
      severity: 'warning',
      summary: `${adapter} must run with TCP segmentation offload (TSO) off; whether it is cannot be told: ${reading.reason}`,
    };
  }
  if (reading.fixed) {
    return {
      ...base,
      severity: 'info',
      summary: `${adapter}: TCP segmentation offload (TSO) is off and this kernel keeps it off: nothing to do`,
      remedy: 'nothing: the kernel already works around the erratum',
    };
  }
  return { ...base, severity: 'info', summary: `${adapter}: TCP segmentation offload (TSO) is off today; it must stay off after a reboot` };
}

function judge(snapshot: Snapshot): Finding[] {
  const interfaces = new Map((IPOIB_PART.of(snapshot) ?? []).map((iface): [string, IpoibInterface] => [iface.name, iface]));
  return [...(TSO.of(snapshot) ?? new Map<string, TsoReading>())].map(([name, reading]) => tsoFinding(interfaces.get(name), name, reading));
}

export const TSO: Collector<ReadonlyMap<string, TsoReading>> = defineCollector({
  name: 'tso',
  checks: 'TCP segmentation offload of IPoIB on adapters with the TSO erratum',
  enabledBy: TSO_SWITCH,
  flags: [TSO_SWITCH],
  scope: 'host',
  schedule: { cycle: HOST_READING },
  onOverrun: 'keep',
  setUp: (context) => new TsoReader(context),
  findings: judge,
  failure: {
    consequence: 'the TCP segmentation offload of the affected interfaces is unknown',
    meaning: 'Whether an adapter with the TSO erratum sends corrupt IP fragments cannot be told.',
    cause: 'ethtool failing or timing out.',
  },
  // An ethtool failure is said by the TSO finding of its interface.
  explained: (error) => error.item.startsWith('ethtool '),
});
