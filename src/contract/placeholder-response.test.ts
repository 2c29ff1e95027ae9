/** The placeholder response of failure rows: valid, shaped as promised, and never shared between rows. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { placeholderResponse } from './placeholder-response.js';
import { validateResponse, type Validation } from './validate.js';

function assertAcceptsSameObject<T>(result: Validation<T>, input: unknown): void {
  assert.equal(result.ok, true, result.ok ? '' : result.message);
  assert.equal(result.value, input, 'validation must hand back the caller object');
}

test('the placeholder response is valid', () => {
  const placeholder = placeholderResponse();
  assertAcceptsSameObject(validateResponse(placeholder), placeholder);
});

test('the placeholder has the fields failure rows promise and is a fresh object per call', () => {
  const first = placeholderResponse();
  assert.deepEqual(first, {
    id: 'remote_agent_failure',
    created_at: 0,
    model: 'remote_agent',
    object: 'response',
    output: [
      {
        id: 'msg_0',
        type: 'message',
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: '', annotations: [] }],
      },
    ],
    parallel_tool_calls: false,
    tool_choice: 'auto',
    tools: [],
  });
  first.output.length = 0;
  assert.equal(placeholderResponse().output.length, 1);
});
