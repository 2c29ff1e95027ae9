import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { request } from '../http/client.js';
import { closeServer } from '../http/server.js';
import { streamRequest } from '../http/stream-client.js';
import { startTestModelServer, type TestModelServer } from '../../test/support/model-server.js';
import { startScriptedUpstream, type ScriptedUpstream } from '../../test/support/scripted-upstream.js';
import type { ModelCallCapture } from './records.js';

const API_KEY = 'sk-test-SECRET-0123456789';
const MAX_RESPONSE_BYTES = 1024 * 1024;

let upstream: ScriptedUpstream;
let model: TestModelServer;
let base: string;
const logs: string[] = [];

async function post(
  path: string,
  body: unknown,
): Promise<{ status: number; json: Record<string, unknown>; text: string }> {
  const res = await request(`${base}${path}`, { method: 'POST', json: body, timeoutMs: 60_000 });
  const text = res.text();
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // a test that expects JSON fails on its own assertion
  }
  return { status: res.status, json, text };
}

const chat = (text: string, extra: Record<string, unknown> = {}) => ({
  model: 'whatever-the-agent-says',
  messages: [{ role: 'user', content: text }],
  ...extra,
});
const responses = (text: string, extra: Record<string, unknown> = {}) => ({
  model: 'whatever-the-agent-says',
  input: [{ role: 'user', content: text }],
  ...extra,
});

async function open(id: string): Promise<void> {
  const res = await post(`/ng-rollout/${id}/open`, {});
  assert.equal(res.status, 200, res.text);
}

async function close(id: string): Promise<ModelCallCapture> {
  const res = await post(`/ng-rollout/${id}/close`, {});
  assert.equal(res.status, 200, res.text);
  return res.json as unknown as ModelCallCapture;
}

before(async () => {
  upstream = await startScriptedUpstream();
  model = await startTestModelServer({
    upstreamUrl: upstream.url,
    apiKey: API_KEY,
    model: 'served-model',
    extraBody: { temperature: 0.5 },
    maxResponseBytes: MAX_RESPONSE_BYTES,
    limits: { maxOpen: 40, maxCallsPerRollout: 3, idleMs: 60_000 },
    log: (line) => logs.push(line),
  });
  base = model.url;
});

after(async () => {
  await model.close();
  await upstream.close();
});

