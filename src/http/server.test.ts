import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, it } from 'node:test';
import { z } from 'zod';
import { request } from './client.js';
import { App, ClientGone, HttpError, parseBody, type Listening } from './server.js';

/** An upper bound on one loopback exchange: generous, so a busy machine is never mistaken for a broken server. */
const REQUEST_TIMEOUT_MS = 30_000;

describe('http server', () => {
  let listening: Listening;
  const errors: unknown[] = [];

  before(async () => {
    const app = new App({ maxBodyBytes: 1024, onError: (err) => errors.push(err) });
    app.get('/', () => ({ body: { status: 'ok' } }));
    app.post('/count', (req) => ({ body: parseBody(z.object({ count: z.int() }), req) }));
    app.post('/boom', () => {
      throw new TypeError('bad thing');
    });
    app.post('/teapot', () => {
      throw new HttpError(418, 'short and stout');
    });
    app.post('/echo', (req) => ({ body: { got: req.json() ?? null } }));
    app.get('/deep-reply', () => ({ body: deepObject(100_000) }));
    app.get('/cyclic-reply', () => {
      const cycle: Record<string, unknown> = {};
      cycle.self = cycle;
      return { body: cycle };
    });
    app.get('/bad-header', () => ({ body: 'x', headers: { 'x-bad': 'line\nbreak' } }));
    app.get('/parts', () => ({ raw: [Buffer.from('{"a":'), Buffer.from('"é"'), Buffer.from(',"b":2}')] }));
    listening = await app.listen(0, '127.0.0.1');
    served = app;
  });
  after(() => listening.close());
  let served: App;

  it('sends a reply given as parts as their concatenation, over HTTP and in process, with its length', async () => {
    const res = await request(`${listening.url}/parts`, { timeoutMs: REQUEST_TIMEOUT_MS });
    assert.equal(res.status, 200);
    assert.equal(res.headers['content-length'], '16');
    assert.equal(res.text(), '{"a":"é","b":2}');
    const injected = await served.inject({
      method: 'GET',
      url: '/parts',
      headers: {},
      body: Buffer.alloc(0),
      clientGone: new ClientGone(),
    });
    assert.equal(injected.headers['content-length'], 16);
    assert.equal(injected.payload.toString(), '{"a":"é","b":2}');
  });

  it('answers an unknown path with 404 {"detail":"Not Found"}', async () => {
    const res = await request(`${listening.url}/nowhere`, { method: 'POST', json: {}, timeoutMs: REQUEST_TIMEOUT_MS });
    assert.equal(res.status, 404);
    assert.deepEqual(res.json(), { detail: 'Not Found' });
  });

  it('answers HEAD on a GET route with the GET status and no body', async () => {
    const head = (path: string) =>
      new Promise<{ status: number; bytes: number }>((resolve, reject) => {
        const req = http.request(`${listening.url}${path}`, { method: 'HEAD' }, (res) => {
          let bytes = 0;
          res.on('data', (chunk: Buffer) => (bytes += chunk.length));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes }));
        });
        req.on('error', reject);
        req.end();
      });
    assert.deepEqual(await head('/'), { status: 200, bytes: 0 });
    assert.equal((await head('/count')).status, 405);
  });

  it('answers a known path with the wrong method with 405', async () => {
    const res = await request(`${listening.url}/count`, { timeoutMs: REQUEST_TIMEOUT_MS });
    assert.equal(res.status, 405);
    assert.deepEqual(res.json(), { detail: 'Method Not Allowed' });
  });

  it('answers an invalid body with 422 whose detail names the field', async () => {
    const res = await request(`${listening.url}/count`, { json: { count: 'three' }, timeoutMs: REQUEST_TIMEOUT_MS });
    assert.equal(res.status, 422);
    const detail = (res.json() as { detail: Array<{ loc: unknown[]; msg: string }> }).detail;
    assert.deepEqual(detail[0]!.loc, ['body', 'count']);
    assert.match(detail[0]!.msg, /count/);
  });

  it('answers a missing field with 422 naming it', async () => {
    const res = await request(`${listening.url}/count`, { json: {}, timeoutMs: REQUEST_TIMEOUT_MS });
    assert.equal(res.status, 422);
    assert.deepEqual((res.json() as { detail: Array<{ loc: unknown[] }> }).detail[0]!.loc, ['body', 'count']);
  });

  it('accepts a valid body', async () => {
    const res = await request(`${listening.url}/count`, { json: { count: 3 }, timeoutMs: REQUEST_TIMEOUT_MS });
    assert.equal(res.status, 200);
    assert.deepEqual(res.json(), { count: 3 });
  });

  it('answers malformed JSON with 400 and the parser reason', async () => {
    const res = await request(`${listening.url}/echo`, { jsonText: '{"a":', timeoutMs: REQUEST_TIMEOUT_MS });
    assert.equal(res.status, 400);
    assert.match((res.json() as { detail: string }).detail, /not valid JSON/);
  });

  it('answers a body over the limit (declared length) with 413', async () => {
    const res = await request(`${listening.url}/echo`, {
      json: { pad: 'x'.repeat(4096) },
      timeoutMs: REQUEST_TIMEOUT_MS,
    });
    assert.equal(res.status, 413);
    assert.match((res.json() as { detail: string }).detail, /too large/);
  });

  it('answers a chunked body that grows over the limit with 413', async () => {
    const { port } = new URL(listening.url);
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, path: '/echo', method: 'POST' }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.setHeader('transfer-encoding', 'chunked');
      req.write('x'.repeat(800));
      req.end('y'.repeat(800));
    });
    assert.equal(status, 413);
  });

  it('answers an unexpected handler error with 500 and a JSON string naming it, and reports it', async () => {
    const res = await request(`${listening.url}/boom`, { json: {}, timeoutMs: REQUEST_TIMEOUT_MS });
    assert.equal(res.status, 500);
    assert.equal(res.json(), 'TypeError: bad thing');
    assert.ok(errors.some((err) => err instanceof TypeError && err.message === 'bad thing'));
  });

  it('turns an HttpError into its status with a {"detail"} body, not a 500', async () => {
    const res = await request(`${listening.url}/teapot`, { json: {}, timeoutMs: REQUEST_TIMEOUT_MS });
    assert.equal(res.status, 418);
    assert.deepEqual(res.json(), { detail: 'short and stout' });
  });

  it('D19: a reply that cannot be encoded is a 500 for that request only, naming why; the server keeps serving', async () => {
    for (const path of ['/deep-reply', '/cyclic-reply']) {
      const res = await request(`${listening.url}${path}`, { timeoutMs: REQUEST_TIMEOUT_MS });
      assert.equal(res.status, 500, path);
      assert.match(res.json() as string, /the reply could not be built: (RangeError|TypeError)/, path);
    }
    const res = await request(`${listening.url}/bad-header`, { timeoutMs: REQUEST_TIMEOUT_MS });
    assert.equal(res.status, 500);
    assert.match(res.json() as string, /the reply could not be written/);
    const after = await request(`${listening.url}/`, { timeoutMs: REQUEST_TIMEOUT_MS });
    assert.deepEqual(after.json(), { status: 'ok' });
  });

  it("D19: a request body nested deeper than 520 levels (512 and Gym's envelopes) answers 400 saying so", async () => {
    const small = new App({ onError: (err) => errors.push(err) });
    small.post('/echo', (req) => ({ body: { got: req.json() ?? null } }));
    const server = await small.listen(0, '127.0.0.1');
    try {
      const deep = await request(`${server.url}/echo`, {
        jsonText: '['.repeat(521) + ']'.repeat(521),
        timeoutMs: REQUEST_TIMEOUT_MS,
      });
      assert.equal(deep.status, 400);
      assert.match((deep.json() as { detail: string }).detail, /nested deeper than 520 levels/);
      const ok = await request(`${server.url}/echo`, {
        jsonText: '['.repeat(519) + ']'.repeat(519),
        timeoutMs: REQUEST_TIMEOUT_MS,
      });
      assert.equal(ok.status, 200);
    } finally {
      await server.close();
    }
  });

  it('runs middleware around 404s as well as routes', async () => {
    const app = new App();
    app.use(async (_req, next) => {
      const reply = await next();
      return { ...reply, headers: { ...reply.headers, 'x-wrapped': 'yes' } };
    });
    const server = await app.listen(0, '127.0.0.1');
    try {
      const res = await request(`${server.url}/missing`, { timeoutMs: REQUEST_TIMEOUT_MS });
      assert.equal(res.status, 404);
      assert.equal(res.headers['x-wrapped'], 'yes');
    } finally {
      await server.close();
    }
  });
});

function deepObject(depth: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = { a: value };
  return value;
}
