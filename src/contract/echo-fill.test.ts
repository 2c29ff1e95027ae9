/**
 * Completing a response from its request (D24): exactly the three echo fields and the usage detail objects are
 * added, from the request or its defaults, and nothing else changes: `output` is the service's own array.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { fillEchoFields, validateResponseFillingEchoes } from './echo-fill.js';
import { validateResponse } from './validate.js';

type Body = Record<string, unknown>;

const TOOLS = [
  {
    type: 'function',
    name: 'get_counter_value',
    description: 'Read the counter.',
    parameters: { type: 'object', properties: {} },
    strict: true,
  },
];

/** llama-server's answer, as issue #24 quotes it. */
function llamaServerAnswer(): Body {
  return {
    completed_at: 1796155686,
    created_at: 1796155686,
    id: 'resp_abc',
    model: 'tiny',
    object: 'response',
    output: [
      {
        id: 'fc_abc',
        type: 'function_call',
        status: 'completed',
        arguments: '{ }',
        call_id: 'call_abc',
        name: 'get_counter_value',
      },
    ],
    status: 'completed',
    usage: { input_tokens: 192, output_tokens: 64, total_tokens: 256, input_tokens_details: { cached_tokens: 0 } },
  };
}

describe('fillEchoFields', () => {
  test("llama-server's answer, completed, is what a complete implementation sends for that request", () => {
    const request = {
      input: [{ role: 'user', content: 'get the count' }],
      tools: TOOLS,
      tool_choice: 'required',
      parallel_tool_calls: false,
    };
    const answer = llamaServerAnswer();
    const before = structuredClone(answer);
    const fill = fillEchoFields(answer, request);
    const complete = {
      completed_at: 1796155686,
      created_at: 1796155686,
      id: 'resp_abc',
      model: 'tiny',
      object: 'response',
      output: [
        {
          id: 'fc_abc',
          type: 'function_call',
          status: 'completed',
          arguments: '{ }',
          call_id: 'call_abc',
          name: 'get_counter_value',
        },
      ],
      parallel_tool_calls: false,
      tool_choice: 'required',
      tools: TOOLS,
      status: 'completed',
      usage: {
        input_tokens: 192,
        output_tokens: 64,
        total_tokens: 256,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens_details: { reasoning_tokens: 0 },
      },
    };
    assert.deepEqual(fill.value, complete);
    assert.deepEqual(fill.filled, ['tools', 'tool_choice', 'parallel_tool_calls', 'usage.output_tokens_details']);
    assert.equal(fill.usageFilled, true);
    assert.equal(fill.value.output, answer.output, 'output is the service array itself, never rebuilt');
    assert.deepEqual(answer, before, 'the answer is not mutated');
    assert.notEqual(fill.value.tools, request.tools, 'the request tools are copied, not shared');
    assert.equal(validateResponse(fill.value).ok, true);
  });

  test('a request that set none of them gets what the Responses API reports for unset settings', () => {
    const fill = fillEchoFields(llamaServerAnswer(), { input: 'hi' } as Body);
    assert.deepEqual(fill.value.tools, []);
    assert.equal(fill.value.tool_choice, 'auto');
    assert.equal(fill.value.parallel_tool_calls, true);
  });

  test('fields the service sent are kept, even when wrong; null or absent detail objects become zeros', () => {
    const answer = {
      ...llamaServerAnswer(),
      tools: [],
      tool_choice: 'none',
      parallel_tool_calls: 'yes',
      usage: { input_tokens: 1, output_tokens: 2, total_tokens: 3, input_tokens_details: null },
    };
    const fill = fillEchoFields(answer, { tools: TOOLS, tool_choice: 'auto', parallel_tool_calls: true });
    assert.deepEqual(fill.filled, ['usage.input_tokens_details', 'usage.output_tokens_details']);
    assert.equal(fill.value.parallel_tool_calls, 'yes');
    assert.deepEqual(fill.value.tools, []);
    assert.deepEqual(fill.value.usage, {
      input_tokens: 1,
      output_tokens: 2,
      total_tokens: 3,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens_details: { reasoning_tokens: 0 },
    });
  });

  test('a complete answer, or one without usage, comes back as itself with nothing filled', () => {
    const complete = fillEchoFields(llamaServerAnswer(), { tools: TOOLS }).value;
    const again = fillEchoFields(complete, { tools: TOOLS });
    assert.equal(again.value, complete);
    assert.deepEqual(again.filled, []);
    const { usage: _usage, ...noUsage } = complete;
    assert.equal(fillEchoFields(noUsage, { tools: TOOLS }).usageFilled, false);
  });
});

describe('validateResponseFillingEchoes', () => {
  test('a valid response is accepted as itself, nothing filled', () => {
    const complete = fillEchoFields(llamaServerAnswer(), { tools: TOOLS }).value;
    const checked = validateResponseFillingEchoes(complete, { tools: TOOLS });
    assert.ok(checked.ok);
    assert.equal(checked.value, complete);
    assert.deepEqual(checked.filled, []);
  });

  test('an invalid output item is never repaired: the error is the one a complete object with that item gets', () => {
    const answer = llamaServerAnswer();
    (answer.output as Body[])[0]!.arguments = { count: 1 };
    const checked = validateResponseFillingEchoes(answer, { tools: TOOLS });
    const withEchoes = validateResponse({
      ...answer,
      tools: TOOLS,
      tool_choice: 'auto',
      parallel_tool_calls: true,
      usage: undefined,
    });
    assert.equal(checked.ok, false);
    assert.equal(withEchoes.ok, false);
    assert.equal(!checked.ok && checked.message, !withEchoes.ok && withEchoes.message);
    assert.match(!checked.ok ? checked.message : '', /^output\[0\]\.arguments/);
  });

  test('a missing field that is not an echo (id) stays invalid, named as today', () => {
    const { id: _id, ...answer } = llamaServerAnswer();
    const checked = validateResponseFillingEchoes(answer, { tools: TOOLS });
    assert.deepEqual(checked, { ok: false, message: 'id: required' });
  });
});