describe('model server', () => {
  it('forwards chat and responses calls with the configured model and key, and records each against its rollout', async () => {
    await open('7-0');
    const first = await post('/ng-rollout/7-0/v1/chat/completions', chat('hello'));
    assert.equal(first.status, 200, first.text);
    assert.equal((first.json.choices as { message: { content: string } }[])[0]!.message.content, 'echo: hello');
    const second = await post('/ng-rollout/7-0/v1/responses', responses('four'));
    assert.equal(second.status, 200, second.text);
    const sent = upstream.requests.slice(-2);
    assert.deepEqual(
      sent.map((r) => [r.path, r.body.model, r.body.temperature, r.headers.authorization]),
      [
        ['/v1/chat/completions', 'served-model', 0.5, `Bearer ${API_KEY}`],
        ['/v1/responses', 'served-model', 0.5, `Bearer ${API_KEY}`],
      ],
    );
    const capture = await close('7-0');
    assert.equal(capture.rollout_id, '7-0');
    assert.deepEqual(
      capture.calls.map((c) => [
        c.call_index,
        c.dialect,
        c.status_code,
        c.tokens_in,
        c.tokens_out,
        c.tokens_total,
        c.cached_tokens,
        c.tokens_reasoning,
        c.error_category,
      ]),
      [
        [0, 'chat', 200, 5, 7, 12, 2, 1, null],
        [1, 'responses', 200, 4, 7, 11, 2, 1, null],
      ],
    );
    assert.deepEqual(
      capture.calls.map((c) => [c.response_id, c.response_status, c.finish_reason]),
      [
        ['chatcmpl-scripted', null, 'stop'],
        ['resp_scripted', 'completed', null],
      ],
    );
    assert.ok(capture.calls.every((c) => typeof c.latency_total_ms === 'number' && c.latency_ttft_ms === null));
    assert.deepEqual(
      { ...capture.metrics, latency_total_ms: null },
      {
        tokens_in: 9,
        tokens_out: 14,
        tokens_reasoning: 2,
        tokens_total: 23,
        cached_tokens: 4,
        latency_total_ms: null,
        num_calls: 2,
      },
    );
    assert.equal(new Set(capture.calls.map((c) => c.model_call_id)).size, 2);
    assert.ok(!JSON.stringify(capture).includes(API_KEY));
  });

  it('answers 404 for a rollout never opened or already closed, and never calls the upstream for it', async () => {
    const before = upstream.requests.length;
    const unknown = await post('/ng-rollout/never-opened/v1/chat/completions', chat('x'));
    assert.equal(unknown.status, 404);
    assert.equal((unknown.json.error as { type: string }).type, 'rollout_not_open');
    await open('closed-1');
    await close('closed-1');
    const closed = await post('/ng-rollout/closed-1/v1/responses', responses('x'));
    assert.equal(closed.status, 404);
    assert.equal((await post('/ng-rollout/closed-1/close', {})).status, 404);
    assert.equal((await post('/ng-rollout/.bad/open', {})).status, 404);
    assert.equal(upstream.requests.length, before);
    // The plain route still serves, unrecorded.
    assert.equal((await post('/v1/chat/completions', chat('plain'))).status, 200);
  });

  it('relays a stream as it arrives (the first event before the upstream finished) and records usage and time to first token', async () => {
    for (const [dialect, path, body] of [
      ['responses', '/v1/responses', responses('HOSTILE hold r', { stream: true })],
      [
        'chat',
        '/v1/chat/completions',
        chat('HOSTILE hold c', { stream: true, stream_options: { include_usage: true } }),
      ],
    ] as const) {
      await open(`s-${dialect}`);
      const res = await streamRequest(`${base}/ng-rollout/s-${dialect}${path}`, {
        jsonText: JSON.stringify(body),
        timeoutMs: 60_000,
        maxBodyBytes: MAX_RESPONSE_BYTES,
      });
      assert.equal(res.status, 200);
      assert.match(String(res.headers['content-type']), /text\/event-stream/);
      const iterator = res.body[Symbol.asyncIterator]();
      // The upstream holds the rest of its stream: this chunk can only have come relayed, not buffered whole.
      const first = (await iterator.next()).value as Buffer;
      assert.match(first.toString('utf8'), /echo: /);
      upstream.release();
      let text = first.toString('utf8');
      for (let next = await iterator.next(); !next.done; next = await iterator.next())
        text += next.value.toString('utf8');
      assert.match(text, dialect === 'chat' ? /data: \[DONE\]/ : /response\.completed/);
      const [call] = (await close(`s-${dialect}`)).calls;
      assert.equal(call!.dialect, dialect);
      assert.equal(call!.error_category, null, JSON.stringify(call));
      assert.equal(call!.tokens_in, `HOSTILE hold ${dialect[0]}`.length);
      assert.equal(call!.tokens_out, 7);
      assert.equal(typeof call!.latency_ttft_ms, 'number');
      assert.ok(call!.latency_ttft_ms! <= call!.latency_total_ms!);
    }
  });

  it('fails a hostile answer (huge, deep, wrong usage types, an error echoing the key) with its class, and keeps serving', async () => {
    await open('hostile');
    const cases = [
      ['HOSTILE huge', 502, 'too_large'],
      ['HOSTILE deep', 502, 'upstream_bad_response'],
      ['HOSTILE bad-usage', 502, 'upstream_bad_response'],
      ['HOSTILE status', 500, 'upstream_http_error'],
    ] as const;
    for (const [text, status] of cases) {
      const res = await post('/ng-rollout/hostile/v1/chat/completions', chat(text));
      assert.equal(res.status, status, `${text}: ${res.text.slice(0, 300)}`);
      assert.ok(res.text.length < 70_000, `${text}: the error is bounded`);
      assert.ok(!res.text.includes(API_KEY), `${text}: the key never reaches the agent`);
    }
    const ok = await post('/ng-rollout/hostile/v1/chat/completions', chat('still here'));
    assert.equal(ok.status, 200);
    const capture = await close('hostile');
    // max_calls_per_rollout is 3 here: the other two calls are counted as a gap, not kept.
    assert.deepEqual(
      capture.calls.map((c) => c.error_category),
      cases.slice(0, 3).map((c) => c[2]),
    );
    assert.deepEqual(capture.gaps, [
      { code: 'model_call_capture_records_dropped', detail: 'count=2 (max_calls_per_rollout)' },
    ]);
    assert.ok(!logs.join('\n').includes(API_KEY), 'the key never reaches the logs');
    assert.ok(
      logs.some((line) => line.includes('****')),
      'the echoed key was masked in the log',
    );
  });

  it('records a stream cut mid-way and an unreachable upstream with their classes', async () => {
    await open('broken');
    const res = await request(`${base}/ng-rollout/broken/v1/responses`, {
      method: 'POST',
      json: responses('HOSTILE cut', { stream: true }),
      timeoutMs: 60_000,
    });
    assert.equal(res.status, 200);
    assert.match(res.text(), /event: error\ndata: .*upstream_stream_cut/);
    const gone = await startTestModelServer({
      upstreamUrl: 'http://127.0.0.1:9/v1',
      apiKey: API_KEY,
      maxResponseBytes: MAX_RESPONSE_BYTES,
      limits: { maxOpen: 4, maxCallsPerRollout: 4, idleMs: 60_000 },
      log: (line) => logs.push(line),
    });
    try {
      const unreachable = await request(`${gone.url}/v1/chat/completions`, {
        method: 'POST',
        json: chat('x'),
        timeoutMs: 60_000,
      });
      assert.equal(unreachable.status, 502);
      assert.equal((unreachable.json() as { error: { type: string } }).error.type, 'upstream_unreachable');
    } finally {
      await gone.close();
    }
    const [call] = (await close('broken')).calls;
    assert.equal(call!.error_category, 'upstream_stream_cut');
    assert.equal(call!.tokens_in, null, 'unknown, not zero');
  });

  it('sends a call once more when its connection is lost before any reply, and only once', async () => {
    // A real upstream that destroys the connection of the first `drops` requests without a byte of reply, as a server
    // closing an idle keep-alive connection does to a call that went out on it.
    let drops = 1;
    let seen = 0;
    const flaky = http.createServer((req, res) => {
      seen += 1;
      if (drops > 0) {
        drops -= 1;
        req.socket.destroy();
        return;
      }
      req.resume();
      req.on('end', () => {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion', choices: [], usage: null }));
      });
    });
    await new Promise<void>((resolve) => flaky.listen(0, '127.0.0.1', resolve));
    const flakyServer = await startTestModelServer({
      upstreamUrl: `http://127.0.0.1:${(flaky.address() as AddressInfo).port}/v1`,
      maxResponseBytes: MAX_RESPONSE_BYTES,
      limits: { maxOpen: 4, maxCallsPerRollout: 4, idleMs: 60_000 },
      log: (line) => logs.push(line),
    });
    const call = () =>
      request(`${flakyServer.url}/v1/chat/completions`, { method: 'POST', json: chat('x'), timeoutMs: 60_000 });
    try {
      const recovered = await call();
      assert.equal(recovered.status, 200, recovered.text());
      assert.equal(seen, 2, 'the lost call was sent once more');
      drops = 2;
      seen = 0;
      const lost = await call();
      assert.equal(lost.status, 502, "a second loss is the call's");
      assert.equal((lost.json() as { error: { type: string } }).error.type, 'upstream_unreachable');
      assert.equal(seen, 2, 'never a third time');
    } finally {
      await flakyServer.close();
      await closeServer(flaky);
    }
  });

  it('waits at close for a call still running, and answers one that outlasts the wait as a gap', async () => {
    // A real upstream that holds every request until the test lets it go.
    const held: (() => void)[] = [];
    let arrived: () => void = () => {};
    const holding = http.createServer((req, res) => {
      req.resume();
      held.push(() => {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion', choices: [], usage: null }));
      });
      arrived();
    });
    await new Promise<void>((resolve) => holding.listen(0, '127.0.0.1', resolve));
    const settling = await startTestModelServer({
      upstreamUrl: `http://127.0.0.1:${(holding.address() as AddressInfo).port}/v1`,
      maxResponseBytes: MAX_RESPONSE_BYTES,
      limits: { maxOpen: 4, maxCallsPerRollout: 4, idleMs: 60_000, closeSettleMs: 300 },
      log: (line) => logs.push(line),
    });
    const at = (path: string, body: unknown) =>
      request(`${settling.url}${path}`, { method: 'POST', json: body, timeoutMs: 60_000 });
    const upstreamHas = () => new Promise<void>((resolve) => (arrived = resolve));
    try {
      // Released while the close waits: the call is recorded as what it was.
      assert.equal((await at('/ng-rollout/slow/open', {})).status, 200);
      let reached = upstreamHas();
      const call = at('/ng-rollout/slow/v1/chat/completions', chat('x'));
      await reached;
      const closing = at('/ng-rollout/slow/close', {});
      const late = await at('/ng-rollout/slow/v1/chat/completions', chat('late'));
      assert.equal(late.status, 404, 'a closing rollout takes no new call');
      held.shift()!();
      assert.equal((await call).status, 200);
      const settled = (await closing).json() as ModelCallCapture;
      assert.equal(settled.calls.length, 1);
      assert.equal(settled.calls[0]!.error_category, null);
      assert.equal(settled.gaps, undefined);
      // Never released within the wait: a gap, and the call's late record goes nowhere.
      assert.equal((await at('/ng-rollout/stuck/open', {})).status, 200);
      reached = upstreamHas();
      const stuck = at('/ng-rollout/stuck/v1/chat/completions', chat('x'));
      await reached;
      const gapped = (await at('/ng-rollout/stuck/close', {})).json() as ModelCallCapture;
      assert.equal(gapped.calls.length, 0);
      assert.deepEqual(gapped.gaps, [{ code: 'model_call_capture_incomplete', detail: '1 call(s) still running' }]);
      held.shift()!();
      assert.equal((await stuck).status, 200);
    } finally {
      await settling.close();
      await closeServer(holding);
    }
  });

  it('bounds open rollouts and drops idle ones', async () => {
    const opened: string[] = [];
    let refused: { status: number; text: string } | undefined;
    for (let i = 0; i < 60 && !refused; i++) {
      const res = await post(`/ng-rollout/cap-${i}/open`, {});
      if (res.status === 200) opened.push(`cap-${i}`);
      else refused = res;
    }
    assert.equal(refused?.status, 503);
    assert.match(refused.text, /max_open_rollouts/);
    model.server.rollouts.sweep(Date.now() + 120_000);
    assert.equal(model.server.rollouts.size, 0);
    assert.equal((await post(`/ng-rollout/${opened[0]}/v1/chat/completions`, chat('late'))).status, 404);
    const metrics = await request(`${base}/metrics`, { timeoutMs: 60_000 });
    assert.match(metrics.text(), /gym_model_calls_total\{dialect="chat",outcome="ok"\} \d+/);
    assert.match(metrics.text(), /gym_model_rollouts_expired_total \d+/);
  });
});
