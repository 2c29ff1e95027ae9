/** The shapes of ./spans.ts, apart so the SDK side (./otel.ts) can name them without importing spans.ts back. */
export type SpanAttributes = Record<string, string | number | boolean>;

/** Where a span hangs: the trace and the parent span (the span id of a received `traceparent`). */
export interface SpanParent {
  traceId: string;
  spanId: string;
}

export interface HopSpan {
  readonly traceId: string;
  readonly spanId: string;
  /** The `traceparent` (and `tracestate`) the hop's request carries: this span as the parent. */
  headers(tracestate?: string): Record<string, string>;
  setAttributes(attributes: SpanAttributes): void;
  /** Ends the span (at `endTime`, ms since the epoch, if given); with an error text its status is ERROR. */
  end(error?: string, endTime?: number): void;
}

export type SpanKind = 'internal' | 'server' | 'client';

export interface RolloutTracer {
  readonly exporting: boolean;
  /** A span under `parent`; with `parent` undefined a root span of trace `rootTraceId` (the collector's rollout). */
  /** `startTime` (ms since the epoch) backdates the span, for a wait measured by another process's clock. */
  start(name: string, parent: SpanParent, kind: SpanKind, attributes?: SpanAttributes, startTime?: number): HopSpan;
  startRoot(name: string, traceId: string, kind: SpanKind, attributes?: SpanAttributes): HopSpan;
  /** Sends what is buffered and stops the exporter (at process end). */
  shutdown(): Promise<void>;
}
