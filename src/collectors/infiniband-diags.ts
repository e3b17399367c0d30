// The infiniband-diags flags every scope shares: the time limit of one command and where each tool
// is. The diag group (smpquery, sminfo, perfquery), fabric mode and the module collector run
// these tools; none of them owns the flags, so none imports another for them.
import { DURATION, STRING, flag, optionalFlag } from '../config/flags.js';

export const DIAG_TIMEOUT = flag(DURATION, {
  name: 'diag.timeout',
  key: 'diag.timeout',
  default: '5s',
  help: 'Time limit of one infiniband-diags command; its process tree is killed after it.',
  check: true,
});
export const PERFQUERY_PATH = optionalFlag(STRING, {
  name: 'perfquery.path',
  key: 'diag.perfquery_path',
  help: 'perfquery executable (default: found on PATH).',
  check: true,
});
export const SMINFO_PATH = optionalFlag(STRING, {
  name: 'sminfo.path',
  key: 'diag.sminfo_path',
  help: 'sminfo executable (default: found on PATH).',
  check: true,
});
export const SMPQUERY_PATH = optionalFlag(STRING, {
  name: 'smpquery.path',
  key: 'diag.smpquery_path',
  help: 'smpquery executable (default: found on PATH).',
  check: true,
});
