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
let hangEntered = 0;
let clientGoneSeen = 0;

/** An upper bound on one exchange that must succeed: generous, so a busy machine is not a failure. */
const REQUEST_TIMEOUT_MS = 30_000;

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
    hangEntered++;
    // A client already gone when the handler starts (a deadline that fired first on a busy machine) counts too.
    await new Promise<void>((resolve) => {
      if (req.signal.aborted) resolve();
      else req.signal.addEventListener('abort', () => resolve(), { once: true });
    });
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
        results.push(observable(await call(path, { ...options, jar: jars[i]!, timeoutMs: REQUEST_TIMEOUT_MS })));
      }
      assert.deepEqual(results[1], results[0]);
      assert.deepEqual(jars[1]!.toJSON(), jars[0]!.toJSON(), 'the jar absorbed the same cookies');
    });
  }

  test('a caller header (e.g. traceparent) and the body headers reach the handler the same way', async () => {
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const headersOf = async (call: typeof http): Promise<Record<string, unknown>> => {
      seen.length = 0;
      await call('/echo', {
        json: {},
        headers: { traceparent, 'Content-Type': 'text/plain' },
        timeoutMs: REQUEST_TIMEOUT_MS,
      });
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
      errors.push(await failure(call('/big', { json: {}, jar, maxBodyBytes: 1_000, timeoutMs: REQUEST_TIMEOUT_MS })));
      assert.deepEqual(jar.toJSON(), {});
    }
    assert.deepEqual(errors[1], errors[0]);
    assert.equal(errors[0]!.kind, 'too_large');
  });

  test('the deadline: timeout with the same text, and the handler sees its client go away', async () => {
    const errors = [];
    for (const call of [http, local]) {
      // Over HTTP a deadline that fires before the request reached the server (a machine too busy to connect within
      // it) never reaches the handler, and the handler's side is half of what this checks: such an attempt is
      // repeated, a bounded number of times.
      for (let attempt = 1; ; attempt++) {
        const entered = hangEntered;
        const gone = clientGoneSeen;
        const err = await failure(call('/hang', { json: {}, timeoutMs: 500 }));
        const reached = await eventually(() => hangEntered > entered, {
          what: 'the timed-out request to reach the handler',
          timeoutMs: 5_000,
        }).then(
          () => true,
          () => false,
        );
        if (reached) {
          await eventually(() => clientGoneSeen > gone, {
            what: 'the handler to see its client go away',
            timeoutMs: 60_000,
          });
          errors.push(err);
          break;
        }
        assert.ok(
          attempt < 5,
          `the request never reached the handler within its 500 ms deadline in ${attempt} attempts`,
        );
      }
    }
    assert.deepEqual(errors[1], errors[0]);
    assert.equal(errors[0]!.kind, 'timeout');
    assert.match(errors[0]!.message, /^timed out after 0\.5s$/);
  });

  test("the caller's signal: aborted, before and during the call", async () => {
    for (const call of [http, local]) {
      const early = new AbortController();
      early.abort();
      assert.equal(
        (await failure(call('/echo', { json: {}, signal: early.signal, timeoutMs: REQUEST_TIMEOUT_MS }))).kind,
        'aborted',
      );
      const late = new AbortController();
      const pending = failure(call('/hang', { json: {}, signal: late.signal, timeoutMs: REQUEST_TIMEOUT_MS }));
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
    assert.equal((await call(`${other.url}/echo`, { json: {}, timeoutMs: REQUEST_TIMEOUT_MS })).status, 200);
    unregisterLocalServer(other.url);
    await other.close();
    const err = await failure(call(`${other.url}/echo`, { json: {}, timeoutMs: REQUEST_TIMEOUT_MS, attempts: 1 }));
    assert.equal(err.kind, 'connect');
  });
});
