/**
 * The reply a handler returns, and its encoding into status, headers and payload: written to a connection, or joined
 * for an in-process caller. A reply that cannot be encoded becomes a 500 saying why; one that cannot be written is
 * answered 500 when its headers have not gone out yet, and otherwise dropped with its connection.
 */
import http from 'node:http';
import { describeThrown } from './thrown.js';
import { exactUtf8 } from './utf8.js';

export interface GymReply {
  status?: number;
  /** JSON-encoded into the body. */
  body?: unknown;
  /**
   * Sent as-is instead of `body`. A list of buffers is sent one after the other in one write: a large reply made of
   * parts (a body with fields spliced in) goes out without being joined into one more copy first.
   */
  raw?: string | Buffer | readonly Buffer[];
  /**
   * Sent chunk by chunk as it yields, instead of `body`/`raw` (chunked encoding, no Content-Length): a relay of an
   * upstream's server-sent events, never buffered whole. The iterator is returned early when the client goes away.
   */
  stream?: AsyncIterable<Buffer>;
  contentType?: string;
  headers?: Record<string, string>;
  setCookies?: string[];
}

interface EncodedReply {
  status: number;
  headers: http.OutgoingHttpHeaders;
  payload: string | Buffer | readonly Buffer[];
}

/** An in-process reply: its payload in one piece, as a client reading it from a connection would have it. */
export interface InjectedReply extends EncodedReply {
  payload: string | Buffer;
}

/** Where a failure to encode or write a reply is reported (the request's error hook, or stderr). */
type ReportFailure = (err: unknown) => void;

/** Throws when the body cannot be encoded (a cycle, a BigInt, nesting deeper than the stack). */
export function encodeReply(reply: GymReply): EncodedReply {
  const payload =
    reply.raw !== undefined
      ? reply.raw
      : reply.body === undefined
        ? ''
        : exactUtf8(JSON.stringify(reply.body) ?? 'null');
  const headers: http.OutgoingHttpHeaders = {
    'content-type': reply.contentType ?? 'application/json',
    'content-length': byteLength(payload),
    ...reply.headers,
  };
  if (reply.setCookies && reply.setCookies.length > 0) headers['set-cookie'] = reply.setCookies;
  return { status: reply.status ?? 200, headers, payload };
}

/** The reply encoded, or, when it cannot be, a 500 saying why that keeps its cookies (as on every other reply, Q3). */
export function encodeOrExplain(reply: GymReply, report: ReportFailure): EncodedReply {
  try {
    return encodeReply(reply);
  } catch (err) {
    report(err);
    return encodeReply({
      status: 500,
      body: `the reply could not be built: ${describeThrown(err)}`,
      ...(reply.setCookies ? { setCookies: reply.setCookies } : {}),
    });
  }
}

function unwritableReply(err: unknown): EncodedReply {
  return encodeReply({ status: 500, body: `the reply could not be written: ${describeThrown(err)}` });
}

/** Write an encoded reply; one that cannot be written is answered 500 instead while possible, else dropped. */
export function writeReply(res: http.ServerResponse, encoded: EncodedReply, report: ReportFailure): void {
  try {
    res.writeHead(encoded.status, encoded.headers);
    if (!inParts(encoded.payload)) res.end(encoded.payload);
    else {
      // Corked, the parts leave in one writev; `end` uncorks.
      res.cork();
      for (const part of encoded.payload) res.write(part);
      res.end();
    }
  } catch (err) {
    // Invalid header bytes from a handler, or a socket that failed mid-write: only this request is lost.
    report(err);
    if (!res.headersSent) {
      try {
        const fallback = unwritableReply(err);
        res.writeHead(fallback.status, fallback.headers);
        res.end(fallback.payload);
        return;
      } catch {
        // fall through to destroy
      }
    }
    res.destroy();
  }
}

/**
 * An encoded reply as an in-process caller receives it, after the header checks `writeHead` would make; one whose
 * headers would not pass is a 500 without them (throwing when even that fails: over HTTP the connection is dropped).
 */
export function injectedReply(encoded: EncodedReply, report: ReportFailure): InjectedReply {
  try {
    return joined(checkHeaders(encoded));
  } catch (err) {
    report(err);
    return joined(checkHeaders(unwritableReply(err)));
  }
}

/** The header checks `writeHead` makes (a bad header name or value throws). */
function checkHeaders(encoded: EncodedReply): EncodedReply {
  for (const name in encoded.headers) {
    http.validateHeaderName(name);
    const value = encoded.headers[name]!;
    if (Array.isArray(value)) for (const item of value) http.validateHeaderValue(name, item);
    else http.validateHeaderValue(name, String(value));
  }
  return encoded;
}

function inParts(payload: EncodedReply['payload']): payload is readonly Buffer[] {
  return typeof payload !== 'string' && !Buffer.isBuffer(payload);
}

function byteLength(payload: EncodedReply['payload']): number {
  if (!inParts(payload)) return Buffer.byteLength(payload);
  let size = 0;
  for (const part of payload) size += part.length;
  return size;
}

/** The payload in one piece. */
export function joined(encoded: EncodedReply): InjectedReply {
  const { payload } = encoded;
  return inParts(payload) ? { ...encoded, payload: Buffer.concat(payload) } : { ...encoded, payload };
}

/**
 * Write a streaming reply: headers at once, then each chunk as the stream yields it, waiting for the socket to drain
 * when it is full. A client that goes away ends the iteration (the stream's `return` runs, so its source can stop);
 * a stream that throws after the headers went out destroys the connection, so the client sees a cut, never a
 * well-formed end.
 */
export async function writeStream(
  res: http.ServerResponse,
  reply: GymReply & { stream: AsyncIterable<Buffer> },
  report: ReportFailure,
): Promise<void> {
  const headers: http.OutgoingHttpHeaders = {
    'content-type': reply.contentType ?? 'text/event-stream',
    ...reply.headers,
  };
  if (reply.setCookies && reply.setCookies.length > 0) headers['set-cookie'] = reply.setCookies;
  // Pulled by hand, and always at least once: a source that keeps state until it ends (a model call's record) runs
  // its cleanup even when the client left before the first chunk.
  const iterator = reply.stream[Symbol.asyncIterator]();
  try {
    if (!res.destroyed) {
      res.writeHead(reply.status ?? 200, headers);
      res.flushHeaders();
    }
    for (;;) {
      const next = await iterator.next();
      if (next.done || res.destroyed) break;
      if (!res.write(next.value)) await drainedOrClosed(res);
    }
    if (!res.destroyed) res.end();
  } catch (err) {
    report(err);
    res.destroy();
  } finally {
    await iterator.return?.(undefined);
  }
}

function drainedOrClosed(res: http.ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.once('drain', done);
    res.once('close', done);
  });
}

/** A streaming reply collected into one buffer: for an in-process caller, which reads a reply whole anyway. */
export async function collectStream(reply: GymReply & { stream: AsyncIterable<Buffer> }): Promise<GymReply> {
  const chunks: Buffer[] = [];
  for await (const chunk of reply.stream) chunks.push(chunk);
  const { stream: _stream, ...rest } = reply;
  return { ...rest, contentType: reply.contentType ?? 'text/event-stream', raw: Buffer.concat(chunks) };
}
