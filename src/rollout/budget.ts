import { performance } from 'node:perf_hooks';
import { RetryableRolloutError } from '../errors.js';
import type { FifoSemaphore } from '../server/agent-server.js';
import { pyFloat } from './settings.js';
import type { RolloutTrace } from './trace.js';

/**
 * The whole-rollout bound (decision D13): a rollout holds one concurrency slot from admission to its end, its
 * `run_timeout_secs` clock starts only once the slot is held (queue wait does not count), and when the clock
 * runs out the rollout's AbortSignal fires, which aborts whatever request is in flight at once. The caller gets
 * its answer at the deadline; the slot is given back when the aborted work has actually unwound, so the number
 * of calls open at the service never exceeds `concurrency`, not even for an instant after a timeout.
 */

/** What one admitted rollout may spend: every request of the rollout takes `signal`. */
export interface RunBudget {
  signal: AbortSignal;
  /** `performance.now()` value at which the run timeout fires. */
  deadline: number;
  /** Milliseconds left before the deadline (never negative). */
  remainingMs(): number;
  /** The rollout's trace: each hop's request carries its span's `traceparent` (D25). */
  trace?: RolloutTrace;
}

/** When a rollout was queued and admitted (`performance.now()` values), for the timing keys of its row. */
export interface RunClock {
  queuedAt: number;
  admittedAt?: number;
}

export class RunTimeoutError extends RetryableRolloutError {
  constructor(runTimeoutSecs: number) {
    super(
      'REMOTE_AGENT_RUN_TIMEOUT',
      `/run exceeded run_timeout_secs=${pyFloat(runTimeoutSecs)}s (seed + agent/tool loop + verify)`,
    );
  }
}

/** The caller (collector or direct client) went away; nobody will read the answer. */
export class CallerGoneError extends RetryableRolloutError {
  constructor() {
    super('REMOTE_AGENT_CALLER_GONE', 'the caller closed the connection before the rollout finished');
  }
}

export async function withRunBudget<T>(
  limiter: FifoSemaphore,
  runTimeoutSecs: number,
  work: (budget: RunBudget) => Promise<T>,
  options: { callerSignal?: AbortSignal; clock?: RunClock } = {},
): Promise<T> {
  const { callerSignal, clock } = options;
  let release: () => void;
  try {
    release = await limiter.acquire(callerSignal);
  } catch {
    throw new CallerGoneError();
  }
  const admittedAt = performance.now();
  if (clock) clock.admittedAt = admittedAt;

  const controller = new AbortController();
  const timeoutMs = runTimeoutSecs * 1000;
  const timer = setTimeout(() => controller.abort(new RunTimeoutError(runTimeoutSecs)), timeoutMs);
  const onCallerGone = (): void => controller.abort(new CallerGoneError());
  callerSignal?.addEventListener('abort', onCallerGone, { once: true });
  if (callerSignal?.aborted) onCallerGone();

  const stopped = new Promise<never>((_, reject) => {
    // The reason is always one of the two errors above, never anything else.
    const fail = (): void => reject(controller.signal.reason as RunTimeoutError | CallerGoneError);
    if (controller.signal.aborted) fail();
    else controller.signal.addEventListener('abort', fail, { once: true });
  });
  stopped.catch(() => undefined);

  const deadline = admittedAt + timeoutMs;
  const running = work({
    signal: controller.signal,
    deadline,
    remainingMs: () => Math.max(0, deadline - performance.now()),
  });
  const settle = (): void => {
    clearTimeout(timer);
    callerSignal?.removeEventListener('abort', onCallerGone);
    release();
  };
  running.then(settle, settle);
  try {
    return await Promise.race([running, stopped]);
  } catch (err) {
    // An aborted request surfaces as its own transport error; the reason the run stopped is what matters.
    throw controller.signal.aborted ? controller.signal.reason : err;
  }
}
