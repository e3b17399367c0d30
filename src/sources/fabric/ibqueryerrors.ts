// `ibqueryerrors` output (rdma-core infiniband-diags), in the two modes the ports cycle runs, both
// from the discovery cache (--load-cache) so that no second discovery is made:
//   errors   (--threshold-file /dev/null: every threshold 0) — per node one PortCounters query over
//            all ports (AllPortSelect); only when that sum is not 0, one query per port. A port is
//            printed only with its non-zero error counters and PortXmitWait:
//              Errors for 0x<guid> "<name>"            (a CA's header has no GUID)
//                 GUID 0x<port guid> port ALL: [SymbolErrorCounter == 3] …
//                 GUID 0x<port guid> port 2: [SymbolErrorCounter == 3] [PortXmitWait == 7 (7.000)]
//            A value with a "(…)" suffix came from PortCountersExtended (64-bit); without it, from
//            PortCounters (IBA widths, which saturate).
//   counters (--counters) — every port's data and packet counters, extended when supported:
//              Data Counters for 0x<node guid> "<name>"
//                 GUID 0x<node guid> port 1: [PortXmitData == 2376 (9.281KB)] …
// Failed queries go to stderr as `ibwarn: [pid] <function>: <what> query failed on <name>, Lid <L> port <P>`
// (port 0 for ClassPortInfo, 255 for the all-ports query). The run ends with `## Summary: …`; its
// absence means the sweep did not finish.
import { normaliseGuid } from '../../model/guid.js';
import { parseCounterValue } from '../../model/pma-counters.js';
import { parseWhole, type LineParser } from '../output-lines.js';
import { UnparsedLines } from '../unparsed-lines.js';

export interface SweepValue {
  value: bigint;
  /** Printed with a human-readable suffix: in the errors mode, a 64-bit PortCountersExtended value. */
  suffixed: boolean;
}

export interface SweepPort {
  /** As printed: the port GUID in the errors mode, the node GUID in the counters mode. */
  guid: string;
  port: number;
  /** By IBA field name (`SymbolErrorCounter`, `PortXmitData`…). */
  values: Map<string, SweepValue>;
}

export interface SweepFailure {
  /** LID the failed query went to (a switch's LID, or a CA port's). */
  lid: number;
  /** 0 ClassPortInfo, 255 all ports, else the port. */
  port: number;
  message: string;
}

export interface SweepReading {
  /** The run reached its summary: every node of the cache was visited. */
  complete: boolean;
  ports: SweepPort[];
  failures: SweepFailure[];
  /** Output lines that matched nothing. */
  unparsed: UnparsedLines;
}

const HEADER = /^(?:Errors for|Data Counters for) (?:0x[0-9a-f]{1,16} )?".*"$/;
const PORT = /^\s+GUID (0x[0-9a-f]{1,16}) port (ALL|\d{1,3}):(.*)$/;
const ITEM = /\[([A-Za-z0-9]+) == (\d{1,20})(?: \(([^)]*)\))?\]/g;
const FAILURE = /^ibwarn: \[[^\]]*\] \w+: (.* query failed on .*), Lid (\d{1,5}) port (\d{1,3})$/;
const IGNORED = /^(?:\s+Link info:.*|##.*|)$/;

// Whitespace as String.prototype.trim() takes it, matched where `lastIndex` says.
const WHITESPACE = /\s*/y;

/** Whether `text` holds only whitespace from `from` to `to`. */
function onlyWhitespace(text: string, from: number, to: number): boolean {
  WHITESPACE.lastIndex = from;
  WHITESPACE.test(text);
  return WHITESPACE.lastIndex >= to;
}

/**
 * The standard output a line at a time, as it arrives (see OutputLines); `end(stderr)` adds the
 * failed queries. With `onPort`, each port is handed over as it is read and not kept (`ports`
 * stays empty): a counters sweep of 30 000 ports held as a map of values each was 24 MiB.
 */
export class IbqueryerrorsParser implements LineParser<SweepReading> {
  private readonly ports: SweepPort[] = [];
  private readonly unparsed = new UnparsedLines();
  private complete = false;
  private stderr = '';

  constructor(private readonly onPort?: (port: SweepPort) => void) {}

  push(raw: string): void {
    const line = raw.trimEnd();
    if (line.startsWith('## Summary:')) this.complete = true;
    if (HEADER.test(line) || IGNORED.test(line)) return;
    const match = PORT.exec(line);
    const guid = match && normaliseGuid(match[1]!);
    if (!match || !guid) {
      this.unparsed.add(line);
      return;
    }
    // A port line is nothing but its `[Name == value]` items: anything else (a line cut or
    // garbled half-way) would lose counters without a word. Read in one pass, each item where the
    // last ended, after whitespace only.
    const items = match[3]!;
    const all = match[2] === 'ALL';
    const values = new Map<string, SweepValue>();
    let end = 0;
    ITEM.lastIndex = 0;
    for (let item = ITEM.exec(items); item !== null; item = ITEM.exec(items)) {
      if (!onlyWhitespace(items, end, item.index)) break;
      end = ITEM.lastIndex;
      if (all) continue;
      const value = parseCounterValue(item[2]!);
      if (value !== undefined) values.set(item[1]!, { value, suffixed: item[3] !== undefined });
    }
    if (!onlyWhitespace(items, end, items.length)) {
      this.unparsed.add(line);
      return;
    }
    if (all) return;
    const port = { guid, port: Number(match[2]), values };
    if (this.onPort) this.onPort(port);
    else this.ports.push(port);
  }

  /** The sweep's standard error, where its failed queries are. */
  failures(stderr: string): this {
    this.stderr = stderr;
    return this;
  }

  end(): SweepReading {
    const failures: SweepFailure[] = [];
    for (const line of this.stderr.split('\n')) {
      const match = FAILURE.exec(line.trimEnd());
      if (match) failures.push({ lid: Number(match[2]), port: Number(match[3]), message: match[1]! });
    }
    return { complete: this.complete, ports: this.ports, failures, unparsed: this.unparsed };
  }
}

export function parseIbqueryerrors(stdout: string, stderr: string): SweepReading {
  return parseWhole(stdout, new IbqueryerrorsParser().failures(stderr));
}
