/**
 * An OTLP/HTTP (JSON) trace receiver on loopback for the tracing tests: it decodes every export the processes under
 * test send to `<endpoint>/v1/traces` into flat spans (service name, ids, name, times, attributes) and answers 200.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** Milliseconds since the epoch. */
  start: number;
  end: number;
  attributes: Record<string, unknown>;
}

export interface OtlpReceiver {
  /** The base URL, as `OTEL_EXPORTER_OTLP_ENDPOINT` takes it. */
  endpoint: string;
  /** Every span received so far, in arrival order. */
  spans: ReceivedSpan[];
  /** The content types of the exports received (the SDK sends JSON). */
  contentTypes: string[];
  close(): Promise<void>;
}

type Attribute = { key: string; value: Record<string, unknown> };

function attributeValue(v: Record<string, unknown>): unknown {
  return v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : undefined) ?? v.doubleValue ?? v.boolValue;
}

// OTLP/JSON writes 64-bit nanoseconds as decimal strings (numbers are accepted too).
const millis = (nanos: unknown): number =>
  Number(BigInt(typeof nanos === 'string' || typeof nanos === 'number' ? nanos : 0) / 1_000_000n);

function decode(body: string, into: ReceivedSpan[]): void {
  const doc = JSON.parse(body) as {
    resourceSpans: Array<{
      resource: { attributes: Attribute[] };
      scopeSpans: Array<{ spans: Array<Record<string, unknown>> }>;
    }>;
  };
  for (const rs of doc.resourceSpans) {
    const name = rs.resource.attributes.find((a) => a.key === 'service.name');
    for (const scope of rs.scopeSpans)
      for (const span of scope.spans) {
        const attributes: Record<string, unknown> = {};
        for (const a of (span.attributes ?? []) as Attribute[]) attributes[a.key] = attributeValue(a.value);
        into.push({
          service: String(name ? attributeValue(name.value) : ''),
          traceId: String(span.traceId),
          spanId: String(span.spanId),
          parentSpanId: typeof span.parentSpanId === 'string' ? span.parentSpanId : '',
          name: String(span.name),
          start: millis(span.startTimeUnixNano),
          end: millis(span.endTimeUnixNano),
          attributes,
        });
      }
  }
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const contentTypes: string[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      if (req.url === '/v1/traces') {
        contentTypes.push(String(req.headers['content-type']));
        decode(body, spans);
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      } else res.writeHead(404).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    contentTypes,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
