import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { placeholderResponse } from '../../src/contract/index.js';
import { request, type HttpResponse } from '../../src/http/client.js';
import type { Listening } from '../../src/http/server.js';
import { createCounterServer } from './app.js';

const COOKIE_NAME = 'StatefulCounterResourcesServer___counter_under_test';

/**
 * The counter environment over real HTTP, with a client that stores no cookies: each call passes the session
 * cookie it wants by hand, as the reference's own session test does.
 */
describe('counter environment', () => {
  let server: Listening;
  before(async () => {
    server = await createCounterServer('counter_under_test').listen(0, '127.0.0.1');
  });
  after(() => server.close());

  /** POST with an optional session cookie value; returns the response and its session cookie value. */
  async function call(path: string, body: unknown, session?: string): Promise<{ res: HttpResponse; session: string }> {
    const res = await request(`${server.url}${path}`, {
      method: 'POST',
      json: body,
      timeoutMs: 30_000,
      ...(session ? { headers: { cookie: `${COOKIE_NAME}=${session}` } } : {}),
    });
    const line = res.setCookies.find((c) => c.startsWith(`${COOKIE_NAME}=`));
    assert.ok(line, `${path} answered without the session cookie`);
    return { res, session: line.slice(COOKIE_NAME.length + 1).split(';')[0]! };
  }

  const count = async (session: string): Promise<number> =>
    ((await call('/get_counter_value', {}, session)).res.json() as { count: number }).count;

  const verifyBody = (expected: number) => ({
    responses_create_params: { input: 'add things' },
    response: placeholderResponse(),
    expected_count: expected,
  });

  it('keeps sessions isolated (as in the reference)', async () => {
    const fresh = await call('/get_counter_value', {});
    assert.deepEqual(fresh.res.json(), { count: 0 });
    const a = fresh.session;

    assert.deepEqual((await call('/increment_counter', { count: 2 }, a)).res.json(), { success: true });
    assert.equal(await count(a), 2);

    const b = (await call('/increment_counter', { count: 4 })).session;
    assert.notEqual(b, a);
    assert.equal(await count(b), 4);
    await call('/increment_counter', { count: 3 }, b);
    assert.equal(await count(b), 7);

    assert.equal(await count(a), 2);
  });

  it('seeds only a session that has no counter yet (Q16)', async () => {
    const seeded = await call('/seed_session', { initial_count: 3, expected_count: 6, responses_create_params: {} });
    assert.equal(seeded.res.status, 200);
    assert.deepEqual(seeded.res.json(), {});
    await call('/seed_session', { initial_count: 10 }, seeded.session);
    assert.equal(await count(seeded.session), 3);
  });

  it('verifies 1.0 when the counter equals expected_count and 0.0 otherwise', async () => {
    const { session } = await call('/seed_session', { initial_count: 3 });
    await call('/increment_counter', { count: 1 }, session);
    await call('/increment_counter', { count: 2 }, session);

    const right = await call('/verify', verifyBody(6), session);
    assert.equal(right.res.status, 200);
    const body = right.res.json() as Record<string, unknown>;
    assert.equal(body.reward, 1);
    assert.deepEqual(body.response, placeholderResponse());
    assert.deepEqual(body.responses_create_params, { input: 'add things' });

    assert.equal(((await call('/verify', verifyBody(7), session)).res.json() as { reward: number }).reward, 0);
  });

  it('verifies 0.0 for a session that was never seeded, even when 0 is expected', async () => {
    const res = (await call('/verify', verifyBody(0))).res;
    assert.equal(res.status, 200);
    assert.equal((res.json() as { reward: number }).reward, 0);
  });

  it('answers a seed without initial_count with 422 naming the field', async () => {
    const { res } = await call('/seed_session', { expected_count: 6 });
    assert.equal(res.status, 422);
    const detail = (res.json() as { detail: Array<{ loc: unknown[] }> }).detail;
    assert.deepEqual(detail[0]!.loc, ['body', 'initial_count']);
  });

  it('answers an unknown tool with 404 Not Found, still carrying the session cookie', async () => {
    const { res } = await call('/decrement_counter', { count: 1 });
    assert.equal(res.status, 404);
    assert.match(res.text(), /Not Found/);
  });

  it('keeps the session through a tool call that fails validation (422)', async () => {
    const { session } = await call('/increment_counter', { count: 5 });
    const bad = await call('/increment_counter', { count: 'five' }, session);
    assert.equal(bad.res.status, 422);
    assert.equal(bad.session, session);
    assert.equal(await count(bad.session), 5);
  });

  it('rejects a forged session cookie by starting a fresh session', async () => {
    const { session } = await call('/increment_counter', { count: 9 });
    const forged = `${session.slice(0, session.lastIndexOf('.'))}x.${session.slice(session.lastIndexOf('.') + 1)}`;
    const other = await call('/get_counter_value', {}, forged);
    assert.deepEqual(other.res.json(), { count: 0 });
    assert.notEqual(other.session, session);
  });

  it('answers GET / with {"status":"ok"}', async () => {
    const res = await request(`${server.url}/`, { timeoutMs: 30_000 });
    assert.deepEqual(res.json(), { status: 'ok' });
  });
});
