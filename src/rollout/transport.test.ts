import assert from 'node:assert/strict';
import net from 'node:net';
import { describe, test } from 'node:test';
import {
  assistantMessage,
  finalAnswer,
  functionCall,
  reply,
  responseObject,
  startScriptedService,
  toolAsk,
} from '../testing/index.js';
import { retryAfterMs } from './service-client.js';
import {
  basicRow,
  POST_TIMEOUT_MS,
  startHarness,
  type Harness,
  type RunResult,
} from '../../test/support/remote-agent.js';

/** Rows of failed rollouts: non-terminal unless said, and the environment's /verify never called. */
function assertFailed(h: Harness, result: RunResult, text: RegExp | string, terminal = false): void {
  assert.equal(result.reward, 0.0);
  assert.equal(result._ng_failure_class, 'remote_agent_error');
  assert.equal(result._ng_failure_terminal, terminal ? true : undefined);
  assert.equal(result._ng_no_persist, undefined);
  const error = result.error!;
  if (typeof text === 'string') assert.ok(error.includes(text), `error was: ${error}`);
  else assert.match(error, text);
  assert.equal(result.response.id, 'remote_agent_failure');
  assert.deepEqual(
    h.env.to('/verify').map((r) => r.path),
    [],
    'verify must not run after a failed loop',
  );
}

