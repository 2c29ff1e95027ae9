/**
 * The in-process transport against HTTP, side by side on one App (D23): for every exchange the same status, headers
 * the callers read, body, cookies and, for failures, the same error kind and text. The App also listens, so HTTP and
 * in-process reach the very same handlers.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { eventually, gate } from '../../test/support/wait.js';
import { callInternal, HttpTransportError, type HttpResponse, type InternalCallOptions } from './client.js';
import { CookieJar } from './cookies.js';
import { registerLocalServer, transportFor, unregisterLocalServer } from './in-process.js';
import { App, HttpError, type Listening } from './server.js';

const seen: Array<{ path: string; headers: Record<string, unknown> }> = [];
const released = gate();
let clientGoneSeen = 0;

function buildApp(): App {
  const app = new App({ maxBodyBytes: 1024 });
  app.use(async (req, next) => {
    seen.push({ path: req.path, headers: { ...req.headers } });
    const reply = await next();
    reply.setCookies = [...(reply.setCookies ?? []), `sid=${req.cookies.sid ?? 'new'}-${req.path.slice(1)}; Path=/`];
    reply.headers = { ...reply.headers, 'x-gym-server-boot': 'boot-1' };
    return reply;
  });
  app.post('/echo', (req) => ({ body: { got: req.json(), cookie: req.headers.cookie ?? null } }));
  app.get('/plain', () => ({ raw: 'plain text ✓', contentType: 'text/plain' }));
  app.post('/unprocessable', () => {
    throw new HttpError(422, [{ loc: ['body', 'count'], msg: 'count: expected int' }]);
  });
  app.post('/throws', () => {
    throw new TypeError('handler bug');
  });
  app.post('/unencodable', () => ({ body: { big: 1n } }));
  app.post('/bad-header', () => ({ body: {}, headers: { 'x-bad': 'line\nbreak' } }));
  app.post('/big', () => ({ body: { text: 'x'.repeat(5_000) } }));
  app.post('/hang', async (req) => {
    await new Promise<void>((resolve) => req.signal.addEventListener('abort', () => resolve(), { once: true }));
    clientGoneSeen++;
    await released.opened;
    return { body: {} };
  });
  return app;
}

let listening: Listening;
let http: (path: string, options: InternalCallOptions) => Promise<HttpResponse>;
let local: (path: string, options: InternalCallOptions) => Promise<HttpResponse>;

before(async () => {
  const app = buildApp();
  listening = await app.listen(0);
  registerLocalServer(listening.url, app);
  const viaLocal = transportFor(listening.url);
  http = (path, options) => callInternal(`${listening.url}${path}`, options);
  local = (path, options) => viaLocal(`${listening.url}${path}`, options);
});
after(async () => {
  released.open();
  unregisterLocalServer(listening.url);
  await listening.close();
});

/** What a caller can observe of a response (the date and connection headers are the socket's, not the server's). */
function observable(res: HttpResponse): unknown {
  const { date: _date, connection: _connection, 'keep-alive': _keepAlive, ...headers } = res.headers;
  return { status: res.status, headers, body: res.body.toString('utf8'), text: res.text(), setCookies: res.setCookies };
}

async function failure(call: Promise<HttpResponse>): Promise<{ kind: string; message: string; code: string }> {
  try {
    await call;
  } catch (err) {
    assert.ok(err instanceof HttpTransportError, String(err));
    return { kind: err.kind, message: err.message, code: err.code };
  }
  assert.fail('the call succeeded');
}

