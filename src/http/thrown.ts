/** How a thrown value is described in replies and log lines: never throwing, whatever was thrown. */

export function describeThrown(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

/** A thrown value's stack (or its text), never throwing itself: for log lines about failures. */
export function stackOf(err: unknown): string {
  try {
    return err instanceof Error ? (err.stack ?? describeThrown(err)) : String(err);
  } catch {
    return 'an unprintable value';
  }
}