/** A loopback port nobody listens on. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('G. transport failures on the service hop', () => {
  test('connection refused → exactly 3 tries ~0.5 s apart, then "Is your service running at <url>?"', async () => {
    const port = await closedPort();
    const h = await startHarness({ service: [], config: { agent_base_url: `http://127.0.0.1:${port}/` } });
    try {
      const started = performance.now();
      const result = await h.run(basicRow());
      const elapsed = performance.now() - started;
      assertFailed(h, result, `could not reach the remote service after 3 tries (`);
      assert.ok(result.error!.includes(`Is your service running at http://127.0.0.1:${port}?`), result.error);
      assert.ok(result.error!.startsWith('agent loop failed: '), result.error);
      // Two 0.5 s pauses at least; at most, well within the harness's bound (a refused connection is not waited on).
      assert.ok(elapsed >= 950 && elapsed < POST_TIMEOUT_MS / 2, `3 tries 0.5 s apart took ${elapsed} ms`);
      assert.deepEqual(
        h.env.requests.map((r) => r.path),
        ['/seed_session'],
      );
    } finally {
      await h.close();
    }
  });

  test('U21: a server disconnect before the reply is retried — 2 attempts, success (the service may see a step twice)', async () => {
    const h = await startHarness({
      service: [reply.disconnect(), finalAnswer('ok')],
      agent: { connectRetryDelayMs: 10 },
    });
    try {
      const result = await h.run(basicRow());
      assert.equal(result.reward, 1.0);
      assert.equal(h.service.calls.length, 2);
      assert.deepEqual(h.service.calls[1]!.body, h.service.calls[0]!.body);
    } finally {
      await h.close();
    }
  });

  test('a per-call timeout is one attempt, no retry: "timed out after 2.0s (remote_responses_timeout_secs; …)"', async () => {
    // 2 s: the call has reached the service when its deadline fires, however busy the machine.
    const h = await startHarness({ service: () => reply.hang(), config: { remote_responses_timeout_secs: 2 } });
    try {
      const result = await h.run(basicRow());
      assertFailed(h, result, 'timed out after 2.0s (remote_responses_timeout_secs;');
      assert.equal(h.service.calls.length, 1);
    } finally {
      await h.close();
    }
  });

  test('any other request failure (a broken HTTP reply) fails fast after one attempt with its type', async () => {
    const h = await startHarness({ service: () => reply.socketBytes('this is not HTTP\r\n\r\n') });
    try {
      const result = await h.run(basicRow());
      assertFailed(h, result, /agent loop failed: \w+Error/);
      assert.equal(h.service.calls.length, 1);
    } finally {
      await h.close();
    }
  });

  test('the body dies mid-read after 200 headers → "reading the response body failed"', async () => {
    const h = await startHarness({ service: [reply.truncated('{"id": "resp_1", "outp')] });
    try {
      const result = await h.run(basicRow());
      assertFailed(h, result, 'reading the response body failed');
      assert.equal(h.service.calls.length, 1);
    } finally {
      await h.close();
    }
  });

  test('D14 / U2: headers then a stalled body are cut by the per-call timeout, and the slot is freed', async () => {
    const h = await startHarness({
      service: () => reply.stallAfterHeaders(),
      // 2 s: the headers have arrived when the deadline fires, however busy the machine.
      config: { remote_responses_timeout_secs: 2, concurrency: 1 },
    });
    try {
      const result = await h.run(basicRow());
      assertFailed(h, result, 'reading the response body failed: timed out after 2.0s (remote_responses_timeout_secs;');
      assert.equal(h.service.calls.length, 1);
      assert.equal(h.agent.limiter.available, 1);
    } finally {
      await h.close();
    }
  });

  test('HTTP 500 → "HTTP 500: <body excerpt>", non-terminal, no retry', async () => {
    const h = await startHarness({ service: [reply.status(500, 'kaboom')] });
    try {
      const result = await h.run(basicRow());
      assertFailed(h, result, 'HTTP 500: kaboom');
      assert.equal(h.service.calls.length, 1);
    } finally {
      await h.close();
    }
  });

  test('a 4xx behaves the same; the excerpt is the first 500 bytes, undecodable bytes replaced', async () => {
    const body = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('x'.repeat(600))]);
    const h = await startHarness({ service: [reply.status(413, body)] });
    try {
      const result = await h.run(basicRow());
      assertFailed(h, result, /HTTP 413: \uFFFD\uFFFDx+$/);
      assert.equal(result.error!.split('HTTP 413: ')[1]!.length, 500);
    } finally {
      await h.close();
    }
  });

  test('a 301 is not followed — "HTTP 301 (redirect to <Location>; fix agent_base_url …)"', async () => {
    const target = await startScriptedService([finalAnswer('should never be called')]);
    const h = await startHarness({
      service: [reply.status(301, 'moved', { headers: { location: `${target.url}/elsewhere` } })],
    });
    try {
      const result = await h.run(basicRow());
      assertFailed(
        h,
        result,
        `HTTP 301 (redirect to ${target.url}/elsewhere; fix agent_base_url to point at the final address)`,
      );
      assert.equal(target.calls.length, 0);
    } finally {
      await h.close();
      await target.close();
    }
  });

  test('any 3xx is rejected (307); without a Location the hint is omitted', async () => {
    const h = await startHarness({
      service: [reply.status(307, '', { headers: { location: 'https://elsewhere' } }), reply.status(302, 'found')],
    });
    try {
      assertFailed(h, await h.run(basicRow()), 'HTTP 307 (redirect to https://elsewhere;');
      const second = await h.run(basicRow());
      assertFailed(h, second, 'HTTP 302: found');
      assert.ok(!second.error!.includes('redirect to'));
    } finally {
      await h.close();
    }
  });

  test('death mid-rollout — a tool ran, then 500 → the whole rollout is a failure row with that text', async () => {
    const h = await startHarness({
      service: [toolAsk(functionCall('increment_counter', { count: 1 })), reply.status(500, 'died mid-rollout')],
    });
    try {
      const result = await h.run(basicRow());
      assertFailed(h, result, 'HTTP 500: died mid-rollout');
      assert.equal(h.env.to('/increment_counter').length, 1);
    } finally {
      await h.close();
    }
  });

  test('U22 / D3: a 500 body that names the terminal error class stays non-terminal', async () => {
    const h = await startHarness({
      service: [reply.status(500, 'RemoteAgentTerminalError TerminalRolloutError terminal _ng_failure_terminal: true')],
    });
    try {
      const result = await h.run(basicRow());
      assertFailed(h, result, 'HTTP 500: RemoteAgentTerminalError', false);
    } finally {
      await h.close();
    }
  });
});

describe('H. bad response bodies', () => {
  test('a 200 that is not JSON → "response is not valid JSON", non-terminal', async () => {
    const h = await startHarness({ service: [reply.raw('not json')] });
    try {
      assertFailed(h, await h.run(basicRow()), 'response is not valid JSON');
    } finally {
      await h.close();
    }
  });

  test('U3: invalid UTF-8 or a BOM in a 200 body is "not valid JSON" too', async () => {
    const valid = JSON.stringify(finalAnswer('ok'));
    const h = await startHarness({
      service: [
        reply.raw(Buffer.concat([Buffer.from(valid.slice(0, -1)), Buffer.from([0xff]), Buffer.from('}')])),
        reply.raw(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(valid)])),
      ],
    });
    try {
      assertFailed(h, await h.run(basicRow()), 'response is not valid JSON: the body is not valid UTF-8');
      assertFailed(h, await h.run(basicRow()), 'response is not valid JSON');
    } finally {
      await h.close();
    }
  });

  test('JSON that is not an object → "expected a JSON object from /v1/responses, got list"', async () => {
    const h = await startHarness({ service: [reply.raw('[1, 2]'), reply.raw('"text"'), reply.raw('null')] });
    try {
      assertFailed(h, await h.run(basicRow()), 'expected a JSON object from /v1/responses, got list');
      assertFailed(h, await h.run(basicRow()), 'got str');
      assertFailed(h, await h.run(basicRow()), 'got NoneType');
    } finally {
      await h.close();
    }
  });

  test('extra unknown top-level fields are tolerated', async () => {
    const h = await startHarness({ service: [finalAnswer('ok', { x_trace_id: 'abc', service_internal: { a: 1 } })] });
    try {
      const result = await h.run(basicRow());
      assert.equal(result.reward, 1.0);
      assert.equal(result.response.x_trace_id, 'abc');
    } finally {
      await h.close();
    }
  });

  test('an invalid Responses object is terminal, verify skipped', async () => {
    const h = await startHarness({ service: [{ id: 'x', object: 'response' }] });
    try {
      const result = await h.run(basicRow());
      assertFailed(h, result, 'remote service returned an invalid Responses API object: ', true);
      assert.deepEqual(
        h.env.requests.map((r) => r.path),
        ['/seed_session'],
      );
      assert.equal(result._ng_partial_response, undefined);
    } finally {
      await h.close();
    }
  });

  const shapeMistakes: Array<[string, unknown, RegExp]> = [
    ['arguments sent as an object', { ...functionCall('f', {}, 'c'), arguments: { a: 1 } }, /output\[0\]\.arguments/],
    [
      'output message without id',
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'x', annotations: [] }] },
      /output\[0\]\.id: required/,
    ],
    [
      'output_text without annotations',
      { type: 'message', id: 'm', role: 'assistant', content: [{ type: 'output_text', text: 'x' }] },
      /output\[0\]\.content\[0\]\.annotations: required/,
    ],
    ['item without type', { role: 'assistant', id: 'm', content: [] }, /output\[0\]/],
    ['unknown item type', { type: 'telepathy', id: 't' }, /output\[0\]\.type: unknown item type 'telepathy'/],
  ];
  for (const [label, item, where] of shapeMistakes) {
    test(`U14: ${label} is terminal and the error names the item index and field`, async () => {
      const h = await startHarness({ service: [responseObject([item])] });
      try {
        const result = await h.run(basicRow());
        assertFailed(h, result, where, true);
        assert.match(result.error!, /invalid Responses API object/);
      } finally {
        await h.close();
      }
    });
  }

  test('U1 / D14: a body over max_response_bytes fails with "too large" without buffering the excess', async () => {
    const h = await startHarness({
      service: [reply.stream(50 * 1024 * 1024)],
      config: { max_response_bytes: 64 * 1024 },
    });
    try {
      const before = process.memoryUsage().rss;
      const result = await h.run(basicRow());
      assertFailed(h, result, 'too large');
      assert.match(result.error!, /max_response_bytes/);
      assert.ok(process.memoryUsage().rss - before < 40 * 1024 * 1024, 'the excess must not be buffered');
    } finally {
      await h.close();
    }
  });
});

describe('U23 / D15: status classes and overload signals', () => {
  test('a 201 with a valid body is accepted; a 204 (empty body) is "not valid JSON"', async () => {
    const h = await startHarness({ service: [reply.status(204), reply.json(finalAnswer('ok'), { status: 201 })] });
    try {
      assertFailed(h, await h.run(basicRow()), 'response is not valid JSON');
      assert.equal((await h.run(basicRow())).reward, 1.0);
    } finally {
      await h.close();
    }
  });

  test('429 and 503 with Retry-After are retried (up to 3 times) and the rollout succeeds', async () => {
    const h = await startHarness({
      service: [
        reply.status(429, 'slow down', { headers: { 'retry-after': '0' } }),
        reply.status(503, 'busy', { headers: { 'retry-after': '0.01' } }),
        reply.status(429, 'slow down', { headers: { 'retry-after': '0' } }),
        finalAnswer('ok'),
      ],
    });
    try {
      const result = await h.run(basicRow());
      assert.equal(result.reward, 1.0);
      assert.equal(h.service.calls.length, 4);
    } finally {
      await h.close();
    }
  });

  test('a fourth overload answer is not retried: HTTP 429 fails the rollout', async () => {
    const h = await startHarness({
      service: () => reply.status(429, 'still busy', { headers: { 'retry-after': '0' } }),
    });
    try {
      assertFailed(h, await h.run(basicRow()), 'HTTP 429: still busy');
      assert.equal(h.service.calls.length, 4);
    } finally {
      await h.close();
    }
  });

  test('without Retry-After, or when the wait would pass the run deadline, a 503 fails at once', async () => {
    // Waiting would take 30 s and meet the 20 s run deadline (a different error, 20 s later); failing at once does not.
    const h = await startHarness({
      service: [reply.status(503, 'no header'), reply.status(503, 'too late', { headers: { 'retry-after': '30' } })],
      config: { run_timeout_secs: 20 },
    });
    try {
      assertFailed(h, await h.run(basicRow()), 'HTTP 503: no header');
      const started = performance.now();
      assertFailed(h, await h.run(basicRow()), 'HTTP 503: too late');
      const elapsed = performance.now() - started;
      assert.ok(elapsed < 10_000, `the 503 row came after ${elapsed} ms`);
      assert.equal(h.service.calls.length, 2);
    } finally {
      await h.close();
    }
  });

  test('Retry-After is read in seconds and capped at 30 s; dates and junk are not honoured', () => {
    assert.equal(retryAfterMs('2'), 2000);
    assert.equal(retryAfterMs('0.5'), 500);
    assert.equal(retryAfterMs('3600'), 30_000);
    assert.equal(retryAfterMs(undefined), undefined);
    assert.equal(retryAfterMs('Wed, 21 Oct 2015 07:28:00 GMT'), undefined);
    assert.equal(retryAfterMs('-1'), undefined);
  });

  test('U24: a TLS failure is not retried and says so', async () => {
    // An https:// base URL pointing at a plain TCP listener: the handshake fails on the first attempt.
    let connections = 0;
    const plain = net.createServer((socket) => {
      connections++;
      socket.end('HTTP/1.1 400 Bad Request\r\n\r\n', () => socket.destroy());
    });
    await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve));
    const { port } = plain.address() as net.AddressInfo;
    const h = await startHarness({ service: [], config: { agent_base_url: `https://127.0.0.1:${port}` } });
    try {
      const result = await h.run(basicRow());
      assertFailed(h, result, /TLS with the remote service failed/);
      assert.equal(connections, 1);
    } finally {
      await h.close();
      await new Promise<void>((resolve) => plain.close(() => resolve()));
    }
  });
});

describe('O. debug knob', () => {
  test('with request debug on, the full error body is logged while the row keeps the 500-byte excerpt', async () => {
    const body = `${'a'.repeat(600)}THE-END`;
    const h = await startHarness({ service: [reply.status(500, body)], agent: { debug: true } });
    try {
      const result = await h.run(basicRow());
      assert.ok(!result.error!.includes('THE-END'));
      assert.ok(h.logs.some((line) => line.includes('THE-END')));
    } finally {
      await h.close();
    }
  });

  test('debug off by default — no full bodies in the log', async () => {
    const h = await startHarness({
      service: [reply.status(500, 'x'.repeat(600) + 'THE-END'), responseObject([assistantMessage('x')])],
    });
    try {
      await h.run(basicRow());
      assert.ok(!h.logs.some((line) => line.includes('THE-END')));
    } finally {
      await h.close();
    }
  });
});