describe('in-process and HTTP answer alike', () => {
  for (const [name, path, options] of [
    ['a JSON POST with a cookie jar', '/echo', { json: { n: 1, s: 'é' } }],
    ['a GET with a text reply', '/plain', {}],
    ['a 404', '/nowhere', { json: {} }],
    ['a 405', '/echo', {}],
    ['a 422 from the handler', '/unprocessable', { json: {} }],
    ['a 500 from a handler that throws', '/throws', { json: {} }],
    ['a reply that cannot be encoded', '/unencodable', { json: {} }],
    ['a reply header that cannot be written', '/bad-header', { json: {} }],
    ['a request body over the server limit (413)', '/echo', { jsonText: JSON.stringify({ pad: 'y'.repeat(2_000) }) }],
    ['malformed JSON (400)', '/echo', { jsonText: '{"open": ' }],
  ] as const) {
    test(name, async () => {
      const jars = [new CookieJar(), new CookieJar()];
      const results = [];
      for (const [i, call] of [http, local].entries()) {
        jars[i]!.absorb(['sid=abc; Path=/']);
        results.push(observable(await call(path, { ...options, jar: jars[i]!, timeoutMs: 5_000 })));
      }
      assert.deepEqual(results[1], results[0]);
      assert.deepEqual(jars[1]!.toJSON(), jars[0]!.toJSON(), 'the jar absorbed the same cookies');
    });
  }

  test('a caller header (e.g. traceparent) and the body headers reach the handler the same way', async () => {
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const headersOf = async (call: typeof http): Promise<Record<string, unknown>> => {
      seen.length = 0;
      await call('/echo', { json: {}, headers: { traceparent, 'Content-Type': 'text/plain' }, timeoutMs: 5_000 });
      const { connection: _c, ...headers } = seen[0]!.headers;
      return headers;
    };
    const overHttp = await headersOf(http);
    const inProcess = await headersOf(local);
    assert.deepEqual(inProcess, overHttp);
    assert.equal(inProcess.traceparent, traceparent);
    assert.equal(inProcess['content-type'], 'application/json');
  });

  test('a reply over maxBodyBytes: too_large, same text, no cookies absorbed', async () => {
    const errors = [];
    for (const call of [http, local]) {
      const jar = new CookieJar();
      errors.push(await failure(call('/big', { json: {}, jar, maxBodyBytes: 1_000, timeoutMs: 5_000 })));
      assert.deepEqual(jar.toJSON(), {});
    }
    assert.deepEqual(errors[1], errors[0]);
    assert.equal(errors[0]!.kind, 'too_large');
  });

  test('the deadline: timeout with the same text, and the handler sees its client go away', async () => {
    const errors = [];
    for (const call of [http, local]) {
      const gone = clientGoneSeen;
      errors.push(await failure(call('/hang', { json: {}, timeoutMs: 50 })));
      await eventually(() => clientGoneSeen === gone + 1, { what: 'the handler to see its client go away' });
    }
    assert.deepEqual(errors[1], errors[0]);
    assert.equal(errors[0]!.kind, 'timeout');
    assert.match(errors[0]!.message, /^timed out after 0\.05s$/);
  });

  test("the caller's signal: aborted, before and during the call", async () => {
    for (const call of [http, local]) {
      const early = new AbortController();
      early.abort();
      assert.equal(
        (await failure(call('/echo', { json: {}, signal: early.signal, timeoutMs: 5_000 }))).kind,
        'aborted',
      );
      const late = new AbortController();
      const pending = failure(call('/hang', { json: {}, signal: late.signal, timeoutMs: 5_000 }));
      setImmediate(() => late.abort());
      const err = await pending;
      assert.equal(err.kind, 'aborted');
      assert.equal(err.message, 'request aborted');
    }
  });

  test('an unregistered server (its host stopping) is called over HTTP again: connection refused when it is gone', async () => {
    const app = buildApp();
    const other = await app.listen(0);
    registerLocalServer(other.url, app);
    const call = transportFor(other.url);
    assert.equal((await call(`${other.url}/echo`, { json: {}, timeoutMs: 5_000 })).status, 200);
    unregisterLocalServer(other.url);
    await other.close();
    const err = await failure(call(`${other.url}/echo`, { json: {}, timeoutMs: 5_000, attempts: 1 }));
    assert.equal(err.kind, 'connect');
  });
});
