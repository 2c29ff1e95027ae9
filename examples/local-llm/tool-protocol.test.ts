import assert from 'node:assert/strict';
import { test } from 'node:test';
import { COUNTER_TOOLS } from '../../src/counter/tools.js';
import type { ConversationItem, FunctionTool } from '../../src/service/index.js';
import {
  chatMessages,
  chatTurns,
  FINAL_MAX_LENGTH,
  parseReply,
  replySchema,
  systemPrompt,
  toGrammarSchema,
} from './tool-protocol.js';
import { tinyGguf } from './tiny-gguf.js';

const TOOLS = COUNTER_TOOLS as FunctionTool[];

test('the reply grammar: one alternative per declared tool, its arguments from its parameters, then the final answer', () => {
  assert.deepEqual(replySchema(TOOLS), {
    oneOf: [
      {
        type: 'object',
        properties: {
          tool: { const: 'increment_counter' },
          arguments: { type: 'object', properties: { count: { type: 'integer' } } },
        },
      },
      {
        type: 'object',
        properties: { tool: { const: 'get_counter_value' }, arguments: { type: 'object', properties: {} } },
      },
      { type: 'object', properties: { final: { type: 'string', maxLength: FINAL_MAX_LENGTH } } },
    ],
  });
  assert.deepEqual(replySchema([]), {
    type: 'object',
    properties: { final: { type: 'string', maxLength: FINAL_MAX_LENGTH } },
  });
});

test('a JSON Schema in the grammar subset: what it can express is kept, the rest admits any value', () => {
  assert.deepEqual(
    toGrammarSchema({
      type: 'object',
      properties: {
        unit: { enum: ['c', 'f'] },
        when: { type: 'string', format: 'date' },
        name: { type: 'string', minLength: 1, maxLength: 40, pattern: '^[a-z]+$' },
        tags: { type: 'array', items: { type: 'string' }, maxItems: 3 },
        maybe: { type: ['integer', 'null'] },
        either: { anyOf: [{ type: 'number', minimum: 0 }, { const: 'none' }] },
        linked: { $ref: '#/$defs/thing' },
        free: { type: 'object' },
      },
      required: ['unit'],
    }),
    {
      type: 'object',
      properties: {
        unit: { enum: ['c', 'f'] },
        when: { type: 'string', format: 'date' },
        name: { type: 'string', minLength: 1, maxLength: 40 },
        tags: { type: 'array', items: { type: 'string' }, maxItems: 3 },
        maybe: { type: ['integer', 'null'] },
        either: { oneOf: [{ type: 'number' }, { const: 'none' }] },
        linked: {
          oneOf: [
            { type: ['string', 'number', 'boolean', 'null'] },
            { type: 'object', additionalProperties: true },
            { type: 'array' },
          ],
        },
        free: { type: 'object', properties: {}, additionalProperties: true },
      },
    },
  );
});

test('the conversation as chat turns: calls in the JSON the model answers in, results as user turns naming the tool', () => {
  const conversation: ConversationItem[] = [
    { role: 'user', content: 'add 4 then get the count' },
    { type: 'function_call', call_id: 'a', name: 'increment_counter', arguments: '{ "count": 4 }' },
    { type: 'function_call_output', call_id: 'a', output: '{"success":true}' },
    { type: 'function_call', call_id: 'b', name: 'get_counter_value', arguments: '{}' },
    { type: 'function_call_output', call_id: 'b', output: '{"count":4}' },
  ];
  const system = systemPrompt(TOOLS, 'Be brief.');
  assert.match(system, /^Be brief\.\n/);
  assert.match(system, /- increment_counter\n {2}parameters: \{"type":"object"/);
  assert.deepEqual(chatTurns(conversation, system), [
    { type: 'system', text: system },
    { type: 'user', text: 'add 4 then get the count' },
    { type: 'model', response: ['{"tool": "increment_counter", "arguments": {"count":4}}'] },
    { type: 'user', text: 'Result of increment_counter: {"success":true}' },
    { type: 'model', response: ['{"tool": "get_counter_value", "arguments": {}}'] },
    { type: 'user', text: 'Result of get_counter_value: {"count":4}' },
    { type: 'model', response: [] },
  ]);
});

test('the chat turns as chat messages for a model server: model turns are assistant messages, the open one dropped', () => {
  const turns = chatTurns(
    [
      { role: 'user', content: 'add 4' },
      { type: 'function_call', call_id: 'a', name: 'increment_counter', arguments: '{"count":4}' },
      { type: 'function_call', call_id: 'b', name: 'get_counter_value', arguments: '{}' },
      { type: 'function_call_output', call_id: 'a', output: '{"success":true}' },
    ],
    'SYSTEM',
  );
  assert.deepEqual(chatMessages(turns), [
    { role: 'system', content: 'SYSTEM' },
    { role: 'user', content: 'add 4' },
    {
      role: 'assistant',
      content:
        '{"tool": "increment_counter", "arguments": {"count":4}}\n{"tool": "get_counter_value", "arguments": {}}',
    },
    { role: 'user', content: 'Result of increment_counter: {"success":true}' },
  ]);
});

test("the model's reply as a decision: arguments go out exactly as written", () => {
  assert.deepEqual(parseReply('{"tool":"increment_counter","arguments": {"count":1E999 }\n}\n\n', TOOLS, 512), {
    toolCalls: [{ name: 'increment_counter', arguments: '{"count":1E999 }' }],
  });
  assert.deepEqual(parseReply('{"final": "4"}', TOOLS, 512), { final: '4' });
  assert.throws(
    () => parseReply('{"final": "and so on', TOOLS, 7),
    /cut off at the token limit \(7 tokens\) before its JSON closed: \{"final": "and so on — raise --max-tokens/,
  );
  assert.throws(
    () => parseReply('{"tool": "rm_rf"}', TOOLS, 512),
    /^Error: the local model answered outside its grammar/,
  );
  assert.throws(
    () => parseReply('{"final": "x', TOOLS, 9, 'the model at http://m/v1'),
    /^Error: the model at http:\/\/m\/v1's reply was cut off at the token limit \(9 tokens\)/,
  );
});

test('the tiny GGUF: version 3, twelve tensors, about 115 KB, the same bytes for the same seed', () => {
  const bytes = tinyGguf();
  assert.equal(bytes.subarray(0, 4).toString('ascii'), 'GGUF');
  assert.equal(bytes.readUInt32LE(4), 3);
  assert.equal(bytes.readBigUInt64LE(8), 12n);
  assert.ok(bytes.length > 100_000 && bytes.length < 130_000, String(bytes.length));
  assert.ok(tinyGguf().equals(bytes));
  assert.ok(!tinyGguf({ seed: 7 }).equals(bytes));
  assert.ok(!tinyGguf({ favour: '"t' }).equals(bytes));
});
