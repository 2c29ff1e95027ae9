import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CreateParamsSchema, ResponseSchema, UsageSchema } from './body-schemas.js';
import { validateCreateParams, validateResponse, validateUsage } from './validate.js';
import {
  assistantMessage,
  fullUsage,
  functionCall,
  functionCallOutput,
  reasoningItem,
  responseObject,
} from '../testing/index.js';

/**
 * validate* answer common shapes without zod (fast-path.ts). Whatever path answers, the verdict
 * must be the schema's: checked here on every single-field mutation of realistic objects, so a fast check that
 * accepts something the schema rejects fails this test.
 */

const REPLACEMENTS: unknown[] = [
  undefined,
  null,
  0,
  -0,
  -1,
  1.5,
  2 ** 53,
  '',
  'x',
  true,
  false,
  [],
  {},
  [{}],
  [null],
  'message',
  'function_call',
  'function_call_output',
  'reasoning',
  'output_text',
  'summary_text',
  'function',
  'assistant',
  'user',
  'completed',
  'failed',
  'auto',
  'none',
  'response',
  'default',
  'disabled',
];
const ADDED_KEYS: Array<[string, unknown]> = [
  ['extra_field', 1],
  ['prompt_token_ids', [1]],
  ['routed_experts', 'x'],
  ['annotations', [{ type: 'file_path', file_id: 'f', index: 0 }]],
  ['logprobs', []],
  ['content', [{ type: 'reasoning_text', text: 't' }]],
  ['error', { code: 'c', message: 'm' }],
  ['constructor', 1],
];

/** Every object obtained from `root` by replacing, deleting or adding one field anywhere in it. */
function* mutations(root: unknown): Generator<unknown> {
  function* at(path: PropertyKey[], value: unknown): Generator<unknown> {
    const set = (replacement: unknown, remove = false): unknown => {
      const copy = structuredClone(root) as Record<PropertyKey, unknown>;
      let holder = copy;
      for (const key of path.slice(0, -1)) holder = holder[key] as Record<PropertyKey, unknown>;
      const last = path[path.length - 1]!;
      if (remove) delete holder[last];
      else holder[last] = replacement;
      return copy;
    };
    if (path.length > 0) {
      yield set(undefined, true);
      for (const replacement of REPLACEMENTS) yield set(replacement);
    }
    if (value !== null && typeof value === 'object') {
      if (!Array.isArray(value)) {
        for (const [key, added] of ADDED_KEYS) if (!(key in value)) yield set({ ...value, [key]: added });
      }
      for (const [key, child] of Object.entries(value))
        yield* at([...path, Array.isArray(value) ? Number(key) : key], child);
    }
  }
  yield* at([], root);
}

function assertSameVerdicts(
  fixtures: unknown[],
  validate: (value: unknown) => { ok: boolean },
  schema: { safeParse(value: unknown): { success: boolean } },
): number {
  let checked = 0;
  for (const fixture of fixtures) {
    assert.equal(validate(fixture).ok, true, 'every fixture is valid');
    for (const variant of [fixture, ...mutations(fixture)]) {
      assert.equal(
        validate(variant).ok,
        schema.safeParse(variant).success,
        `verdicts differ for ${JSON.stringify(variant)}`,
      );
      checked++;
    }
  }
  return checked;
}

test('validateResponse agrees with ResponseSchema on every mutation of common responses', () => {
  const fixtures = [
    responseObject([functionCall('increment_counter', { count: 1 }, 'call_1')]),
    responseObject([reasoningItem('thinking', 'rs_1'), assistantMessage('done', 'msg_1')], {
      usage: null,
      temperature: 0.5,
    }),
    responseObject(
      [
        functionCall('get_counter_value', {}, 'call_2'),
        functionCallOutput('call_2', '{"count": 3}'),
        { ...assistantMessage('x', 'msg_2'), role: undefined },
      ],
      {
        status: 'completed',
        tools: [{ type: 'function', name: 't', parameters: { type: 'object' }, strict: true }],
        usage: fullUsage(3, 4, { cached: null }),
      },
    ),
  ];
  assert.ok(assertSameVerdicts(fixtures, validateResponse, ResponseSchema) > 1000);
});

test('validateCreateParams agrees with CreateParamsSchema on every mutation of dataset rows', () => {
  const tool = (name: string) => ({
    type: 'function',
    name,
    parameters: { type: 'object', properties: {} },
    strict: true,
    description: '',
  });
  const fixtures = [
    {
      input: [{ role: 'user', content: 'add 1 then add 2 then get the count' }],
      tools: [tool('increment_counter'), tool('get_counter_value')],
    },
    {
      input: 'hello',
      model: 'm',
      temperature: 0.2,
      max_output_tokens: 100,
      tool_choice: 'auto',
      parallel_tool_calls: false,
    },
    {
      input: [
        { type: 'message', role: 'system', content: 'be brief' },
        functionCall('increment_counter', { count: 1 }, 'call_3'),
        functionCallOutput('call_3', '{"success": true}'),
        reasoningItem('r', 'rs_2'),
        assistantMessage('ok', 'msg_3'),
      ],
      stream: false,
      store: null,
    },
  ];
  assert.ok(assertSameVerdicts(fixtures, validateCreateParams, CreateParamsSchema) > 1000);
});

test('validateUsage agrees with UsageSchema on every mutation of a usage object', () => {
  assertSameVerdicts([fullUsage(), fullUsage(1, 2, { cached: null, reasoning: null })], validateUsage, {
    safeParse: (value: unknown) => ({
      success: value === null || value === undefined || UsageSchema.safeParse(value).success,
    }),
  });
});
