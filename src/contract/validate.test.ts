/**
 * The verdicts and the error text of validateResponse, validateUsage and validateCreateParams, and the exported item
 * schemas. (fast-path.test.ts holds the fast path's verdicts equal to these schemas'.)
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Usage } from './body-schemas.js';
import { InputItemSchema, OutputItemSchema } from './item-schemas.js';
import { validateCreateParams, validateResponse, validateUsage, type Validation } from './validate.js';

/** The reference's minimal valid response (docs/design.md, "The Responses object"). */
function specExample(): Record<string, unknown> {
  return {
    id: 'x',
    created_at: 0,
    model: 'm',
    object: 'response',
    parallel_tool_calls: false,
    tool_choice: 'auto',
    tools: [],
    output: [
      {
        type: 'message',
        id: 'msg_0',
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: '', annotations: [] }],
      },
    ],
  };
}

function withOutput(...output: unknown[]): Record<string, unknown> {
  return { ...specExample(), output };
}

function fullUsage(): Usage {
  return {
    input_tokens: 128,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: 27,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: 155,
  };
}

function failure<T>(result: Validation<T>): string {
  assert.equal(result.ok, false, 'expected the validation to fail');
  return result.message;
}

function assertAcceptsSameObject<T>(result: Validation<T>, input: unknown): void {
  assert.equal(result.ok, true, result.ok ? '' : result.message);
  assert.equal(result.value, input, 'validation must hand back the caller object');
}

// --- Response: valid shapes ---------------------------------------------------------------------------

test('the minimal Response object of the contract is valid', () => {
  const response = specExample();
  assertAcceptsSameObject(validateResponse(response), response);
});

// --- Response: required fields and types ----------------------------------------------------------------

test('each missing required top-level field fails and is named', async (t) => {
  for (const field of [
    'id',
    'created_at',
    'model',
    'object',
    'output',
    'parallel_tool_calls',
    'tool_choice',
    'tools',
  ]) {
    await t.test(field, () => {
      const response = specExample();
      delete response[field];
      assert.equal(failure(validateResponse(response)), `${field}: required`);
    });
  }
});

test('a wrong type names the field path and both types', () => {
  assert.equal(
    failure(validateResponse({ ...specExample(), created_at: '2024' })),
    'created_at: expected number, received string',
  );
  const badText = withOutput({
    type: 'message',
    id: 'm',
    role: 'assistant',
    content: [{ type: 'output_text', text: 42, annotations: [] }],
  });
  assert.equal(failure(validateResponse(badText)), 'output[0].content[0].text: expected string, received number');
  assert.equal(
    failure(validateResponse({ ...specExample(), object: 'chat.completion' })),
    "object: expected 'response', received 'chat.completion'",
  );
});

test('a body that is not an object fails without dumping it', () => {
  assert.equal(failure(validateResponse([1, 2])), 'expected object, received array');
});

test('several issues: the first three are joined and the rest counted', () => {
  const message = failure(validateResponse({ id: 'x', object: 'response' }));
  assert.equal(message, 'created_at: required; model: required; output: required (+3 more)');
});

// --- Response: extra fields (D17) -------------------------------------------------------------------------

test('an extra top-level field is accepted and kept', () => {
  const response = { ...specExample(), service_private: { trace: 'abc' } };
  const result = validateResponse(response);
  assertAcceptsSameObject(result, response);
  assert.deepEqual((result as { ok: true; value: Record<string, unknown> }).value.service_private, { trace: 'abc' });
});

test('an extra item field is accepted and kept', () => {
  const call = { type: 'function_call', call_id: 'c1', name: 'add', arguments: '{}', my_meta: { step: 3 } };
  const response = withOutput(call);
  const result = validateResponse(response);
  assertAcceptsSameObject(result, response);
  assert.equal((result as { ok: true; value: { output: unknown[] } }).value.output[0], call);
  assert.deepEqual(call.my_meta, { step: 3 });
});

test('validation never materialises defaults or mutates the input', () => {
  const response = withOutput(
    { type: 'message', role: 'assistant', content: 'done' },
    { type: 'function_call', call_id: 'c1', name: 'add', arguments: '{}' },
  );
  const before = structuredClone(response);
  for (let i = 0; i < 200; i++) assert.equal(validateResponse(response).ok, true);
  assert.deepEqual(response, before);
});

