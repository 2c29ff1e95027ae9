/**
 * Spans of a rollout (D25), exported over OTLP/HTTP by the OpenTelemetry SDK only when the standard variables ask for
 * it (`OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`; `OTEL_SDK_DISABLED=true` or
 * `OTEL_TRACES_EXPORTER=none` turn it off). Without them the SDK is never imported: a span is then only a fresh span
 * id to put in the next hop's `traceparent`, so a traced service still joins the rollout's trace. Attribute values
 * are chosen by the callers: keys, counts, names and classes only, never a secret or a dataset answer.
 */
import { newSpanId, traceparent } from '../runfiles/trace-context.js';
import type { HopSpan, RolloutTracer } from './types.js';

function hopHeaders(traceId: string, spanId: string, tracestate?: string): Record<string, string> {
  const headers: Record<string, string> = { traceparent: traceparent(traceId, spanId) };
  if (tracestate) headers.tracestate = tracestate;
  return headers;
}

class IdOnlySpan implements HopSpan {
  readonly spanId = newSpanId();
  constructor(readonly traceId: string) {}
  headers(tracestate?: string): Record<string, string> {
    return hopHeaders(this.traceId, this.spanId, tracestate);
  }
  setAttributes(): void {}
  end(): void {}
}

/** Tracing off: ids only, nothing recorded, nothing loaded. */
const ID_ONLY: RolloutTracer = {
  exporting: false,
  start: (_name, parent) => new IdOnlySpan(parent.traceId),
  startRoot: (_name, traceId) => new IdOnlySpan(traceId),
  shutdown: () => Promise.resolve(),
};

export function exportRequested(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  if (env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() === 'none') return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim());
}

/** One tracer per service name: a co-located agent and environment (D23) share a process but not a `service.name`. */
const loading = new Map<string, Promise<RolloutTracer>>();

/**
 * The tracer of one server in this process, loaded once: the SDK (dynamic import) when export is requested, else ids
 * only. `service` is the `service.name` resource attribute unless `OTEL_SERVICE_NAME` names one.
 */
export function rolloutTracer(service: string, env: NodeJS.ProcessEnv = process.env): Promise<RolloutTracer> {
  let tracer = loading.get(service);
  if (!tracer) {
    tracer = exportRequested(env) ? loadSdk(service, env) : Promise.resolve(ID_ONLY);
    loading.set(service, tracer);
  }
  return tracer;
}

async function loadSdk(service: string, env: NodeJS.ProcessEnv): Promise<RolloutTracer> {
  const { loadOtelTracer } = await import('./otel.js');
  return loadOtelTracer(env.OTEL_SERVICE_NAME?.trim() || service, hopHeaders);
}

/** At process end: send the spans still buffered (bounded to 2 s, so a dead collector cannot hold the exit). */
export async function flushTracing(): Promise<void> {
  const tracers = (await Promise.all(loading.values())).filter((tracer) => tracer.exporting);
  if (tracers.length === 0) return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    Promise.all(tracers.map((tracer) => tracer.shutdown().catch(() => undefined))),
    new Promise<void>((resolve) => (timer = setTimeout(resolve, 2000))),
  ]);
  clearTimeout(timer);
}
