/**
 * Items kept once (bench/README.md, "items kept once"): a trajectory holds its items only encoded, and the `/verify` answer's bytes
 * become the `/run` reply without being decoded and encoded again — over HTTP and over the in-process transport of a
 * co-located environment (D23) alike.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import v8 from 'node:v8';
import vm from 'node:vm';
import { STEP_LATENCY_HEADER } from '../contract/gym-wire.js';
import type { ResponseObject } from '../contract/index.js';
import { request } from '../http/client.js';
import { registerLocalServer, unregisterLocalServer } from '../http/in-process.js';
import { App } from '../http/server.js';
import { finalAnswer, functionCall, reasoningItem, reply, responseObject, toolAsk } from '../testing/index.js';
import {
  basicRow,
  listenEnv,
  POST_TIMEOUT_MS,
  startHarness,
  type ResultResponse,
} from '../../test/support/remote-agent.js';
import { Trajectory } from './trajectory.js';
import { encodeResponse } from './step-body.js';

v8.setFlagsFromString('--expose-gc');
const collectGarbage = vm.runInNewContext('gc') as () => void;

/** One answer added to the trajectory; nothing but the returned WeakRef points at its item afterwards. */
function addAnswer(trajectory: Trajectory): WeakRef<object> {
  const answer = responseObject([reasoningItem('r'.repeat(1000))], { usage: null }) as unknown as ResponseObject;
  trajectory.addResponse(answer);
  return new WeakRef(answer.output[0] as object);
}

describe('the trajectory', () => {
  test('keeps no parsed item: an answer item is collectable once the step that read it is over', async () => {
    const trajectory = new Trajectory();
    const item = addAnswer(trajectory);
    // A WeakRef holds its target until the current job ends.
    await new Promise<void>((resolve) => setImmediate(resolve));
    collectGarbage();
    assert.equal(item.deref(), undefined, 'the trajectory still references the parsed item');
    assert.equal(trajectory.items.length, 1);
  });

  test('writes and parses back exactly the response it was given, item for item', () => {
    const trajectory = new Trajectory();
    const first = responseObject([functionCall('t', { a: '}"\\ud800😀' }, 'c1')], {
      usage: { input_tokens: 2, output_tokens: 1, total_tokens: 3 },
    }) as unknown as ResponseObject;
    const last = responseObject([reasoningItem('why'), { type: 'message', role: 'assistant', content: 'done' }], {
      usage: { input_tokens: 5, output_tokens: 3, total_tokens: 8 },
      extra_member: [1, null],
    }) as unknown as ResponseObject;
    trajectory.addResponse(first);
    trajectory.addToolOutput({ type: 'function_call_output', call_id: 'c1', output: '{"ok": true}' });
    trajectory.addResponse(last);
    const expected = {
      ...last,
      output: [
        ...first.output,
        { type: 'function_call_output', call_id: 'c1', output: '{"ok": true}' },
        ...last.output,
      ],
      usage: { input_tokens: 7, output_tokens: 4, total_tokens: 11 },
    };
    assert.deepEqual(trajectory.toResponse(), expected);
    assert.deepEqual(encodeResponse(trajectory.encoded()), Buffer.from(JSON.stringify(expected)));
  });
});

/** A verify answer spelled as no JSON encoder would write it: spacing, escapes, a trailing newline. */
const ANSWER = Buffer.from('{ "reward" : 1.0 ,\n  "note": "caf\\u00e9 ☕ }", "nested": {"a": [1, 2]} }\n');

async function agentWithVerify(verifyAnswer: Buffer, inProcess: boolean) {
  const app = new App().post('/seed_session', () => ({ body: {} })).post('/verify', () => ({ raw: verifyAnswer }));
  const env = await listenEnv(app, 'bytes_env');
  if (inProcess) registerLocalServer(env.url, app);
  const h = await startHarness({ service: [finalAnswer('ok'), finalAnswer('ok')], env });
  const runBytes = async (headers: Record<string, string> = {}): Promise<Buffer> => {
    const res = await request(`${h.url}/run`, {
      method: 'POST',
      jsonText: JSON.stringify(basicRow()),
      headers,
      timeoutMs: POST_TIMEOUT_MS,
    });
    assert.equal(res.status, 200);
    return res.body;
  };
  return {
    runBytes,
    close: async () => {
      if (inProcess) unregisterLocalServer(env.url);
      await h.close();
    },
  };
}

