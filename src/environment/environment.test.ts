import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { placeholderResponse } from '../contract/index.js';
import { request, type HttpResponse } from '../http/client.js';

import { CookieJar } from '../http/cookies.js';
import { defineEnvironment, serveEnvironment, ToolError, z, type RunningEnvironment } from './index.js';
import { eventually } from '../../test/support/wait.js';

/** An upper bound on one loopback exchange, and on waiting for an effect that takes milliseconds: generous. */
const REQUEST_TIMEOUT_MS = 30_000;
const WAIT_MS = 30_000;

/**
 * The environment kit through a real server on a loopback port: every rule an author gets for free — the routes,
 * 422 texts naming the field, reserved names, the session cookie, state dropped at verify and on idle expiry
 * (with `dispose`), multi-reward outcomes, the verify response's fields, the aggregate-metrics hook.
 */

interface Notebook {
  notes: string[];
  owner: string;
}

/** A disposed state, with why it was disposed. */
type Disposed = Notebook & { reason?: string };

/** A small stateful environment: a notebook per session; reward = the notes match the expected ones. */
function notebookEnvironment(
  disposed: Disposed[] = [],
  options: { idleTimeoutSecs?: number; maxSessions?: number } = {},
) {
  return defineEnvironment({
    name: 'notebook',
    seedRow: z.looseObject({ owner: z.string() }),
    createState: (row): Notebook => ({ notes: [], owner: row.owner }),
    tools: (tool) => ({
      add_note: tool({
        description: 'Append a note to the notebook.',
        input: z.object({ text: z.string().min(1).describe('the note'), pinned: z.boolean().optional() }),
        run: ({ text }, { state }) => {
          state.notes.push(text);
          return { count: state.notes.length };
        },
      }),
      read_notes: tool({
        description: 'Read every note.',
        input: z.object({}),
        run: (_args, { state }) => ({ owner: state.owner, notes: state.notes }),
      }),
      fail_on_purpose: tool({
        description: 'Always fails with a message for the agent.',
        input: z.object({}),
        run: () => {
          throw new ToolError('the notebook is read-only today');
        },
      }),
    }),
    verifyRow: z.looseObject({ expected_notes: z.array(z.string()) }),
    verify: ({ row, state }) => {
      const notes = state?.notes ?? [];
      const matched = row.expected_notes.filter((note, i) => notes[i] === note).length;
      const exact = matched === row.expected_notes.length && notes.length === matched;
      return {
        reward: exact ? 1 : 0,
        reward_components: { order: exact ? 1 : 0, coverage: matched / Math.max(1, row.expected_notes.length) },
        notes_matched: matched,
        session_found: state !== undefined,
        final_notes: notes,
      };
    },
    dropFields: ['expected_notes'],
    dispose: (state, reason) => {
      disposed.push({ ...state, reason });
    },
    aggregateMetrics: (tasks) => ({ 'mean/reward': -1, tasks_seen: tasks.length }),
    sessions: options,
  });
}

const COOKIE = 'NotebookResourcesServer___notebook';

async function post(
  env: RunningEnvironment,
  path: string,
  body: unknown,
  jar = new CookieJar(),
): Promise<HttpResponse> {
  const cookie = jar.header();
  const res = await request(`${env.url}${path}`, {
    method: 'POST',
    json: body,
    timeoutMs: REQUEST_TIMEOUT_MS,
    ...(cookie ? { headers: { cookie } } : {}),
  });
  jar.absorb(res.setCookies);
  return res;
}

const detailOf = (res: HttpResponse) => (res.json() as { detail: unknown }).detail;

function verifyBody(expected: string[], extra: Record<string, unknown> = {}) {
  return {
    responses_create_params: { input: 'take notes' },
    response: placeholderResponse(),
    expected_notes: expected,
    owner: 'dana',
    ...extra,
  };
}

