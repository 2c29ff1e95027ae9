/**
 * The worker's part of a rollout's trace (D25) and its per-job log event. A job carries the collector's rollout span
 * as `traceparent` (plus `tracestate` and, when the collector records spans, the enqueue time); all three come from
 * Redis, so they are checked here and a malformed one is dropped, never thrown on. With a valid parent the worker
 * records two spans under the collector's rollout span: `queue wait` (from the enqueue time to the moment this
 * worker took the job) and `worker` (around the job's `/run`, which carries the worker span as its `traceparent`, so
 * the agent's spans hang below it). The tracer follows the usual export rules (src/tracing/spans.ts): without the
 * OTLP variables nothing is loaded or recorded and the `/run` carries the collector's `traceparent` unchanged, so
 * the only per-job work is checking that one string. In json log mode every finished job is one `job finished`
 * event with its trace id, indices, agent, outcome and duration.
 */
import os from 'node:os';
import { jsonLogs, logEvent } from '../logging/log.js';
import { outcomeClassOf, type Row } from '../runfiles/row.js';
import { parseTraceparent } from '../runfiles/trace-context.js';
import { rolloutTracer } from '../tracing/spans.js';
import type { HopSpan, RolloutTracer, SpanParent } from '../tracing/types.js';
import type { JobData } from './protocol.js';

/** W3C Trace Context bounds `tracestate` to 32 list members; 512 characters is the length its implementations keep. */
const MAX_TRACESTATE = 512;
/** list-members: printable ASCII without spaces around them is enough to forward it as a header safely. */
const TRACESTATE = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/;
/** An enqueue time further in the future than this (another host's clock) is not believed. */
const MAX_CLOCK_SKEW_MS = 60 * 60 * 1000;

/** The job's `tracestate` if it is a plausible header value, else undefined. */
function validTracestate(value: string | undefined): string | undefined {
  if (value === undefined || value.length > MAX_TRACESTATE) return undefined;
  return TRACESTATE.test(value) ? value : undefined;
}

/** The job's enqueue time (ms since the epoch) if it is a plain integer within reach of this host's clock. */
function validEnqueueTime(value: string | undefined, now: number): number | undefined {
  if (value === undefined || !/^\d{1,15}$/.test(value)) return undefined;
  const at = Number(value);
  return at > 0 && at <= now + MAX_CLOCK_SKEW_MS ? Math.min(at, now) : undefined;
}

interface JobKey {
  task: number;
  rollout: number;
  attempt: number;
  agent: string;
}

interface JobTrace {
  /** What the job's `/run` request carries: the worker span (or, untraced, the collector's span) as parent. */
  readonly headers: { traceparent?: string; tracestate?: string };
  /** The job was answered with `row`. */
  finish(row: Row, route: string): void;
  /** The job went back to the queue without an answer (its agent never took it) or the worker failed on it. */
  abandon(outcome: string): void;
}

export class WorkerTraces {
  private readonly host = os.hostname();

  private constructor(
    private readonly id: string,
    private readonly tracer: RolloutTracer,
  ) {}

  static async open(workerId: string): Promise<WorkerTraces> {
    return new WorkerTraces(workerId, await rolloutTracer('tsgym-worker'));
  }

  /** Called the moment the worker took the job. */
  begin(key: JobKey, data: JobData): JobTrace {
    const parent = parseTraceparent(data.traceparent);
    const tracestate = parent ? validTracestate(data.tracestate) : undefined;
    // Without a worker span the collector's span goes on as it came, if it is well-formed.
    const passedOn = (): JobTrace['headers'] =>
      parent ? { traceparent: data.traceparent!.trim(), ...(tracestate ? { tracestate } : {}) } : {};
    const logging = jsonLogs();
    // The hot path when nothing is observed.
    if (!this.tracer.exporting && !logging)
      return { headers: passedOn(), finish: () => undefined, abandon: () => undefined };
    const startedAt = performance.now();
    const attributes = {
      'gym.task_index': key.task,
      'gym.rollout_index': key.rollout,
      'gym.attempt': key.attempt,
      'gym.agent': key.agent,
      'gym.worker_id': this.id,
      'gym.worker_host': this.host,
    };
    let span: HopSpan | undefined;
    if (parent && this.tracer.exporting) {
      const rollout: SpanParent = { traceId: parent.traceId, spanId: parent.spanId };
      const now = Date.now();
      const enqueuedAt = validEnqueueTime(data.enqueuedAt, now);
      if (enqueuedAt !== undefined)
        this.tracer.start('queue wait', rollout, 'internal', attributes, enqueuedAt).end(undefined, now);
      span = this.tracer.start('worker', rollout, 'client', attributes);
    }
    const headers = span ? span.headers(tracestate) : passedOn();
    const end = (outcome: string, failed: boolean, reward: number | undefined, finished: boolean): void => {
      if (span) {
        span.setAttributes({ 'gym.outcome_class': outcome, ...(reward !== undefined ? { 'gym.reward': reward } : {}) });
        span.end(failed ? outcome : undefined);
      }
      if (logging && finished)
        logEvent('worker', failed ? 'warn' : 'info', 'job finished', {
          trace_id: parent?.traceId,
          task_index: key.task,
          rollout_index: key.rollout,
          attempt: key.attempt,
          agent: key.agent,
          worker: this.id,
          outcome,
          duration_ms: Math.round(performance.now() - startedAt),
        });
    };
    return {
      headers,
      finish: (row, route) => {
        const outcome = outcomeClassOf(row, route);
        end(outcome, route === 'failures', typeof row.reward === 'number' ? row.reward : undefined, true);
      },
      abandon: (outcome) => end(outcome, true, undefined, false),
    };
  }
}
