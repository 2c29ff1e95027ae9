import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { serveEnvironment, type RunningEnvironment } from '../../src/environment/index.js';
import { request } from '../../src/http/client.js';
import { assistantMessage, functionCall, functionCallOutput, responseObject } from '../../src/testing/index.js';
import { createMathEnvironment } from './app.js';
import { DEFAULT_MATH_CONFIG, readMathConfig } from './config.js';

/** The math environment over real HTTP: /verify verdicts, the calculator route, config, aggregate metrics. */

const question = {
  input: [{ role: 'user', content: 'What is 3/4 as a decimal? Put your final answer in \\boxed{}.' }],
};

function verifyBody(output: unknown[], extra: Record<string, unknown> = { expected_answer: '\\frac{3}{4}' }) {
  return { responses_create_params: question, response: responseObject(output), task_type: 'fraction', ...extra };
}

async function post(base: string, path: string, body: unknown) {
  const res = await request(`${base}${path}`, { method: 'POST', json: body, timeoutMs: 30_000 });
  return { status: res.status, body: res.json() as Record<string, unknown> };
}

describe('math environment over HTTP', () => {
  let withCalculator: RunningEnvironment;
  let plain: RunningEnvironment;
  before(async () => {
    withCalculator = await serveEnvironment(createMathEnvironment({ ...DEFAULT_MATH_CONFIG, calculator: true }), {
      instanceName: 'math',
    });
    plain = await serveEnvironment(createMathEnvironment({ ...DEFAULT_MATH_CONFIG, answerExtraction: ['boxed'] }), {
      instanceName: 'math_strict',
    });
  });
  after(async () => {
    await withCalculator.close();
    await plain.close();
  });

  it('scores an equivalent answer 1.0 and says what it extracted, how, and why it matched', async () => {
    const output = [
      functionCall('calculator', { expression: '3/4' }, 'c1'),
      functionCallOutput('c1', '{"result":"0.75"}'),
      assistantMessage('It is $\\boxed{0.75}$.'),
    ];
    const { status, body } = await post(withCalculator.url, '/verify', verifyBody(output));
    assert.equal(status, 200);
    assert.equal(body.reward, 1);
    assert.equal(
      body.expected_answer,
      '\\frac{3}{4}',
      'the row keeps its expected answer (as the reference math environments do)',
    );
    assert.equal(body.extracted_answer, '0.75');
    assert.equal(body.extraction_strategy, 'boxed');
    assert.equal(body.match_reason, 'numeric_equal');
    assert.equal(body.answer_found, 1);
    assert.equal(body.calculator_calls, 1);
    assert.equal(body.task_type, 'fraction', 'other row fields are echoed');
    assert.deepEqual(body.responses_create_params, question);
  });

  it('scores a wrong answer 0.0 with match_reason mismatch, and a missing one with no_answer_found', async () => {
    const wrong = await post(withCalculator.url, '/verify', verifyBody([assistantMessage('Answer: 4/3')]));
    assert.equal(wrong.body.reward, 0);
    assert.equal(wrong.body.match_reason, 'mismatch');
    assert.equal(wrong.body.extracted_answer, '4/3');
    const silent = await post(
      withCalculator.url,
      '/verify',
      verifyBody([functionCall('calculator', { expression: '1' }, 'c2')]),
    );
    assert.deepEqual(
      [
        silent.body.reward,
        silent.body.match_reason,
        silent.body.extracted_answer,
        silent.body.extraction_strategy,
        silent.body.answer_found,
      ],
      [0, 'no_answer_found', null, null, 0],
    );
    const refusal = responseObject([
      {
        type: 'message',
        id: 'm',
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'refusal', refusal: '42' }],
      },
    ]);
    const refused = await post(withCalculator.url, '/verify', { ...verifyBody([]), response: refusal });
    assert.equal(refused.body.match_reason, 'no_answer_found', 'a refusal is not an answer');
  });

  it('reads the answer from the last assistant message only', async () => {
    const output = [assistantMessage('Maybe \\boxed{3/4}?'), assistantMessage('On reflection: \\boxed{5}')];
    const { body } = await post(withCalculator.url, '/verify', verifyBody(output));
    assert.equal(body.extracted_answer, '5');
    assert.equal(body.reward, 0);
  });

  it('accepts a number as expected_answer, and names the field when it is missing or unusable', async () => {
    const numeric = await post(
      withCalculator.url,
      '/verify',
      verifyBody([assistantMessage('#### 1,432')], { expected_answer: 1432 }),
    );
    assert.equal(numeric.body.reward, 1);
    for (const bad of [
      {},
      { expected_answer: '' },
      { expected_answer: ['1'] },
      { expected_answer: 'x'.repeat(1001) },
    ]) {
      const res = await post(withCalculator.url, '/verify', verifyBody([assistantMessage('\\boxed{1}')], bad));
      assert.equal(res.status, 422, JSON.stringify(bad));
      assert.match(JSON.stringify(res.body), /expected_answer/);
    }
  });

  it('honours the configured extraction strategies', async () => {
    const { body } = await post(plain.url, '/verify', verifyBody([assistantMessage('The answer is 0.75.')]));
    assert.equal(body.match_reason, 'no_answer_found', 'boxed-only does not fall back to "the answer is"');
    const boxed = await post(plain.url, '/verify', verifyBody([assistantMessage('\\boxed{75\\%}')]));
    assert.equal(boxed.body.reward, 1);
  });

  it('serves the calculator only when the config enables it', async () => {
    assert.deepEqual(await post(withCalculator.url, '/calculator', { expression: '(17 + 5) * 3' }), {
      status: 200,
      body: { result: '66' },
    });
    assert.deepEqual((await post(withCalculator.url, '/calculator', { expression: 'x + 1' })).body, {
      error: "the calculator evaluates numbers only; 'x' is a variable",
    });
    const missing = await post(withCalculator.url, '/calculator', { expr: '1' });
    assert.equal(missing.status, 422);
    assert.match(JSON.stringify(missing.body), /expression/);
    const absent = await post(plain.url, '/calculator', { expression: '1 + 1' });
    assert.equal(absent.status, 404);
    assert.match(JSON.stringify(absent.body), /Not Found/);
  });

  it('adds the share of each match reason and extraction strategy to the aggregate metrics', async () => {
    const rows = [
      {
        _ng_task_index: 0,
        _ng_rollout_index: 0,
        reward: 1,
        match_reason: 'numeric_equal',
        extraction_strategy: 'boxed',
      },
      {
        _ng_task_index: 1,
        _ng_rollout_index: 0,
        reward: 0,
        match_reason: 'no_answer_found',
        extraction_strategy: null,
      },
    ];
    const { status, body: reply } = await post(withCalculator.url, '/aggregate_metrics', { verify_responses: rows });
    assert.equal(status, 200);
    const body = reply as { agent_metrics: Record<string, unknown> };
    assert.equal(body.agent_metrics['match_reason/numeric_equal'], 0.5);
    assert.equal(body.agent_metrics['match_reason/no_answer_found'], 0.5);
    assert.equal(body.agent_metrics['extraction_strategy/boxed'], 0.5);
    assert.equal(body.agent_metrics['mean/reward'], 0.5);
  });

  it('is stateless: a stored row verifies again to the same verdict', async () => {
    const body = verifyBody([assistantMessage('\\boxed{\\dfrac{6}{8}}')]);
    const first = await post(withCalculator.url, '/verify', body);
    const again = await post(withCalculator.url, '/verify', body);
    assert.deepEqual(again.body, first.body);
    const mode = await request(`${withCalculator.url}/reverify_mode`, { method: 'GET', timeoutMs: 30_000 });
    assert.equal(mode.json(), 'stateless');
  });
});

