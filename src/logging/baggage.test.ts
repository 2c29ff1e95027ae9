import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseRolloutBaggage, rolloutBaggage } from './baggage.js';

test('the rollout keys go out as baggage and come back', () => {
  const header = rolloutBaggage({ task_index: 3, rollout_index: 0, attempt: 1 });
  assert.equal(header, 'gym.task_index=3,gym.rollout_index=0,gym.attempt=1');
  assert.deepEqual(parseRolloutBaggage(header), { task_index: 3, rollout_index: 0, attempt: 1 });
  assert.deepEqual(parseRolloutBaggage(`other=x;p=1, gym.task_index = 7 ;prop, ${header.split(',')[1]}`), {
    task_index: 7,
    rollout_index: 0,
  });
  assert.equal(rolloutBaggage({ task_index: -1, rollout_index: 1.5 }), '');
});

test('hostile baggage never throws and yields nothing it should not', () => {
  const hostile: unknown[] = [
    undefined,
    null,
    42,
    {},
    ['gym.task_index=1', 'gym.task_index=2'],
    [{}],
    '',
    ',,,,',
    '===',
    '__proto__=1,constructor=2,toString=3,hasOwnProperty=4',
    'gym.task_index=99999999999999999999,gym.rollout_index=-1,gym.attempt=1e3,gym.task_index=0x10',
    `${'a=b,'.repeat(64)}gym.task_index=5`,
    `${'x'.repeat(9000)},gym.task_index=5`,
    `gym.task_index=${'9'.repeat(100_000)}`,
  ];
  for (const value of hostile) {
    const keys = parseRolloutBaggage(value);
    assert.equal(Object.getPrototypeOf(keys), Object.prototype);
    if (Array.isArray(value) && value[0] === 'gym.task_index=1') assert.deepEqual(keys, { task_index: 1 });
    else assert.deepEqual(keys, {}, String(value).slice(0, 80));
  }
});