describe('environment kit', () => {
  const disposed: Disposed[] = [];
  let env: RunningEnvironment;
  before(async () => {
    env = await serveEnvironment(notebookEnvironment(disposed));
  });
  after(() => env.close());

  it('offers each tool as a Responses function tool with its description and JSON schema', () => {
    const [add, read] = notebookEnvironment().toolSchemas;
    assert.deepEqual(add, {
      type: 'function',
      name: 'add_note',
      description: 'Append a note to the notebook.',
      parameters: {
        type: 'object',
        properties: { text: { type: 'string', minLength: 1, description: 'the note' }, pinned: { type: 'boolean' } },
        required: ['text'],
        additionalProperties: false,
      },
      strict: false, // `pinned` is optional, which OpenAI's strict mode does not allow
    });
    assert.equal(read!.strict, true);
  });

  it('keeps state per session from seed to verify, then echoes the row minus dropFields plus reward and extras', async () => {
    const jar = new CookieJar();
    assert.deepEqual((await post(env, '/seed_session', { owner: 'dana', expected_notes: ['a'] }, jar)).json(), {});
    assert.ok(jar.get(COOKIE), 'the seed set the session cookie');
    assert.deepEqual((await post(env, '/add_note', { text: 'a' }, jar)).json(), { count: 1 });
    assert.deepEqual((await post(env, '/add_note', { text: 'b' }, jar)).json(), { count: 2 });

    const other = new CookieJar();
    await post(env, '/seed_session', { owner: 'eve' }, other);
    assert.deepEqual((await post(env, '/read_notes', {}, other)).json(), { owner: 'eve', notes: [] });

    const res = await post(env, '/verify', verifyBody(['a', 'b'], { _ng_task_index: 4, reward: 0.5 }), jar);
    assert.equal(res.status, 200);
    const body = res.json() as Record<string, unknown>;
    assert.equal(body.reward, 1);
    assert.equal(body.expected_notes, undefined, 'dropFields keeps the answer key out of the row');
    assert.deepEqual(body.response, placeholderResponse());
    assert.deepEqual(body.responses_create_params, { input: 'take notes' });
    assert.equal(body.owner, 'dana');
    assert.equal(body._ng_task_index, 4);
    assert.deepEqual(body.reward_components, { order: 1, coverage: 1 });
    assert.equal(body.reward_order, 1);
    assert.equal(body.reward_coverage, 1);
    assert.equal(body.notes_matched, 2);
    assert.equal(body.session_found, true);
    assert.deepEqual(body.final_notes, ['a', 'b']);
  });

  it("answers a large verify with the request's own bytes of its echo: what JSON.stringify writes, or for another writer the same JSON", async () => {
    const big = (): Record<string, unknown> => {
      const body = verifyBody(['a'], { _ng_task_index: 2, reward: 0.5 });
      const item = { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'é"\\'.repeat(40_000) }] };
      return { ...body, response: { ...(body.response as object), output: [item] } };
    };
    const verifyOnce = async (send: (jar: CookieJar) => Promise<HttpResponse>): Promise<HttpResponse> => {
      const jar = new CookieJar();
      await post(env, '/seed_session', { owner: 'dana' }, jar);
      await post(env, '/add_note', { text: 'a' }, jar);
      return send(jar);
    };
    const small = (
      await verifyOnce((jar) => post(env, '/verify', verifyBody(['a'], { _ng_task_index: 2 }), jar))
    ).json();
    const sent = big();
    const res = await verifyOnce((jar) => post(env, '/verify', sent, jar));
    assert.equal(res.status, 200);
    const reply = res.json() as Record<string, unknown>;
    assert.equal(res.text(), JSON.stringify(reply), 'byte for byte what JSON.stringify writes of it');
    assert.deepEqual(Object.keys(reply), Object.keys(small as object), 'the members in the same order');
    assert.deepEqual(reply.response, sent.response);
    assert.equal(reply.reward, 1);
    const spaced = JSON.stringify(big(), null, 1);
    const other = await verifyOnce((jar) =>
      request(`${env.url}/verify`, {
        method: 'POST',
        jsonText: spaced,
        timeoutMs: REQUEST_TIMEOUT_MS,
        headers: { cookie: jar.header()! },
      }),
    );
    assert.deepEqual(other.json(), reply);
    assert.ok(other.text().includes('"response":{\n'), "the echo is the request's bytes, its spacing kept");
  });

  it('drops and disposes the state at verify: later calls on that session find none', async () => {
    const jar = new CookieJar();
    await post(env, '/seed_session', { owner: 'finn' }, jar);
    await post(env, '/add_note', { text: 'x' }, jar);
    const before = disposed.length;
    await post(env, '/verify', verifyBody(['x']), jar);
    await eventually(() => disposed.length === before + 1, {
      what: 'the verified state is disposed',
      timeoutMs: WAIT_MS,
    });
    assert.deepEqual(disposed.at(-1), { notes: ['x'], owner: 'finn', reason: 'verified' });

    const late = await post(env, '/add_note', { text: 'y' }, jar);
    assert.equal(late.status, 409);
    assert.match(
      String(detailOf(late)),
      /\/add_note: this session has no state .*never seeded .*already verified, or expired/,
    );
    const again = (await post(env, '/verify', verifyBody(['x']), jar)).json() as Record<string, unknown>;
    assert.equal(again.reward, 0);
    assert.equal(again.session_found, false);
  });

  it('answers 422 naming the field: seed row, tool arguments, verify row, response', async () => {
    const seed = await post(env, '/seed_session', { expected_notes: [] });
    assert.equal(seed.status, 422);
    assert.deepEqual((detailOf(seed) as Array<{ loc: unknown[] }>)[0]!.loc, ['body', 'owner']);

    const jar = new CookieJar();
    await post(env, '/seed_session', { owner: 'gus' }, jar);
    const tool = await post(env, '/add_note', { text: 7 }, jar);
    assert.equal(tool.status, 422);
    const toolDetail = detailOf(tool) as Array<{ loc: unknown[]; msg: string }>;
    assert.deepEqual(toolDetail[0]!.loc, ['body', 'text']);
    assert.match(toolDetail[0]!.msg, /^text: /);
    assert.equal(jar.get(COOKIE) !== undefined, true);
    assert.deepEqual(
      (await post(env, '/read_notes', {}, jar)).json(),
      { owner: 'gus', notes: [] },
      'a 422 keeps the session',
    );

    const verify = await post(
      env,
      '/verify',
      { responses_create_params: { input: 'x' }, response: placeholderResponse() },
      jar,
    );
    assert.equal(verify.status, 422);
    assert.deepEqual((detailOf(verify) as Array<{ loc: unknown[] }>)[0]!.loc, ['body', 'expected_notes']);

    const badResponse = await post(env, '/verify', { ...verifyBody([]), response: { id: 1 } }, jar);
    assert.equal(badResponse.status, 422);
    assert.deepEqual((detailOf(badResponse) as Array<{ loc: unknown[] }>)[0]!.loc, ['body', 'response']);
  });

  it('answers a ToolError 400 with its message, an unknown tool 404 Not Found, both with the cookie', async () => {
    const jar = new CookieJar();
    await post(env, '/seed_session', { owner: 'hal' }, jar);
    const session = jar.get(COOKIE);
    const failed = await post(env, '/fail_on_purpose', {}, jar);
    assert.equal(failed.status, 400);
    assert.deepEqual(failed.json(), { detail: 'the notebook is read-only today' });
    const unknown = await post(env, '/erase_notes', {}, jar);
    assert.equal(unknown.status, 404);
    assert.match(unknown.text(), /Not Found/);
    assert.equal(jar.get(COOKIE), session);
  });

  it('starts a fresh session for a forged cookie', async () => {
    const jar = new CookieJar();
    await post(env, '/seed_session', { owner: 'ivy' }, jar);
    const signed = jar.get(COOKIE)!;
    const forged = new CookieJar();
    forged.absorb(`${COOKIE}=${signed.slice(0, -2)}xx`);
    const res = await post(env, '/read_notes', {}, forged);
    assert.equal(res.status, 409, 'the forged cookie does not reach the seeded state');
    assert.notEqual(forged.get(COOKIE), signed);
  });

  it('replaces and disposes the state when a session is seeded again', async () => {
    const jar = new CookieJar();
    await post(env, '/seed_session', { owner: 'jo' }, jar);
    await post(env, '/add_note', { text: 'old' }, jar);
    const before = disposed.length;
    await post(env, '/seed_session', { owner: 'kim' }, jar);
    await eventually(() => disposed.length === before + 1, {
      what: 'the replaced state is disposed',
      timeoutMs: WAIT_MS,
    });
    assert.deepEqual(disposed.at(-1), { notes: ['old'], owner: 'jo', reason: 'replaced' });
    assert.deepEqual((await post(env, '/read_notes', {}, jar)).json(), { owner: 'kim', notes: [] });
  });

  it('lets aggregateMetrics add and replace agent metrics', async () => {
    const rows = [0, 1].map((task) => ({
      ...verifyBody([]),
      _ng_task_index: task,
      _ng_rollout_index: 0,
      reward: task,
      notes_matched: 2,
    }));
    const res = await post(env, '/aggregate_metrics', { verify_responses: rows });
    assert.equal(res.status, 200);
    const metrics = res.json() as { agent_metrics: Record<string, unknown>; key_metrics: Record<string, unknown> };
    assert.equal(metrics.agent_metrics.tasks_seen, 2);
    assert.equal(metrics.agent_metrics['mean/reward'], -1);
    assert.equal(metrics.agent_metrics['mean/notes_matched'], 2, 'numeric extras are profile columns');
    assert.equal(metrics.key_metrics['mean/reward'], -1);
  });

  it('answers GET / and reports reverify_mode unsupported for a stateful environment', async () => {
    assert.deepEqual((await request(`${env.url}/`, { timeoutMs: REQUEST_TIMEOUT_MS })).json(), { status: 'ok' });
    assert.equal((await request(`${env.url}/reverify_mode`, { timeoutMs: REQUEST_TIMEOUT_MS })).json(), 'unsupported');
  });
});