describe('math environment config', () => {
  const where = 'math_resources_server.resources_servers.math';
  it('reads its keys, with defaults for the ones left out', () => {
    assert.deepEqual(readMathConfig({ entrypoint: 'app.ts' }, where), DEFAULT_MATH_CONFIG);
    assert.deepEqual(
      readMathConfig(
        { calculator: true, answer_extraction: ['boxed', 'last_number'], relative_tolerance: 1e-3 },
        where,
      ),
      {
        ...DEFAULT_MATH_CONFIG,
        calculator: true,
        answerExtraction: ['boxed', 'last_number'],
        relativeTolerance: 1e-3,
      },
    );
  });

  it('rejects a wrong value naming the key, the value and the rule', () => {
    assert.throws(
      () => readMathConfig({ calculator: 'yes' }, where),
      /math_resources_server\.resources_servers\.math\.calculator is "yes", but it must be true or false/,
    );
    assert.throws(
      () => readMathConfig({ answer_extraction: ['boxed', 'regex'] }, where),
      /answer_extraction is "regex", but it must be one of boxed, hashes, answer_line, the_answer_is, last_number/,
    );
    assert.throws(() => readMathConfig({ answer_extraction: [] }, where), /a non-empty list/);
    assert.throws(() => readMathConfig({ answer_extraction: ['boxed', 'boxed'] }, where), /each strategy once/);
    assert.throws(() => readMathConfig({ relative_tolerance: -1 }, where), /relative_tolerance is -1/);
    assert.throws(() => readMathConfig({ absolute_tolerance: '1e-9' }, where), /absolute_tolerance is "1e-9"/);
  });
});
