/** A mistake by the person running the exporter: one line on stderr and exit code 2, never a stack trace. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}
