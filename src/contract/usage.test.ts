/** sumUsage: every count added, unknown detail counts kept unknown, arguments never touched. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Usage } from './body-schemas.js';
import { sumUsage } from './usage.js';

function fullUsage(): Usage {
  return {
    input_tokens: 128,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: 27,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: 155,
  };
}

test('sumUsage adds every count', () => {
  const step = (): Usage => ({
    input_tokens: 10,
    input_tokens_details: { cached_tokens: 2 },
    output_tokens: 5,
    output_tokens_details: { reasoning_tokens: 1 },
    total_tokens: 15,
  });
  assert.deepEqual(sumUsage(step(), step()), {
    input_tokens: 20,
    input_tokens_details: { cached_tokens: 4 },
    output_tokens: 10,
    output_tokens_details: { reasoning_tokens: 2 },
    total_tokens: 30,
  });
});

test('sumUsage: a null detail count makes the sum unknown', () => {
  const known = fullUsage();
  const unknown = { ...fullUsage(), output_tokens_details: { reasoning_tokens: null } };
  assert.equal(sumUsage(known, unknown)?.output_tokens_details.reasoning_tokens, null);
  assert.equal(sumUsage(unknown, known)?.output_tokens_details.reasoning_tokens, null);
  assert.equal(sumUsage(known, unknown)?.input_tokens_details.cached_tokens, 0);
});

test('sumUsage with no total returns a copy of add', () => {
  const add = fullUsage();
  const result = sumUsage(null, add);
  assert.deepEqual(result, add);
  assert.notEqual(result, add);
  assert.notEqual(result?.input_tokens_details, add.input_tokens_details);
  assert.deepEqual(sumUsage(undefined, add), add);
});

test('sumUsage with nothing to add returns total', () => {
  const total = fullUsage();
  assert.equal(sumUsage(total, null), total);
  assert.equal(sumUsage(total, undefined), total);
  assert.equal(sumUsage(null, null), null);
  assert.equal(sumUsage(undefined, undefined), null);
});

test('sumUsage never mutates its arguments', () => {
  const total = fullUsage();
  const add = { ...fullUsage(), input_tokens_details: { cached_tokens: null } };
  const totalBefore = structuredClone(total);
  const addBefore = structuredClone(add);
  const sum = sumUsage(total, add);
  assert.deepEqual(total, totalBefore);
  assert.deepEqual(add, addBefore);
  assert.notEqual(sum, total);
  assert.notEqual(sum?.input_tokens_details, total.input_tokens_details);
});
