import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { SuccessRow } from '../runfiles/row.js';
import { identityOf, stamp } from './routing.js';

test('a stamped /verify answer is a success row: the answer’s own keys, then the stamps, overwriting', () => {
  const input = {
    responses_create_params: { input: [] },
    _ng_task_index: 2,
    _ng_rollout_index: 1,
    agent_ref: { name: 'agent' },
    _ng_attempt_index: 1,
  };
  const verified = { _ng_task_index: 9, response: { id: 'resp' }, reward: 1, extra: true };
  const row: SuccessRow = stamp(verified, identityOf(input));
  assert.equal(
    JSON.stringify(row),
    '{"response":{"id":"resp"},"reward":1,"extra":true,"_ng_task_index":2,"_ng_rollout_index":1,' +
      '"agent_ref":{"name":"agent"},"_ng_attempt_index":1}',
  );
});
