/**
 * W3C Trace Context for rollouts (D25). Each attempt of a rollout is one trace. Its trace id is derived, not drawn:
 * the first 16 bytes of SHA-256 over the run's random `trace_salt` (kept in `<stem>_status.json`, and carried over
 * on resume) and the rollout's (task, rollout, attempt). So a success row stays exactly the `/verify` answer plus the
 * collector's stamps (C4) and still has a findable trace: `gym eval explain` derives it again from the status file.
 * Failure rows also carry it as `_ng_trace_id`. The salt is 16 random bytes, so ids stay unique across runs.
 */
import { createHash } from 'node:crypto';

/** The failure-row key that records the trace id of the attempt. */
export const TRACE_ID_KEY = '_ng_trace_id';

export function traceIdOf(salt: string, task: unknown, rollout: unknown, attempt: number): string {
  return createHash('sha256')
    .update(`${salt}:${String(task)}:${String(rollout)}:${attempt}`)
    .digest('hex')
    .slice(0, 32);
}