// --- Usage ----------------------------------------------------------------------------------------------

test('partial usage fails and names the missing key', () => {
  const usage = fullUsage() as Record<string, unknown>;
  usage.input_tokens_details = {};
  assert.equal(
    failure(validateResponse({ ...specExample(), usage })),
    'usage.input_tokens_details.cached_tokens: required',
  );
  const noTotal = fullUsage() as Record<string, unknown>;
  delete noTotal.total_tokens;
  assert.equal(failure(validateResponse({ ...specExample(), usage: noTotal })), 'usage.total_tokens: required');
});

test('null usage and absent usage are both valid', () => {
  assert.equal(validateResponse({ ...specExample(), usage: null }).ok, true);
  assert.equal(validateResponse(specExample()).ok, true);
  assert.deepEqual(validateUsage(null), { ok: true, value: null });
  assert.deepEqual(validateUsage(undefined), { ok: true, value: null });
});

test('null detail counts are valid', () => {
  const usage = {
    ...fullUsage(),
    input_tokens_details: { cached_tokens: null },
    output_tokens_details: { reasoning_tokens: null },
  };
  assert.equal(validateResponse({ ...specExample(), usage }).ok, true);
  assertAcceptsSameObject(validateUsage(usage), usage);
});

test('validateUsage names the missing key under usage', () => {
  const usage = fullUsage() as Record<string, unknown>;
  usage.output_tokens_details = { cache_write_tokens: 0 };
  assert.equal(failure(validateUsage(usage)), 'usage.output_tokens_details.reasoning_tokens: required');
});

// --- Output items ---------------------------------------------------------------------------------------

test('an output item without type fails', () => {
  const response = withOutput(
    { type: 'message', role: 'assistant', content: 'hi' },
    { role: 'assistant', content: 'x' },
  );
  assert.equal(
    failure(validateResponse(response)),
    'output[1]: Responses API output items must include a type discriminator',
  );
});

test('an unknown output item type fails', () => {
  assert.equal(
    failure(validateResponse(withOutput({ type: 'foo', id: 'f' }))),
    "output[0].type: unknown item type 'foo'",
  );
});

test('a function_call with object arguments fails naming output[0].arguments', () => {
  const response = withOutput({ type: 'function_call', call_id: 'c1', name: 'add', arguments: { n: 1 } });
  assert.equal(failure(validateResponse(response)), 'output[0].arguments: expected string, received object');
});

test('an output-form message without id fails', () => {
  const response = withOutput({
    type: 'message',
    role: 'assistant',
    status: 'completed',
    content: [{ type: 'output_text', text: 'x', annotations: [] }],
  });
  assert.equal(failure(validateResponse(response)), 'output[0].id: required');
});

test('an output_text part without annotations fails', () => {
  const response = withOutput({
    type: 'message',
    id: 'm',
    role: 'assistant',
    content: [{ type: 'output_text', text: 'x' }],
  });
  assert.equal(failure(validateResponse(response)), 'output[0].content[0].annotations: required');
});

test('the short-form assistant message passes', () => {
  const response = withOutput({ type: 'message', role: 'assistant', content: 'the answer is 3' });
  assertAcceptsSameObject(validateResponse(response), response);
});

test('a reasoning item without summary fails', () => {
  assert.equal(failure(validateResponse(withOutput({ type: 'reasoning', id: 'r1' }))), 'output[0].summary: required');
  assert.equal(validateResponse(withOutput({ type: 'reasoning', id: 'r1', summary: [], status: null })).ok, true);
});

test('a bad message is described in the form it was written in', () => {
  const userMessage = withOutput({ type: 'message', role: 'user', content: [{ type: 'input_text' }] });
  assert.equal(failure(validateResponse(userMessage)), 'output[0].content[0].text: required');
  const badRole = withOutput({ type: 'message', role: 'bot', content: 'hi' });
  assert.equal(
    failure(validateResponse(badRole)),
    "output[0].role: expected 'user'|'assistant'|'system'|'developer', received 'bot'",
  );
});

