/**
 * The collector's side of a rollout's trace (D25): one root `rollout` span per attempt, whose trace id is derived
 * from the run's salt (src/runfiles/trace-context.ts) and whose span id is the parent named in the `/run` request's
 * `traceparent`. The salt is kept in `<stem>_status.json`; a resumed run reuses it, so every row of the run, from any
 * session, has its trace id derivable by `gym eval explain`. A failure row carries it as `_ng_trace_id`; a success
 * row never does (C4).
 */
import { existsSync, readFileSync } from 'node:fs';
import { isPlainObject } from '../config/types.js';
import { rewardOf } from '../runfiles/outcomes.js';
import { failureClassOf, outcomeClassOf, type Row } from '../runfiles/row.js';
import { NG } from '../runfiles/ng-keys.js';
import { newTraceSalt, traceIdOf } from '../runfiles/trace-context.js';
import { flushTracing, rolloutTracer } from '../tracing/spans.js';
import type { HopSpan, RolloutTracer } from '../tracing/types.js';
import { jsonLogs, logEvent } from '../logging/log.js';

interface Begun {
  task: number;
  rollout: number;
  attempt: number;
  agent: string;
  startedAt: number;
}

/** The salt a previous session of this run wrote into its status file, if any. */
function previousSalt(statusPath: string): string | undefined {
  if (!existsSync(statusPath)) return undefined;
  try {
    const status: unknown = JSON.parse(readFileSync(statusPath, 'utf8'));
    const salt = isPlainObject(status) ? status.trace_salt : undefined;
    return typeof salt === 'string' && /^[0-9a-f]{32}$/.test(salt) ? salt : undefined;
  } catch {
    return undefined;
  }
}

export class CollectorTraces {
  /** json logs only: what each attempt's `rollout finished` event needs (src/logging/log.ts). */
  private readonly begun = new WeakMap<HopSpan, Begun>();

  private constructor(
    readonly salt: string,
    private readonly tracer: RolloutTracer,
  ) {}

  static async open(statusPath: string, resuming: boolean): Promise<CollectorTraces> {
    const salt = (resuming ? previousSalt(statusPath) : undefined) ?? newTraceSalt();
    return new CollectorTraces(salt, await rolloutTracer('tsgym-collector'));
  }

  /** The attempt's root span; `headers()` is what its `/run` request carries. */
  begin(job: { task: number; rollout: number; attempt: number; agent: string }): HopSpan {
    const span = this.tracer.startRoot('rollout', traceIdOf(this.salt, job.task, job.rollout, job.attempt), 'client', {
      'gym.task_index': job.task,
      'gym.rollout_index': job.rollout,
      'gym.attempt': job.attempt,
      'gym.agent': job.agent,
    });
    if (jsonLogs()) this.begun.set(span, { ...job, startedAt: performance.now() });
    return span;
  }

  /** Ends the span with the result's outcome; a failure row gets the trace id. */
  settle(span: HopSpan, result: Row, route: string): void {
    if (route === 'failures') result[NG.traceId] = span.traceId;
    const begun = jsonLogs() ? this.begun.get(span) : undefined;
    if (begun) logRollout(span.traceId, begun, result, route);
    if (!this.tracer.exporting) return;
    span.setAttributes({
      'gym.outcome_class': outcomeClassOf(result, route),
      'gym.reward': rewardOf(result),
    });
    span.end(failureClassOf(result));
  }

  /** Sends the buffered spans (bounded in time) before the command exits. */
  shutdown(): Promise<void> {
    return flushTracing();
  }
}

/** The collector's event for one finished attempt: enough to follow it by its trace id, nothing of its content. */
function logRollout(traceId: string, begun: Begun, result: Row, route: string): void {
  logEvent('collector', failureClassOf(result) ? 'warn' : 'info', 'rollout finished', {
    trace_id: traceId,
    task_index: begun.task,
    rollout_index: begun.rollout,
    attempt: begun.attempt,
    agent: begun.agent,
    outcome: outcomeClassOf(result, route),
    terminal: route === 'failures' ? result[NG.failureTerminal] === true : undefined,
    reward: rewardOf(result),
    duration_ms: Math.round(performance.now() - begun.startedAt),
  });
}
