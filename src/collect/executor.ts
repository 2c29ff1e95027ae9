/**
 * How rollouts get executed, behind one small interface so a distributed backend (a job queue with remote
 * workers) can replace the in-process pool without touching routing, resume or reporting: the collector
 * `submit`s jobs in order, is handed each result as it finishes, and `drain`s at the end.
 */
import type { Row } from '../runfiles/row.js';

export interface RolloutJob {
  task: number;
  rollout: number;
  agent: string;
  /** `_ng_attempt_index` of this dispatch (0 on a first attempt): with task and rollout, it names the attempt. */
  attempt: number;
  /**
   * The row as sent to `/run` (with `_ng_attempt_index` on a retry), as JSON text: the in-flight window holds
   * text, not parsed rows, and a remote worker needs nothing else.
   */
  body: string;
  /** The W3C `traceparent` the `/run` request carries (D25); absent from callers that trace nothing. */
  traceparent?: string;
  /** Its `tracestate`, sent with it when set (a queue worker passes on the collector's). */
  tracestate?: string;
}

/** Runs one job to a result row. Never rejects: every failure comes back as a failure row. */
export type RolloutExecutor = (job: RolloutJob) => Promise<Row>;

/** Receives each job's result the moment it is available. Throwing stops the queue (the run fails). */
export type ResultHandler<J extends RolloutJob> = (job: J, result: Row) => void;

export interface RolloutQueue<J extends RolloutJob = RolloutJob> {
  /** Accept a job. Resolves when the queue has room for the next one, so the caller reads its input lazily. */
  submit(job: J): Promise<void>;
  /** Resolves once every submitted job's result has been handed over. */
  drain(): Promise<void>;
}

export interface InProcessQueueOptions<J extends RolloutJob> {
  /** Jobs in flight at once; also the read-ahead window of the input. */
  concurrency: number;
  execute: RolloutExecutor;
  /** Gets back the very job object that was submitted. */
  onResult: ResultHandler<J>;
}

/** A bounded pool of concurrent `execute` calls in this process. */
export function createInProcessQueue<J extends RolloutJob>(options: InProcessQueueOptions<J>): RolloutQueue<J> {
  const { concurrency, execute, onResult } = options;
  let inFlight = 0;
  // Set when onResult throws (e.g. the disk is full): the run must stop rather than lose results.
  let fatal: { error: unknown } | undefined;
  const rethrowFatal = (): void => {
    if (fatal) throw fatal.error;
  };
  let roomWaiter: (() => void) | undefined;
  let idleWaiters: Array<() => void> = [];

  const settle = (): void => {
    inFlight--;
    const wake = roomWaiter;
    roomWaiter = undefined;
    wake?.();
    if (inFlight === 0) {
      const waiters = idleWaiters;
      idleWaiters = [];
      for (const waiter of waiters) waiter();
    }
  };

  const start = (job: J): void => {
    inFlight++;
    execute(job)
      .then((result) => {
        if (!fatal) onResult(job, result);
      })
      .catch((error: unknown) => {
        fatal ??= { error };
      })
      .finally(settle);
  };

  return {
    async submit(job) {
      rethrowFatal();
      start(job);
      while (inFlight >= concurrency) await new Promise<void>((resolve) => (roomWaiter = resolve));
      rethrowFatal();
    },
    async drain() {
      while (inFlight > 0) await new Promise<void>((resolve) => idleWaiters.push(resolve));
      rethrowFatal();
    },
  };
}
