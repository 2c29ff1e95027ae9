import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CreateParams } from '../contract/index.js';
import { encodeElement, encodeResponse, StepBody, verifyBody } from './step-body.js';

const encoded = (items: unknown[]): Buffer[] => items.map(encodeElement);

/** What the loop sent before StepBody existed; StepBody must produce these exact bytes. */
function expected(params: Record<string, unknown>, input: unknown[], items: unknown[]): Buffer {
  return Buffer.from(JSON.stringify({ ...params, input: [...input, ...items] }));
}

test('StepBody writes the bytes JSON.stringify would, step after step', () => {
  const params = {
    model: 'm',
    input: [{ role: 'user', content: 'add 1 then add 2 — “quoted” 😀 \ud800 lone surrogate' }],
    tools: [{ type: 'function', name: 'increment_counter', parameters: { type: 'object' } }],
    temperature: 0.5,
    metadata: undefined,
    text: null,
  };
  const input = params.input as unknown[];
  const body = new StepBody(params as unknown as CreateParams, input);
  const items: unknown[] = [];
  assert.deepEqual(body.build(encoded(items)), expected(params, input, items));
  items.push({
    type: 'function_call',
    call_id: 'c1',
    name: 'increment_counter',
    arguments: '{"count":1}',
    extra: { deep: [1, 2.5, 'x'] },
  });
  items.push({ type: 'function_call_output', call_id: 'c1', output: '{"success": true}' });
  assert.deepEqual(body.build(encoded(items)), expected(params, input, items));
  items.push(
    { type: 'reasoning', id: 'rs', summary: [{ type: 'summary_text', text: 'r'.repeat(100_000) }] },
    undefined,
  );
  assert.deepEqual(body.build(encoded(items)), expected(params, input, items));
});

test('StepBody keeps input where the params put it: first, last, or alone', () => {
  for (const params of [
    { input: [{ role: 'user', content: 'a' }], model: 'm' },
    { model: 'm', tool_choice: 'auto', input: [] },
    { input: [{ role: 'user', content: 'a' }] },
    { skipped: undefined, input: [{ role: 'user', content: 'a' }], also: () => 1 },
  ]) {
    const input = params.input as unknown[];
    const items = [{ type: 'function_call_output', call_id: 'c', output: 'o' }];
    assert.deepEqual(
      new StepBody(params as unknown as CreateParams, input).build(encoded(items)),
      expected(params, input, items),
    );
  }
});

test('verifyBody and encodeResponse write the bytes JSON.stringify would, whatever the response members', () => {
  const params = { model: 'm', input: [{ role: 'user', content: 'q 😀' }] };
  const items: unknown[] = [
    { type: 'function_call', call_id: 'c1', name: 't', arguments: '{}' },
    { type: 'function_call_output', call_id: 'c1', output: 'o \ud800' },
    { type: 'message', role: 'assistant', content: 'x'.repeat(70_000) },
  ];
  for (const row of [
    {},
    { responses_create_params: params, expected_count: 3, '7': 'integer-like key', note: undefined },
  ]) {
    for (const response of [
      { id: 'r', output: items, usage: null, status: 'completed', skipped: undefined },
      { output: items },
      { output: [] },
      { id: 'r', object: 'response', output: items.slice(0, 1), usage: { input_tokens: 1, output_tokens: 2 } },
      { usage: null, output: items, 'last key': [1, { a: '}' }] },
    ]) {
      const held = { fields: { ...response, output: [] }, items: encoded(response.output) };
      assert.deepEqual(verifyBody(row, held), Buffer.from(JSON.stringify({ ...row, response })));
      assert.deepEqual(encodeResponse(held), Buffer.from(JSON.stringify(response)));
    }
  }
});
