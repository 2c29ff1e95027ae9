import assert from 'node:assert/strict';
import { test } from 'node:test';
import { floatJson } from './aggregate.js';

test('key metrics print as Python floats: whole numbers get .0, others stay as they are', () => {
  const text = floatJson({ 'mean/reward': 1, 'mean/input_tokens': 0, 'mean/score': 0.25, 'mean/neg': -3 });
  assert.equal(
    text,
    '{\n    "mean/reward": 1.0,\n    "mean/input_tokens": 0.0,\n    "mean/score": 0.25,\n    "mean/neg": -3.0\n}',
  );
  assert.deepEqual(JSON.parse(text), { 'mean/reward': 1, 'mean/input_tokens': 0, 'mean/score': 0.25, 'mean/neg': -3 });
});
