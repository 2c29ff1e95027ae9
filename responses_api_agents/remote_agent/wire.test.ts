import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, test } from 'node:test';
import { App } from '../../src/http/server.js';
import type { Row } from '../../src/runfiles/row.js';
import type { VerifyRequest } from '../../src/server/resources-server.js';
import { normalizeInput } from '../../src/service/index.js';
import {
  assistantMessage,
  finalAnswer,
  functionCall,
  reply,
  responseObject,
  startScriptedService,
  toolAsk,
} from '../../src/testing/index.js';
import {
  basicRow,
  ENV_COOKIE,
  listenEnv,
  startHarness,
  typesOf,
  type EnvRequest,
} from '../../test/support/remote-agent.js';

describe('B. what the service receives', () => {
  test("the first request is the row's create-params exactly — no defaults, no answer key, no extras, no _ng_*", async () => {
    const h = await startHarness({ service: [finalAnswer('42')] });
    try {
      const row = {
        responses_create_params: { input: [{ role: 'user', content: 'what is 6 x 7?' }] },
        verifier_metadata: { expected_answer: '42' },
        expected_count: 6,
        initial_count: 3,
        agent_ref: { type: 'responses_api_agents', name: 'remote_agent' },
        _ng_task_index: 0,
        _ng_rollout_index: 1,
        _ng_attempt_index: 2,
      };
      const result = await h.run(row);
      assert.equal(result.reward, 1.0);
      const [call] = h.service.calls;
      assert.equal(call!.method, 'POST');
      assert.equal(call!.path, '/v1/responses');
      assert.deepEqual(call!.body, row.responses_create_params);
      assert.deepEqual(Object.keys(call!.body), ['input']);
    } finally {
      await h.close();
    }
  });

  test('Gym sets only Content-Type: application/json and the W3C traceparent (D25) — no auth, no Gym headers, no env cookie', async () => {
    const h = await startHarness({ service: [finalAnswer('42')] });
    try {
      await h.run(basicRow());
      const headers = h.service.calls[0]!.headers;
      assert.equal(headers['content-type'], 'application/json');
      assert.match(String(headers.traceparent), /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
      const allowed = new Set(['host', 'connection', 'content-type', 'content-length', 'traceparent']);
      assert.deepEqual(
        Object.keys(headers).filter((name) => !allowed.has(name)),
        [],
      );
    } finally {
      await h.close();
    }
  });

  test('later requests carry the whole conversation — input, the service items as sent, one output per call', async () => {
    const call = functionCall('increment_counter', { count: 3 }, 'call_a');
    const h = await startHarness({ service: [toolAsk(call), finalAnswer('done')] });
    try {
      const row = basicRow();
      await h.run(row);
      const second = h.service.calls[1]!.body;
      assert.deepEqual(typesOf(second.input), ['message', 'function_call', 'function_call_output']);
      assert.deepEqual(second.input[0], row.responses_create_params.input[0]);
      assert.deepEqual(second.input[1], call);
      assert.deepEqual(second.input[2], {
        type: 'function_call_output',
        call_id: 'call_a',
        output: '{"success":true}',
      });
      assert.deepEqual(second.tools, row.responses_create_params.tools);
      assert.deepEqual(Object.keys(second), Object.keys(row.responses_create_params));
    } finally {
      await h.close();
    }
  });

  test('a string input becomes one user message', async () => {
    const h = await startHarness({ service: [finalAnswer('ok')] });
    try {
      const result = await h.run({ ...basicRow(), responses_create_params: { input: 'just a string' } });
      assert.equal(result.reward, 1.0);
      assert.deepEqual(h.service.calls[0]!.body.input, [{ role: 'user', content: 'just a string' }]);
    } finally {
      await h.close();
    }
  });

  test("the tool schemas the service sees are the row's tools, verbatim, on every step", async () => {
    const h = await startHarness({ service: [toolAsk(functionCall('get_counter_value')), finalAnswer('3')] });
    try {
      const row = basicRow();
      await h.run(row);
      for (const call of h.service.calls) assert.deepEqual(call.body.tools, row.responses_create_params.tools);
    } finally {
      await h.close();
    }
  });

  test('a trailing slash never produces a double slash on the wire', async () => {
    const service = await startScriptedService([finalAnswer('ok')]);
    const h = await startHarness({ service, config: { agent_base_url: `  ${service.url}//  ` } });
    try {
      await h.run(basicRow());
      assert.equal(h.service.calls[0]!.path, '/v1/responses');
    } finally {
      await h.close();
    }
  });

  test('a path prefix is kept — the POST goes to <prefix>/v1/responses', async () => {
    const service = await startScriptedService([finalAnswer('ok')]);
    const h = await startHarness({ service, config: { agent_base_url: `${service.url}/base/` } });
    try {
      await h.run(basicRow());
      assert.equal(h.service.calls[0]!.path, '/base/v1/responses');
    } finally {
      await h.close();
    }
  });

  test('D17 / U31: items are echoed back and stored exactly as sent, unknown item fields included', async () => {
    const odd = { ...functionCall('get_counter_value', {}, 'c1'), x_service_meta: { trace: 'abc', n: [1, 2] } };
    const message = { ...assistantMessage('thinking…'), x_note: 'kept' };
    const h = await startHarness({ service: [responseObject([message, odd]), finalAnswer('3')] });
    try {
      const result = await h.run(basicRow());
      const echoed = h.service.calls[1]!.body.input;
      assert.deepEqual(echoed[1], message);
      assert.deepEqual(echoed[2], odd);
      assert.deepEqual(result.response.output[0], message);
      assert.deepEqual(result.response.output[1], odd);
    } finally {
      await h.close();
    }
  });

  test('U29: a re-fed failure row sends the same first payload as the original row', async () => {
    const h = await startHarness({ service: [reply.status(500, 'boom'), finalAnswer('ok')] });
    try {
      const original = basicRow('hi', {
        responses_create_params: { input: [{ role: 'user', content: 'hi' }], temperature: 0.5 },
      });
      const failed = await h.run(original);
      assert.equal(failed._ng_failure_class, 'remote_agent_error');
      const again = await h.run(failed);
      assert.equal(again.reward, 1.0);
      assert.deepEqual(h.service.calls[1]!.body, h.service.calls[0]!.body);
      assert.deepEqual(h.service.calls[0]!.body, original.responses_create_params);
    } finally {
      await h.close();
    }
  });
});

describe('E. cookies and secrecy', () => {
  test('service cookies round-trip — none on step 1, accumulated and overwritten later, names and values only', async () => {
    const h = await startHarness({
      service: [
        reply.json(toolAsk(functionCall('get_counter_value')), {
          setCookies: ['svc_session=svc1; Path=/; HttpOnly', 'keep=k1; Path=/'],
        }),
        reply.json(toolAsk(functionCall('get_counter_value')), { setCookies: ['svc_session=svc2; Path=/'] }),
        finalAnswer('done'),
      ],
    });
    try {
      await h.run(basicRow());
      assert.deepEqual(h.service.calls[0]!.cookies, {});
      assert.deepEqual(h.service.calls[1]!.cookies, { svc_session: 'svc1', keep: 'k1' });
      assert.deepEqual(h.service.calls[2]!.cookies, { svc_session: 'svc2', keep: 'k1' });
    } finally {
      await h.close();
    }
  });

  test('resources-server cookies (seed session, tool-set cookie) never reach the service', async () => {
    const h = await startHarness({
      service: [
        reply.json(toolAsk(functionCall('increment_counter', { count: 1 })), { setCookies: ['svc_session=svc1'] }),
        finalAnswer('ok'),
      ],
      env: { setCookies: { '/seed_session': ['session=abc123'], '/increment_counter': ['tool_session=t1'] } },
    });
    try {
      await h.run(basicRow());
      assert.deepEqual(h.service.calls[0]!.cookies, {});
      assert.deepEqual(h.service.calls[1]!.cookies, { svc_session: 'svc1' });
      // …while the environment did set them and got them back.
      const verify = h.env.to('/verify')[0]!;
      assert.equal(verify.cookies.session, 'abc123');
      assert.equal(verify.cookies.tool_session, 't1');
    } finally {
      await h.close();
    }
  });

  test('U6: service cookies never reach tools or verify, even when both peers use the same cookie name', async () => {
    const h = await startHarness({
      service: [
        reply.json(toolAsk(functionCall('increment_counter', { count: 1 })), {
          setCookies: ['svc=1', 'session=from-service'],
        }),
        reply.json(toolAsk(functionCall('get_counter_value')), { setCookies: ['svc=2'] }),
        finalAnswer('ok'),
      ],
      env: { setCookies: { '/seed_session': ['session=from-env'] } },
    });
    try {
      await h.run(basicRow());
      for (const r of h.env.requests) {
        assert.equal(r.cookies.svc, undefined, `${r.path} got the service's cookie`);
        if (r.path !== '/seed_session') assert.equal(r.cookies.session, 'from-env', r.path);
      }
      assert.equal(h.service.calls[1]!.cookies.session, 'from-service');
      assert.equal(h.service.calls[2]!.cookies.session, 'from-service');
    } finally {
      await h.close();
    }
  });

  test("U5: concurrent rollouts never see each other's cookies; a re-run of the same task starts clean", async () => {
    const h = await startHarness({
      service: (call) => {
        const who = normalizeInput(call.body.input)[0]!.content as string;
        const turn = call.body.input.length;
        if (turn === 1) return reply.json(toolAsk(functionCall('get_counter_value')), { setCookies: [`owner=${who}`] });
        return finalAnswer(`cookie was ${call.cookies.owner}`);
      },
    });
    try {
      await Promise.all([h.run(basicRow('alpha')), h.run(basicRow('beta')), h.run(basicRow('gamma'))]);
      for (const call of h.service.calls) {
        const who = normalizeInput(call.body.input)[0]!.content;
        if (call.body.input.length === 1) assert.deepEqual(call.cookies, {});
        else assert.deepEqual(call.cookies, { owner: who });
      }
      const before = h.service.calls.length;
      await h.run(basicRow('alpha'));
      assert.deepEqual(h.service.calls[before]!.cookies, {});
    } finally {
      await h.close();
    }
  });

  test('the answer key goes to seed and verify only, never to the service', async () => {
    const h = await startHarness({ service: [finalAnswer('42')] });
    try {
      await h.run(basicRow());
      assert.ok(!JSON.stringify(h.service.calls[0]!.body).includes('expected_answer'));
      assert.deepEqual((h.env.to('/seed_session')[0]!.body as Row).verifier_metadata, { expected_answer: '42' });
      assert.deepEqual((h.env.to('/verify')[0]!.body as VerifyRequest).verifier_metadata, { expected_answer: '42' });
    } finally {
      await h.close();
    }
  });

  test('the seeded session reaches tools and verify; verify gets the trajectory plus the row', async () => {
    const h = await startHarness({
      service: [toolAsk(functionCall('increment_counter', { count: 2 })), finalAnswer('done', { id: 'traj_1' })],
      env: { setCookies: { '/seed_session': ['session=s1'] } },
    });
    try {
      await h.run(basicRow());
      const [seed, tool, verify] = h.env.requests as [EnvRequest, EnvRequest, EnvRequest];
      assert.deepEqual([seed.path, tool.path, verify.path], ['/seed_session', '/increment_counter', '/verify']);
      assert.deepEqual(seed.cookies, {});
      const sessionCookie = tool.cookies[ENV_COOKIE];
      assert.ok(sessionCookie);
      assert.equal(tool.cookies.session, 's1');
      assert.equal(verify.cookies[ENV_COOKIE], sessionCookie);
      assert.equal(verify.cookies.session, 's1');
      const verified = verify.body as VerifyRequest;
      assert.equal(verified.response.id, 'traj_1');
      assert.deepEqual(verified.verifier_metadata, { expected_answer: '42' });
      assert.equal(verified.expected_count, 6);
    } finally {
      await h.close();
    }
  });

  test('D7 / U4: a deleting Set-Cookie (Max-Age=0, past Expires) removes the cookie instead of re-sending it empty', async () => {
    const h = await startHarness({
      service: [
        reply.json(toolAsk(functionCall('get_counter_value')), { setCookies: ['a=1', 'b=2', 'c=3'] }),
        reply.json(toolAsk(functionCall('get_counter_value')), {
          setCookies: ['a=; Max-Age=0', 'b=gone; Expires=Thu, 01 Jan 1970 00:00:00 GMT'],
        }),
        finalAnswer('ok'),
      ],
    });
    try {
      await h.run(basicRow());
      assert.deepEqual(h.service.calls[2]!.cookies, { c: '3' });
    } finally {
      await h.close();
    }
  });

  test('D7 / U20: a tool reply that sets no cookie keeps the environment session for later tools and verify', async () => {
    // An environment with a plain cookie session that only the seed sets (no middleware re-sending it).
    const requests: EnvRequest[] = [];
    const app = new App()
      .use(async (req, next) => {
        requests.push({ path: req.path, body: req.json(), cookies: { ...req.cookies } });
        return next();
      })
      .post('/seed_session', () => ({ body: {}, setCookies: ['sid=abc; Path=/'] }))
      .post('/get_counter_value', () => ({ body: { count: 3 } }))
      .post('/verify', (req) => ({ body: { reward: req.cookies.sid === 'abc' ? 1.0 : 0.0 } }));
    const env = await listenEnv(app, 'plain_cookie_env', requests);
    const h = await startHarness({
      service: [
        toolAsk(functionCall('get_counter_value')),
        toolAsk(functionCall('get_counter_value')),
        finalAnswer('3'),
      ],
      env,
    });
    try {
      const result = await h.run(basicRow());
      assert.equal(result.reward, 1.0);
      assert.deepEqual(
        requests.map((r) => [r.path, r.cookies.sid]),
        [
          ['/seed_session', undefined],
          ['/get_counter_value', 'abc'],
          ['/get_counter_value', 'abc'],
          ['/verify', 'abc'],
        ],
      );
    } finally {
      await h.close();
    }
  });
});

describe('P. proxy environment variables', () => {
  test('D16: HTTP_PROXY, HTTPS_PROXY and ALL_PROXY are ignored — the service is called directly', async () => {
    let proxied = 0;
    const proxy = http.createServer((_req, res) => {
      proxied++;
      res.writeHead(502).end('proxy should not be used');
    });
    proxy.on('connect', (_req, socket) => {
      proxied++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    const saved = {
      HTTP_PROXY: process.env.HTTP_PROXY,
      HTTPS_PROXY: process.env.HTTPS_PROXY,
      ALL_PROXY: process.env.ALL_PROXY,
    };
    Object.assign(process.env, { HTTP_PROXY: proxyUrl, HTTPS_PROXY: proxyUrl, ALL_PROXY: proxyUrl });
    const h = await startHarness({ service: [toolAsk(functionCall('get_counter_value')), finalAnswer('3')] });
    try {
      const result = await h.run(basicRow());
      assert.equal(result.reward, 1.0);
      assert.equal(h.service.calls.length, 2);
      assert.equal(proxied, 0);
    } finally {
      for (const [key, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
      await h.close();
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    }
  });
});
