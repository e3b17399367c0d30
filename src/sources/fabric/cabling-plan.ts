// The cabling plan (--fabric.topology-file): the fabric as it should be, in one of two formats.
//
//   plan           one cable a line, `<node> <port> <peer node> <peer port> [width] [speed]`
//                  (cabling-plan-lines.ts)
//   ibnetdiscover  a saved `ibnetdiscover` output (a known-good discovery): every cable of it, the
//                  width and speed it trained at as the plan's (cabling-plan-ibnetdiscover.ts).
//
// Reading a plan has two steps. `parsePlan` (here; `parsePlanSteps` in time slices) checks the text alone (a malformed line, a port
// cabled twice, an unknown width or speed): every error is the user's, with its line, and the
// exporter refuses the file (exit 2 at start and in `check`; a reload keeps the previous plan).
// `resolvePlan` (cabling-plan-resolution.ts) names each plan node's GUID in a discovered fabric.
// `formatPlan` (cabling-plan-writer.ts) writes a fabric as a plan (`infiniband-exporter topology save FILE`).
import type { ParsedPlan, PlanError, PlanFormat } from '../../model/cabling.js';
import { atOnce, type Work } from '../../event-loop/time-slices.js';
import { parseIbnetdiscoverPlanSteps } from './cabling-plan-ibnetdiscover.js';
import { parseCablingPlanSteps } from './cabling-plan-lines.js';

/**
 * A plan error as the one line a person reads (exit 2): `source` names where the file was given,
 * `--fabric.topology-file` or the config file's `fabric.topology_file`.
 * `--fabric.topology-file plan.txt:7: expected a port number 1–255 after "node-001", got "HCA-1" …`
 */
export function planErrorMessage(source: string, file: string, error: PlanError): string {
  return `${source} ${file}:${error.line}: ${error.message}`;
}

// An ibnetdiscover output has node records with its own ids ("S-<guid>"); a cabling plan never does.
const IBNETDISCOVER_RECORD = /^(?:(?:switch|ca|rt)guid=0x[0-9a-f]+|(?:Switch|Ca|Rt)\s+\d+\s+"[SHR]-[0-9a-f]{16}")/im;

/** Which format a plan file is in: an ibnetdiscover output when it has a node record, else a cabling plan. */
export function planFormat(text: string): PlanFormat {
  return IBNETDISCOVER_RECORD.test(text) ? 'ibnetdiscover' : 'plan';
}

/** Parse a plan file's text (either format; `file` is only kept for messages). */
export function parsePlan(text: string, file: string): ParsedPlan {
  return atOnce(parsePlanSteps(text, file));
}

/** `parsePlan` in time slices: a plan of 16 MiB is seconds of work, read again while the exporter serves. */
export function parsePlanSteps(text: string, file: string): Work<ParsedPlan> {
  return planFormat(text) === 'ibnetdiscover' ? parseIbnetdiscoverPlanSteps(text, file) : parseCablingPlanSteps(text, file);
}
