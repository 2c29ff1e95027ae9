/**
 * W3C Trace Context for rollouts (D25). Each attempt of a rollout is one trace. Its trace id is derived, not drawn:
 * the first 16 bytes of SHA-256 over the run's random `trace_salt` (kept in `<stem>_status.json`, and carried over
 * on resume) and the rollout's (task, rollout, attempt). So a success row stays exactly the `/verify` answer plus the
 * collector's stamps (C4) and still has a findable trace: `gym eval explain` derives it again from the status file.
 * Failure rows also carry it as `_ng_trace_id`. The salt is 16 random bytes, so ids stay unique across runs.
 */
import { hash, randomFillSync } from 'node:crypto';

export function newTraceSalt(): string {
  return randomHex(16);
}

export function traceIdOf(salt: string, task: unknown, rollout: unknown, attempt: number): string {
  // The one-shot digest: a third of a Hash object's CPU per call (one per rollout in the collector).
  return hash('sha256', `${salt}:${String(task)}:${String(rollout)}:${attempt}`, 'hex').slice(0, 32);
}

/** Random bytes drawn in bulk: a span id per hop must not cost a system call each. */
const POOL_BYTES = 4096;
const pool = Buffer.alloc(POOL_BYTES);
let poolOffset = POOL_BYTES;

function randomHex(bytes: number): string {
  if (poolOffset + bytes > POOL_BYTES) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const hex = pool.toString('hex', poolOffset, poolOffset + bytes);
  poolOffset += bytes;
  return hex;
}

export function newSpanId(): string {
  return randomHex(8);
}

export function newTraceId(): string {
  return randomHex(16);
}

/** `00-<trace id>-<parent span id>-01` (sampled). */
export function traceparent(traceId: string, spanId: string): string {
  return `00-${traceId}-${spanId}-01`;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** A received `traceparent` header's trace and parent span ids; undefined when absent or malformed (W3C §3.2). */
export function parseTraceparent(value: unknown): { traceId: string; spanId: string; flags: string } | undefined {
  if (typeof value !== 'string') return undefined;
  const match = TRACEPARENT.exec(value.trim());
  if (!match || match[1] === 'ff') return undefined;
  const [, , traceId, spanId, flags] = match as unknown as [string, string, string, string, string];
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId)) return undefined;
  return { traceId, spanId, flags };
}