test('function_call_output and hosted-tool items are accepted in output with their required fields', () => {
  const response = withOutput(
    { type: 'function_call', call_id: 'c1', name: 'add', arguments: '{}' },
    { type: 'function_call_output', call_id: 'c1', output: [{ type: 'input_text', text: 'ok' }] },
    { type: 'mcp_call', name: 'n', arguments: '{}' },
    { type: 'web_search_call', id: 'w', action: { type: 'search' }, status: 'completed' },
    { type: 'custom_tool_call', call_id: 'c2', input: 'x', name: 'grep' },
  );
  assert.equal(validateResponse(response).ok, true);
  assert.equal(
    failure(validateResponse(withOutput({ type: 'web_search_call', id: 'w', status: 'completed' }))),
    'output[0].action: required',
  );
});

test('token metadata must be complete when any of it is present', () => {
  const response = withOutput({
    type: 'function_call',
    call_id: 'c',
    name: 'n',
    arguments: '{}',
    prompt_token_ids: [1],
  });
  assert.equal(
    failure(validateResponse(response)),
    'output[0]: Token metadata must include all required fields; missing: generation_token_ids, generation_log_probs',
  );
});

test('a union mismatch lists what was expected instead of every member', () => {
  assert.equal(
    failure(validateResponse({ ...specExample(), tool_choice: 5 })),
    "tool_choice: expected 'none'|'auto'|'required' or object, received number",
  );
});

test('the exported item schemas: output needs type, input may omit it for a message', () => {
  assert.equal(OutputItemSchema.safeParse({ role: 'user', content: 'hi' }).success, false);
  assert.equal(InputItemSchema.safeParse({ role: 'user', content: 'hi' }).success, true);
  assert.equal(InputItemSchema.safeParse({ type: 'function_call', call_id: 'c', name: 'n' }).success, false);
});

// --- Create params --------------------------------------------------------------------------------------

test('create-params with an unknown top-level key fails naming it', () => {
  assert.equal(failure(validateCreateParams({ input: 'hi', seed: 7 })), 'seed: unknown field');
});

test('create-params with stream: true fails', () => {
  assert.equal(failure(validateCreateParams({ input: 'hi', stream: true })), 'stream: expected false, received true');
  assert.equal(validateCreateParams({ input: 'hi', stream: false }).ok, true);
  assert.equal(validateCreateParams({ input: 'hi', stream: null }).ok, true);
});

test('create-params with string input is valid', () => {
  const params = { input: 'add 1 then add 2' };
  assertAcceptsSameObject(validateCreateParams(params), params);
});

test('create-params without input fails', () => {
  assert.equal(failure(validateCreateParams({ model: 'm' })), 'input: required');
});

test('create-params function tool without strict fails', () => {
  const params = { input: 'hi', tools: [{ type: 'function', name: 'add', parameters: { type: 'object' } }] };
  assert.equal(failure(validateCreateParams(params)), 'tools[0].strict: required');
  const complete = { input: 'hi', tools: [{ type: 'function', name: 'add', parameters: null, strict: null }] };
  assert.equal(validateCreateParams(complete).ok, true);
});

test('create-params are strict at the top only: item extras and typeless messages are fine', () => {
  const params = {
    input: [
      { role: 'user', content: 'hi' },
      { type: 'function_call', call_id: 'c', name: 'n', arguments: '{}', service_tag: 'x' },
      { type: 'function_call_output', call_id: 'c', output: 'ok' },
    ],
    metadata: { extra_body: '{"seed": 1}' },
  };
  assertAcceptsSameObject(validateCreateParams(params), params);
});

test('a full dump of create-params with nulls and defaults is valid', () => {
  const dumped = {
    input: 'hi',
    background: null,
    include: null,
    instructions: null,
    max_output_tokens: null,
    max_tool_calls: null,
    metadata: null,
    model: null,
    parallel_tool_calls: true,
    previous_response_id: null,
    prompt: null,
    reasoning: null,
    service_tier: null,
    store: null,
    temperature: null,
    text: null,
    tool_choice: 'auto',
    tools: [],
    top_logprobs: null,
    top_p: null,
    truncation: null,
    user: null,
    stream: null,
  };
  assert.equal(Object.keys(dumped).length, 23);
  assert.equal(validateCreateParams(dumped).ok, true);
});