for (const inProcess of [false, true]) {
  const transport = inProcess ? 'in-process (co-located)' : 'over HTTP';
  describe(`the /run reply, environment ${transport}`, () => {
    test("is the verify answer's bytes exactly; the step latencies are spliced in before its last brace", async () => {
      const agent = await agentWithVerify(ANSWER, inProcess);
      try {
        assert.deepEqual(await agent.runBytes(), ANSWER);
        const withLatencies = await agent.runBytes({ [STEP_LATENCY_HEADER]: '1' });
        const latencies = (JSON.parse(withLatencies.toString('utf8')) as Record<string, unknown>)
          ._ng_step_latency_secs as number[];
        assert.equal(latencies.length, 1);
        const end = ANSWER.lastIndexOf('}');
        const field = `,"_ng_step_latency_secs":${JSON.stringify(latencies)}`;
        assert.deepEqual(
          withLatencies,
          Buffer.concat([ANSWER.subarray(0, end), Buffer.from(field), ANSWER.subarray(end)]),
        );
      } finally {
        await agent.close();
      }
    });

    test('of a verify answer that is not UTF-8 carries its decoding (U+FFFD), never the invalid bytes', async () => {
      const [head, tail] = ANSWER.toString('latin1').split('caf');
      const invalid = Buffer.concat([Buffer.from(head!, 'latin1'), Buffer.from([0xff, 0xc3]), Buffer.from(tail!)]);
      const agent = await agentWithVerify(invalid, inProcess);
      try {
        const reply = await agent.runBytes();
        assert.deepEqual(reply, Buffer.from(invalid.toString('utf8'), 'utf8'));
        assert.ok(reply.includes(Buffer.from('\ufffd')));
        assert.equal(reply.includes(0xff), false);
      } finally {
        await agent.close();
      }
    });
  });
}

test('/v1/responses answers with the merged trajectory written as JSON.stringify writes it', async () => {
  const h = await startHarness({
    service: [toolAsk(functionCall('increment_counter', { count: 1 })), finalAnswer('done 😀')],
  });
  try {
    const res = await request(`${h.url}/v1/responses`, {
      method: 'POST',
      jsonText: JSON.stringify(basicRow().responses_create_params),
      timeoutMs: POST_TIMEOUT_MS,
    });
    assert.equal(res.status, 200, res.text());
    const merged = res.json() as ResultResponse;
    assert.equal(res.text(), JSON.stringify(merged));
    assert.deepEqual(
      merged.output.map((item) => item.type),
      ['function_call', 'function_call_output', 'message'],
    );
  } finally {
    await h.close();
  }
});

test('a long conversation goes to the service in pieces, byte for byte the body JSON.stringify writes', async () => {
  // Each answer carries a 600 KB reasoning item: from the second call on the body is over 1 MiB and sent in pieces.
  const big = (n: number) => reasoningItem(`${n}`.repeat(600_000), `rs_${n}`);
  const h = await startHarness({
    service: [
      responseObject([big(1), big(4), functionCall('increment_counter', { count: 1 }, 'c1')]),
      responseObject([big(2), functionCall('increment_counter', { count: 2 }, 'c2')]),
      responseObject([big(3), { type: 'message', role: 'assistant', content: 'done' }]),
    ],
  });
  try {
    const row = basicRow('count to 3');
    const result = await h.run(row);
    assert.equal(result._ng_failure_class, undefined, String(result.error));
    const calls = h.service.calls;
    assert.deepEqual(
      calls.map((call) => call.body.input.length),
      [1, 5, 8],
    );
    assert.ok(calls[1]!.rawBody.length > 1024 * 1024 && calls[2]!.rawBody.length > 3 * 600_000);
    for (const call of calls) {
      assert.equal(call.headers['content-length'], String(call.rawBody.length));
      assert.equal(call.rawBody.toString('utf8'), JSON.stringify(call.body), `call ${call.index + 1}`);
    }
    assert.deepEqual(calls[2]!.body.input.slice(1), result.response.output.slice(0, 7));
  } finally {
    await h.close();
  }
});

test('a body sent in pieces that the service cuts off or never answers fails that rollout only', async () => {
  const h = await startHarness({
    // The first call asks for a tool with a 1.2 MB item, so the second call's body goes in pieces.
    service: (call) => {
      const input = call.body.input as unknown[];
      const question = JSON.stringify(input[0]);
      if (question.includes('plain')) return finalAnswer('still serving');
      if (input.length === 1) {
        return responseObject([reasoningItem('x'.repeat(1_200_000)), functionCall('increment_counter', { count: 1 })]);
      }
      return question.includes('cut off') ? reply.disconnect() : reply.hang();
    },
    // 5 s per call: ample for the 1.2 MB answer and for each >1 MiB body sent in pieces, however busy the machine; the
    // call never answered is the one that meets it.
    config: { remote_responses_timeout_secs: 5 },
  });
  try {
    const cut = await h.run(basicRow('cut off'));
    assert.match(String(cut.error), /could not reach the remote service|socket|closed/i);
    assert.equal(cut._ng_failure_terminal, undefined);
    assert.ok(h.service.calls[1]!.rawBody.length > 1024 * 1024);
    const hung = await h.run(basicRow('never answered'));
    assert.match(String(hung.error), /timed out after 5\.0s/);
    const plain = await h.run(basicRow('plain'));
    assert.equal(plain._ng_failure_class, undefined, String(plain.error));
  } finally {
    await h.close();
  }
});
