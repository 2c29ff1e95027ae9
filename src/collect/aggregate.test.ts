import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isPlainObject } from '../config/types.js';
import { parseLine, type ParsedLine } from '../runfiles/jsonl.js';
import { seededRandom } from '../seeded-random.js';
import { floatJson, strippedRowOf, stripForAggregation } from './aggregate.js';

test('key metrics print as Python floats: whole numbers get .0, others stay as they are', () => {
  const text = floatJson({ 'mean/reward': 1, 'mean/input_tokens': 0, 'mean/score': 0.25, 'mean/neg': -3 });
  assert.equal(
    text,
    '{\n    "mean/reward": 1.0,\n    "mean/input_tokens": 0.0,\n    "mean/score": 0.25,\n    "mean/neg": -3.0\n}',
  );
  assert.deepEqual(JSON.parse(text), { 'mean/reward': 1, 'mean/input_tokens': 0, 'mean/score': 0.25, 'mean/neg': -3 });
});

/** What the aggregation took from a line before `strippedRowOf`: the whole parse, stripped. */
function byParsing(line: Buffer): ParsedLine {
  const parsed = parseLine(line);
  return parsed.ok && isPlainObject(parsed.value) ? { ok: true, value: stripForAggregation(parsed.value) } : parsed;
}

/** Rows as the collector writes them, and as other tools or hands might: spacing, escapes, repeats, odd values. */
function rowText(random: () => number): string {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const space = (): string => (random() < 0.7 ? '' : pick([' ', '\n', '\t']));
  const values = ['1', '-0.5', 'null', 'true', '"é\\u00e9"', '[1,{"a":2}]', '{"x":{"y":[]}}', '"\\"}"'];
  const usages = ['{"input_tokens":3,"output_tokens":4}', 'null', '0', '{}', '"u"', '[1]'];
  const responses = [
    () =>
      `{"id":"r","output":[{"type":"message","content":"${'r'.repeat(Math.floor(random() * 300))}"}]${random() < 0.7 ? `,"usage":${pick(usages)}` : ''}}`,
    () => `{"usage":${pick(usages)},"usage":${pick(usages)}}`,
    () => `{"us\\u0061ge":${pick(usages)}}`,
    () => pick(['[]', 'null', '"response"', '{}']),
  ];
  const keys = [
    '"reward"',
    '"_ng_task_index"',
    '"agent_ref"',
    '"responses_create_params"',
    '"ng_trajectory"',
    '"extra"',
    '"r\\u0065ward"',
    '"ng_tr\\u0061jectory"',
    '"respons\\u0065"',
    '"__proto__"',
  ];
  const members: string[] = [];
  for (let i = Math.floor(random() * 6); i > 0; i--) {
    const key = random() < 0.3 ? '"response"' : pick(keys);
    const value = key === '"response"' ? pick(responses)() : pick(values);
    members.push(`${space()}${key}${space()}:${space()}${value}`);
  }
  return `{${members.join(',')}${space()}}`;
}

test('strippedRowOf gives what parsing and stripping a rollouts line gives, key order included (seeded fuzz)', () => {
  const seed = Number(process.env.TSGYM_TEST_SEED ?? Date.now() % 1_000_000);
  const random = seededRandom(seed);
  for (let i = 0; i < 10_000; i++) {
    let bytes = Buffer.from(rowText(random));
    if (i % 3 === 2) {
      // One byte lost or changed: the verdict (and its text) must be the parse's.
      const at = Math.floor(random() * bytes.length);
      const copy = [...bytes];
      if (random() < 0.5) copy.splice(at, 1);
      else copy[at] = '"{}[],:\\x0'.charCodeAt(Math.floor(random() * 10));
      bytes = Buffer.from(copy);
    }
    const expected = byParsing(bytes);
    const got = strippedRowOf(bytes);
    const context = `seed ${seed} (TSGYM_TEST_SEED), case ${i}: ${bytes.toString()}`;
    assert.equal(got.ok, expected.ok, context);
    if (got.ok && expected.ok) assert.equal(JSON.stringify(got.value), JSON.stringify(expected.value), context);
    else if (!got.ok && !expected.ok) assert.equal(got.reason, expected.reason, context);
  }
});

test('strippedRowOf never builds the trajectory of a well-formed line', () => {
  const big = `{"reward":1,"response":{"output":["${'r'.repeat(1_000_000)}"],"usage":{"input_tokens":1}},"_ng_task_index":0}`;
  const original = JSON.parse;
  let longest = 0;
  JSON.parse = ((text: string, ...rest: []): unknown => {
    longest = Math.max(longest, text.length);
    return original(text, ...rest);
  }) as typeof JSON.parse;
  try {
    const got = strippedRowOf(Buffer.from(big));
    assert.deepEqual(got, {
      ok: true,
      value: { reward: 1, _ng_task_index: 0, response: { usage: { input_tokens: 1 } } },
    });
  } finally {
    JSON.parse = original;
  }
  assert.ok(longest < 100, `the longest text parsed was ${longest} characters`);
});
