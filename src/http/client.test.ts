import assert from 'node:assert/strict';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { callInternal, HttpTransportError, request, withRetries } from './client.js';
import { CookieJar } from './cookies.js';

/** An upper bound on one loopback exchange that must succeed: generous, so a busy machine is not a failure. */
const REQUEST_TIMEOUT_MS = 30_000;

/** A scripted loopback server: each path is one behaviour. */
function scriptedServer(): Promise<{ url: string; hits: Map<string, number>; close(): Promise<void> }> {
  const hits = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const path = req.url ?? '/';
    hits.set(path, (hits.get(path) ?? 0) + 1);
    switch (path) {
      case '/hang':
        return; // never answers
      case '/stall-body':
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"partial":');
        return; // headers sent, body never finishes
      case '/big':
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ pad: 'x'.repeat(4096) }));
        return;
      case '/redirect':
        res.writeHead(302, { location: '/target' });
        res.end();
        return;
      case '/cookies':
        res.writeHead(200, { 'content-type': 'application/json', 'set-cookie': ['s=new; Path=/', 'gone=; Max-Age=0'] });
        res.end(JSON.stringify({ cookie: req.headers.cookie ?? null }));
        return;
      default:
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ path }));
    }
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      resolve({
        url: `http://127.0.0.1:${port}`,
        hits,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            server.closeAllConnections();
          }),
      });
    });
  });
}

/** A port nothing listens on: bound, then released. */
function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

async function failure(promise: Promise<unknown>): Promise<HttpTransportError> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof HttpTransportError, `expected an HttpTransportError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected the request to fail');
}

describe('http client', () => {
  let server: Awaited<ReturnType<typeof scriptedServer>>;
  before(async () => {
    server = await scriptedServer();
  });
  after(() => server.close());

  it('fails with kind "timeout" when no answer comes within the deadline', async () => {
    const err = await failure(request(`${server.url}/hang`, { timeoutMs: 100 }));
    assert.equal(err.kind, 'timeout');
    assert.match(err.message, /timed out after 0.1s/);
    assert.equal(err.errorClass, 'retryable');
  });

  it('fails with kind "timeout" when headers arrive and the body stalls', async () => {
    // The headers must arrive before the deadline fires for this to be the case under test (phase 'body'); on a
    // machine too busy for that, the attempt is repeated with a longer deadline, and fails loudly if it never is.
    let err: HttpTransportError | undefined;
    for (const timeoutMs of [150, 2_000, 10_000]) {
      err = await failure(request(`${server.url}/stall-body`, { timeoutMs }));
      assert.equal(err.kind, 'timeout');
      if (err.phase === 'body') break;
    }
    assert.equal(err!.phase, 'body', 'the deadline fired before the headers arrived, on every attempt');
  });

  it('fails with kind "connect" on a closed port', async () => {
    const port = await closedPort();
    const err = await failure(request(`http://127.0.0.1:${port}/`, { timeoutMs: REQUEST_TIMEOUT_MS }));
    assert.equal(err.kind, 'connect');
    assert.equal(err.url, `http://127.0.0.1:${port}/`);
  });

  it('fails with kind "too_large" when the body exceeds maxBodyBytes', async () => {
    const err = await failure(request(`${server.url}/big`, { timeoutMs: REQUEST_TIMEOUT_MS, maxBodyBytes: 1024 }));
    assert.equal(err.kind, 'too_large');
    assert.match(err.message, /too large/);
  });

  it('reads a body at the limit', async () => {
    const res = await request(`${server.url}/big`, { timeoutMs: REQUEST_TIMEOUT_MS, maxBodyBytes: 8192 });
    assert.equal((res.json() as { pad: string }).pad.length, 4096);
  });

  it('never follows a redirect: the 3xx comes back and the target is not hit', async () => {
    const res = await request(`${server.url}/redirect`, { method: 'POST', json: {}, timeoutMs: REQUEST_TIMEOUT_MS });
    assert.equal(res.status, 302);
    assert.equal(res.headers.location, '/target');
    assert.equal(server.hits.get('/target'), undefined);
  });

  it('sends the jar as Cookie and merges the reply Set-Cookie into it', async () => {
    const jar = new CookieJar();
    jar.absorb(['s=old', 'gone=1', 'other=2']);
    const res = await request(`${server.url}/cookies`, { timeoutMs: REQUEST_TIMEOUT_MS, jar });
    assert.equal((res.json() as { cookie: string }).cookie, 's=old; gone=1; other=2');
    assert.deepEqual(res.setCookies, ['s=new; Path=/', 'gone=; Max-Age=0']);
    assert.deepEqual(jar.toJSON(), { s: 'new', other: '2' });
  });

  it('aborts when the caller signal fires, with kind "aborted"', async () => {
    const controller = new AbortController();
    const pending = request(`${server.url}/hang`, { timeoutMs: REQUEST_TIMEOUT_MS, signal: controller.signal });
    controller.abort();
    assert.equal((await failure(pending)).kind, 'aborted');
  });
});

describe('withRetries', () => {
  const connectError = (): HttpTransportError => new HttpTransportError('connect', 'http://x/', 'refused');

  it('stops after the attempt budget and rethrows the last error', async () => {
    let calls = 0;
    await assert.rejects(
      withRetries(
        () => {
          calls += 1;
          return Promise.reject(connectError());
        },
        { attempts: 3, delayMs: 1, retryOn: () => true },
      ),
      HttpTransportError,
    );
    assert.equal(calls, 3);
  });

  it('does not retry an error the policy rejects', async () => {
    let calls = 0;
    await assert.rejects(
      withRetries(
        () => {
          calls += 1;
          return Promise.reject(new Error('not retryable'));
        },
        { attempts: 5, delayMs: 1, retryOn: (err) => err instanceof HttpTransportError },
      ),
      /not retryable/,
    );
    assert.equal(calls, 1);
  });

  it('returns the first success', async () => {
    let calls = 0;
    const value = await withRetries(
      (index) => {
        calls += 1;
        return index < 2 ? Promise.reject(connectError()) : Promise.resolve('ok');
      },
      { attempts: 5, delayMs: 1, retryOn: () => true },
    );
    assert.equal(value, 'ok');
    assert.equal(calls, 3);
  });

  it('callInternal gives up on a closed port after its bounded attempts', async () => {
    const port = await closedPort();
    const started = Date.now();
    // Each attempt's deadline is far longer than the bound below: giving up must come from the refused connections
    // and the attempt budget (two attempts, one 250 ms pause), never from a deadline, however busy the machine is.
    const err = await failure(callInternal(`http://127.0.0.1:${port}/`, { timeoutMs: 120_000, attempts: 2 }));
    assert.equal(err.kind, 'connect');
    const elapsed = Date.now() - started;
    assert.ok(elapsed < 60_000, `gave up after ${elapsed} ms: it waited for a deadline instead of the attempt budget`);
  });
});
