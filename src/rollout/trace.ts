/**
 * One rollout's trace on the agent side (D25): the agent's `rollout` span continues the caller's `traceparent` (a
 * caller without one, e.g. NeMo Gym's collector, starts a fresh trace), and every hop of the rollout — seed, each
 * service call, each tool, verify — is a child span whose id goes out in that request's `traceparent`, with the
 * caller's `tracestate` passed through unchanged. Exported only when OTEL_* asks (src/tracing/spans.ts); otherwise
 * a hop costs one random span id. Attributes hold indices, names, classes, rewards and token counts only. The same
points feed the agent's Prometheus metrics (src/prometheus/metrics.ts): rollouts in flight and finished by outcome
class, hop latencies, service status codes, overload retries.
 */
import { performance } from 'node:perf_hooks';
import { agentMetrics, observeHop, statusLabel } from '../prometheus/metrics.js';
import { NG } from '../runfiles/ng-keys.js';
import type { Row } from '../runfiles/row.js';
import { newSpanId, newTraceId, parseTraceparent } from '../runfiles/trace-context.js';
import type { HopSpan, RolloutTracer, SpanAttributes } from '../tracing/types.js';
import { rolloutBaggage, type RolloutKeys } from '../logging/baggage.js';
import { jsonLogs, logEvent } from '../logging/log.js';

export interface TraceHeaders {
  traceparent?: string | string[] | undefined;
  tracestate?: string | string[] | undefined;
}

const single = (value: string | string[] | undefined): string | undefined =>
  Array.isArray(value) ? value.join(',') : value;

export class RolloutTrace {
  readonly rollout: HopSpan;
  private readonly tracestate: string | undefined;
  /** The reward `/verify` returned, once it did. */
  reward: number | undefined;
  private serviceCalls = 0;
  private inputTokens = 0;
  private outputTokens = 0;
  /** json logs only (src/logging/log.ts): the rollout's keys, their `baggage` for each hop, and when it began. */
  private readonly logged: { keys: RolloutKeys; baggage: string; agent: string; startedAt: number } | undefined;

  constructor(
    private readonly tracer: RolloutTracer,
    headers: TraceHeaders,
    row: Row,
    names: { agent: string; environment: string },
  ) {
    const parent = parseTraceparent(single(headers.traceparent));
    // A tracestate without a valid traceparent is dropped (W3C §3.3).
    this.tracestate = parent ? single(headers.tracestate) : undefined;
    const attributes: SpanAttributes = { 'gym.agent': names.agent, 'gym.environment': names.environment };
    const task = row[NG.taskIndex];
    const rollout = row[NG.rolloutIndex];
    const attempt = row[NG.attemptIndex];
    if (typeof task === 'number') attributes['gym.task_index'] = task;
    if (typeof rollout === 'number') attributes['gym.rollout_index'] = rollout;
    attributes['gym.attempt'] = typeof attempt === 'number' ? attempt : 0;
    this.rollout = tracer.start(
      'rollout',
      parent ?? { traceId: newTraceId(), spanId: newSpanId() },
      'server',
      attributes,
    );
    agentMetrics.inFlight.inc();
    if (jsonLogs()) {
      const keys: RolloutKeys = {
        task_index: attributes['gym.task_index'] as number | undefined,
        rollout_index: attributes['gym.rollout_index'] as number | undefined,
        attempt: attributes['gym.attempt'],
      };
      this.logged = { keys, baggage: rolloutBaggage(keys), agent: names.agent, startedAt: performance.now() };
    }
  }

  get traceId(): string {
    return this.rollout.traceId;
  }

  /** A client span for one request of the rollout; `headers()` gives what that request carries. */
  hop(name: string, attributes?: SpanAttributes): { span: HopSpan; headers: Record<string, string> } {
    const span = this.tracer.start(name, this.rollout, 'client', attributes);
    const headers = span.headers(this.tracestate);
    if (this.logged?.baggage) headers.baggage = this.logged.baggage;
    return { span: new TimedHop(span, hopKind(name)), headers };
  }

  /** The status of a service response (for `gym_agent_service_responses_total`). */
  serviceStatus(status: number | undefined): void {
    agentMetrics.serviceResponses.inc({ status_code: statusLabel(status) });
  }

  /** A service call sent again after a 429/503 with Retry-After. */
  overloadRetry(): void {
    agentMetrics.retries.inc({ kind: 'overload' });
  }

  /** The next service call's span (`service call k`, k counting from 1). */
  serviceCall(): { span: HopSpan; headers: Record<string, string> } {
    this.serviceCalls++;
    return this.hop(`service call ${this.serviceCalls}`, { 'gym.step': this.serviceCalls });
  }

  /** Token usage the service reported on a step, in OpenTelemetry's GenAI attribute names. */
  usage(span: HopSpan, usage: { input_tokens?: unknown; output_tokens?: unknown } | null | undefined): void {
    if (!usage || !this.tracer.exporting) return;
    const input = typeof usage.input_tokens === 'number' ? usage.input_tokens : undefined;
    const output = typeof usage.output_tokens === 'number' ? usage.output_tokens : undefined;
    if (input !== undefined) {
      span.setAttributes({ 'gen_ai.usage.input_tokens': input });
      this.inputTokens += input;
    }
    if (output !== undefined) {
      span.setAttributes({ 'gen_ai.usage.output_tokens': output });
      this.outputTokens += output;
    }
  }

  /** Ends the rollout span with its outcome. */
  finish(outcome: { failureClass?: string; terminal?: boolean; reward: number; error?: string }): void {
    this.rollout.setAttributes({
      'gym.outcome_class': outcome.failureClass ?? 'completed',
      'gym.reward': outcome.reward,
      'gym.service_calls': this.serviceCalls,
      'gen_ai.usage.input_tokens': this.inputTokens,
      'gen_ai.usage.output_tokens': this.outputTokens,
      ...(outcome.terminal ? { 'gym.failure_terminal': true } : {}),
    });
    this.rollout.end(outcome.error);
    agentMetrics.inFlight.dec();
    agentMetrics.finished.inc({ outcome_class: outcome.failureClass ?? 'completed' });
    if (this.logged) {
      logEvent(this.logged.agent, outcome.failureClass ? 'warn' : 'info', 'run served', {
        trace_id: this.traceId,
        ...this.logged.keys,
        outcome: outcome.failureClass ?? 'completed',
        terminal: outcome.terminal,
        error_code: outcome.error,
        reward: outcome.reward,
        service_calls: this.serviceCalls,
        duration_ms: Math.round(performance.now() - this.logged.startedAt),
      });
    }
  }
}

function hopKind(name: string): string {
  if (name.startsWith('service call')) return 'service_call';
  if (name.startsWith('tool ')) return 'tool';
  return name; // seed, verify
}

/** A hop's span that also feeds its duration to `gym_agent_hop_duration_seconds` when it ends. */
class TimedHop implements HopSpan {
  private readonly startedAt = performance.now();
  constructor(
    private readonly span: HopSpan,
    private readonly kind: string,
  ) {}
  get traceId(): string {
    return this.span.traceId;
  }
  get spanId(): string {
    return this.span.spanId;
  }
  headers(tracestate?: string): Record<string, string> {
    return this.span.headers(tracestate);
  }
  setAttributes(attributes: SpanAttributes): void {
    this.span.setAttributes(attributes);
  }
  end(error?: string): void {
    observeHop(this.kind, (performance.now() - this.startedAt) / 1000);
    this.span.end(error);
  }
}