describe('environment kit: session lifetime', () => {
  it('expires an idle session and disposes its state, so an abandoned rollout leaks nothing', async () => {
    const disposed: Disposed[] = [];
    // The idle timeout is far longer than the step from the seed's reply to the check that the session is live,
    // even on a busy machine: the session must not expire before that check.
    const env = await serveEnvironment(notebookEnvironment(disposed, { idleTimeoutSecs: 2 }));
    try {
      const jar = new CookieJar();
      await post(env, '/seed_session', { owner: 'abandoned' }, jar);
      assert.equal(env.server.sessions.size, 1);
      await eventually(() => disposed.length === 1, {
        what: 'the idle session expires and is disposed',
        timeoutMs: WAIT_MS,
      });
      assert.equal(disposed[0]!.owner, 'abandoned');
      assert.equal(disposed[0]!.reason, 'expired');
      assert.equal(env.server.sessions.size, 0);
      const res = await post(env, '/read_notes', {}, jar);
      assert.equal(res.status, 409);
      assert.match(String(detailOf(res)), /expired after 2 s idle/);
    } finally {
      await env.close();
    }
  });

  it('disposes every live session when the server closes, waiting for async disposals', async () => {
    let released = 0;
    const env = await serveEnvironment(
      defineEnvironment({
        name: 'sandboxes',
        createState: () => ({ id: Math.random() }),
        verify: () => ({ reward: 0 }),
        dispose: async () => {
          await new Promise((resolve) => setTimeout(resolve, 20));
          released++;
        },
      }),
      // The wait for disposals is bounded (1.5 s by default); here its bound is far beyond the 20 ms disposals.
      { shutdownWaitMs: 60_000 },
    );
    await post(env, '/seed_session', {});
    await post(env, '/seed_session', {});
    await env.close();
    assert.equal(released, 2);
  });

  it('logs a failing dispose and keeps serving', async () => {
    const lines: string[] = [];
    const env = await serveEnvironment(
      defineEnvironment({
        name: 'leaky',
        createState: () => ({}),
        verify: () => ({ reward: 1 }),
        dispose: () => Promise.reject(new Error('sandbox already gone')),
      }),
      { log: (line) => lines.push(line) },
    );
    try {
      const jar = new CookieJar();
      await post(env, '/seed_session', {}, jar);
      assert.equal((await post(env, '/verify', verifyBody([]), jar)).status, 200);
      await eventually(() => lines.length === 1, { what: 'the failing dispose is logged', timeoutMs: WAIT_MS });
      assert.match(lines[0]!, /^\[leaky\] dispose\(state\) failed: sandbox already gone$/);
      assert.equal((await post(env, '/seed_session', {})).status, 200, 'the server still answers');
    } finally {
      await env.close();
    }
  });

  it('disposes live sessions with reason shutdown when the server closes', async () => {
    const disposed: Disposed[] = [];
    const env = await serveEnvironment(notebookEnvironment(disposed));
    await post(env, '/seed_session', { owner: 'late' });
    await env.close();
    assert.deepEqual(disposed, [{ notes: [], owner: 'late', reason: 'shutdown' }]);
  });

  it('stops waiting for a dispose that never finishes after shutdownWaitMs, and says so', async () => {
    const lines: string[] = [];
    const env = await serveEnvironment(
      defineEnvironment({
        name: 'stuck',
        createState: () => ({}),
        verify: () => ({ reward: 0 }),
        dispose: () => new Promise<void>(() => {}),
      }),
      { shutdownWaitMs: 50, log: (line) => lines.push(line) },
    );
    await post(env, '/seed_session', {});
    await env.close();
    assert.deepEqual(lines, ['[stuck] 1 dispose(state) calls still pending after 50 ms; stopping anyway']);
  });

  it('counts sessions created by initialState against maxSessions too', async () => {
    const env = await serveEnvironment(
      defineEnvironment({
        name: 'tally',
        createState: () => ({ n: 0 }),
        initialState: () => ({ n: 0 }),
        tools: (tool) => ({
          bump: tool({ description: 'Add one.', input: z.object({}), run: (_args, { state }) => ({ n: ++state.n }) }),
        }),
        verify: () => ({ reward: 0 }),
        sessions: { maxSessions: 1 },
      }),
    );
    try {
      assert.deepEqual((await post(env, '/bump', {})).json(), { n: 1 });
      const full = await post(env, '/bump', {});
      assert.equal(full.status, 503);
      assert.match(String(detailOf(full)), /^\/bump: environment 'tally' already holds 1 live sessions/);
    } finally {
      await env.close();
    }
  });

  it('answers 503 once maxSessions sessions are live', async () => {
    const env = await serveEnvironment(notebookEnvironment([], { maxSessions: 1 }));
    try {
      assert.equal((await post(env, '/seed_session', { owner: 'a' })).status, 200);
      const full = await post(env, '/seed_session', { owner: 'b' });
      assert.equal(full.status, 503);
      assert.match(String(detailOf(full)), /already holds 1 live sessions \(sessions\.maxSessions\)/);
    } finally {
      await env.close();
    }
  });
});

