/** isAssistantMessage and normalizeInput. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isAssistantMessage, normalizeInput } from './messages.js';
import { placeholderResponse } from './placeholder-response.js';

test('isAssistantMessage is true only for assistant message items', () => {
  assert.equal(isAssistantMessage({ type: 'message', role: 'assistant', content: 'x' }), true);
  assert.equal(isAssistantMessage(placeholderResponse().output[0]), true);
  // The output form's role defaults to assistant in the reference.
  assert.equal(isAssistantMessage({ type: 'message', id: 'm', content: [] }), true);
  assert.equal(isAssistantMessage({ type: 'message', role: 'user', content: 'x' }), false);
  assert.equal(isAssistantMessage({ type: 'message', role: 'system', content: 'x' }), false);
  assert.equal(isAssistantMessage({ type: 'function_call', role: 'assistant', call_id: 'c' }), false);
  assert.equal(isAssistantMessage({ type: 'message', content: 'x' }), false);
  assert.equal(isAssistantMessage(null), false);
  assert.equal(isAssistantMessage('assistant'), false);
});

test('normalizeInput turns a string into one user message and copies a list', () => {
  assert.deepEqual(normalizeInput('hi'), [{ role: 'user', content: 'hi' }]);
  const item = { role: 'user', content: 'hi' };
  const list = [item];
  const normalized = normalizeInput(list);
  assert.notEqual(normalized, list);
  assert.equal(normalized[0], item);
  normalized.push({ type: 'function_call_output', call_id: 'c', output: 'ok' });
  assert.equal(list.length, 1);
});
