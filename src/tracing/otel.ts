/**
 * The OpenTelemetry side of ./spans.ts, imported only when export is requested: a tracer provider with a batch
 * processor and the OTLP/HTTP (JSON) exporter, which reads the standard `OTEL_EXPORTER_OTLP_*` and `OTEL_BSP_*`
 * variables itself. Root spans take the collector's derived trace id through the provider's id generator.
 */
import {
  ROOT_CONTEXT,
  SpanKind as OtelSpanKind,
  SpanStatusCode,
  TraceFlags,
  trace,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, RandomIdGenerator } from '@opentelemetry/sdk-trace-base';
import type { HopSpan, RolloutTracer, SpanAttributes, SpanKind, SpanParent } from './types.js';

const KINDS: Record<SpanKind, OtelSpanKind> = {
  internal: OtelSpanKind.INTERNAL,
  server: OtelSpanKind.SERVER,
  client: OtelSpanKind.CLIENT,
};

/** Random ids, except the trace id of the next root span when one is set (start is synchronous, so it cannot race). */
class DerivedRootIds extends RandomIdGenerator {
  next: string | undefined;
  override generateTraceId = (): string => {
    const id = this.next;
    this.next = undefined;
    return id ?? new RandomIdGenerator().generateTraceId();
  };
}

class OtelSpan implements HopSpan {
  readonly traceId: string;
  readonly spanId: string;
  constructor(
    private readonly span: Span,
    private readonly headersOf: (traceId: string, spanId: string, tracestate?: string) => Record<string, string>,
  ) {
    const context = span.spanContext();
    this.traceId = context.traceId;
    this.spanId = context.spanId;
  }
  headers(tracestate?: string): Record<string, string> {
    return this.headersOf(this.traceId, this.spanId, tracestate);
  }
  setAttributes(attributes: SpanAttributes): void {
    this.span.setAttributes(attributes);
  }
  end(error?: string, endTime?: number): void {
    if (error !== undefined) this.span.setStatus({ code: SpanStatusCode.ERROR, message: error });
    this.span.end(endTime);
  }
}

export function loadOtelTracer(
  service: string,
  headersOf: (traceId: string, spanId: string, tracestate?: string) => Record<string, string>,
): RolloutTracer {
  const ids = new DerivedRootIds();
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': service }),
    idGenerator: ids,
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  const tracer: Tracer = provider.getTracer('tsgym');
  return {
    exporting: true,
    start(name: string, parent: SpanParent, kind: SpanKind, attributes?: SpanAttributes, startTime?: number): HopSpan {
      const context = trace.setSpanContext(ROOT_CONTEXT, {
        traceId: parent.traceId,
        spanId: parent.spanId,
        traceFlags: TraceFlags.SAMPLED,
        isRemote: true,
      });
      return new OtelSpan(
        tracer.startSpan(
          name,
          {
            kind: KINDS[kind],
            ...(attributes ? { attributes } : {}),
            ...(startTime !== undefined ? { startTime } : {}),
          },
          context,
        ),
        headersOf,
      );
    },
    startRoot(name: string, traceId: string, kind: SpanKind, attributes?: SpanAttributes): HopSpan {
      ids.next = traceId;
      const span = tracer.startSpan(name, { kind: KINDS[kind], root: true, ...(attributes ? { attributes } : {}) });
      return new OtelSpan(span, headersOf);
    },
    shutdown: () => provider.shutdown(),
  };
}