describe('environment kit: definitions', () => {
  const verify = () => ({ reward: 0 });
  const noop = { description: '', input: z.object({}), run: () => ({}) };

  it('refuses a tool named like a reserved route', () => {
    assert.throws(
      () => defineEnvironment({ name: 'x', tools: (tool) => ({ verify: tool(noop) }), verify }),
      /tool 'verify': the name is reserved/,
    );
    assert.throws(
      () => defineEnvironment({ name: 'x', tools: (tool) => ({ seed_session: tool(noop) }), verify }),
      /reserved/,
    );
  });

  it('refuses a tool name that is not a plain identifier, and a non-object input', () => {
    assert.throws(
      () => defineEnvironment({ name: 'x', tools: (tool) => ({ 'a/b': tool(noop) }), verify }),
      /plain identifier/,
    );
    assert.throws(
      () => defineEnvironment({ name: 'x', tools: (tool) => ({ t: tool({ ...noop, input: z.string() }) }), verify }),
      /input must be an object schema/,
    );
  });

  it('refuses to drop a field every verify response carries', () => {
    assert.throws(() => defineEnvironment({ name: 'x', verify, dropFields: ['response'] }), /cannot drop 'response'/);
  });

  it('answers 500 naming the rule when verify returns an invalid outcome', async () => {
    const lines: string[] = [];
    const env = await serveEnvironment(defineEnvironment({ name: 'broken', verify: () => ({ reward: Number.NaN }) }), {
      log: (line) => lines.push(line),
    });
    try {
      const res = await post(env, '/verify', verifyBody([]));
      assert.equal(res.status, 500);
      assert.match(
        String(detailOf(res)),
        /verify\(\) of environment 'broken' returned an invalid outcome: reward must be a finite number/,
      );
      assert.equal(lines.length, 1);
    } finally {
      await env.close();
    }
  });

  it('answers 500 for a tool result JSON cannot encode, and keeps serving', async () => {
    const env = await serveEnvironment(
      defineEnvironment({
        name: 'cyclic',
        tools: (tool) => ({
          loop: tool({
            description: 'Returns a cycle.',
            input: z.object({}),
            run: () => {
              const node: Record<string, unknown> = {};
              node.self = node;
              return node;
            },
          }),
          ok: tool({ description: 'Fine.', input: z.object({}), run: () => ({ ok: true }) }),
        }),
        verify: () => ({ reward: 0 }),
      }),
    );
    try {
      const bad = await post(env, '/loop', {});
      assert.equal(bad.status, 500);
      assert.match(bad.text(), /the reply could not be built: .*circular/i);
      assert.ok(
        bad.setCookies.some((line) => line.startsWith('CyclicResourcesServer___cyclic=')),
        'the 500 still carries the session cookie',
      );
      assert.deepEqual((await post(env, '/ok', {})).json(), { ok: true });
    } finally {
      await env.close();
    }
  });

  it('validates the seed row of a stateless environment that declares seedRow', async () => {
    const env = await serveEnvironment(
      defineEnvironment({
        name: 'quiz',
        seedRow: z.looseObject({ question_id: z.string() }),
        verify: () => ({ reward: 0 }),
      }),
    );
    try {
      const bad = await post(env, '/seed_session', { question: 1 });
      assert.equal(bad.status, 422);
      assert.deepEqual((detailOf(bad) as Array<{ loc: unknown[] }>)[0]!.loc, ['body', 'question_id']);
      assert.equal((await post(env, '/seed_session', { question_id: 'q1' })).status, 200);
      assert.equal(env.server.sessions.size, 0, 'nothing is stored for a stateless environment');
    } finally {
      await env.close();
    }
  });

  it('serves a stateless environment: no seed state, the row and response reach verify, reverify is stateless', async () => {
    const env = await serveEnvironment(
      defineEnvironment({
        name: 'echo',
        verifyRow: z.looseObject({ expected_answer: z.string() }),
        verify: ({ row, response }) => ({ reward: row.expected_answer === 'yes' ? 1 : 0, status: response.status }),
      }),
    );
    try {
      assert.equal((await post(env, '/seed_session', { anything: 1 })).status, 200);
      const body = (await post(env, '/verify', { ...verifyBody([]), expected_answer: 'yes' })).json() as Record<
        string,
        unknown
      >;
      assert.equal(body.reward, 1);
      assert.equal(body.expected_answer, 'yes', 'without dropFields every request field is echoed');
      assert.equal(body.status, placeholderResponse().status);
      assert.equal((await request(`${env.url}/reverify_mode`, { timeoutMs: REQUEST_TIMEOUT_MS })).json(), 'stateless');
    } finally {
      await env.close();
    }
  });
});
