import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NG } from './ng-keys.js';
import { failureRow } from './row.js';

const PLACEHOLDER =
  '{"id":"remote_agent_failure","created_at":0,"model":"remote_agent","object":"response","output":[{"id":"msg_0",' +
  '"type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"",' +
  '"annotations":[]}]}],"parallel_tool_calls":false,"tool_choice":"auto","tools":[]}';

test('a failure row keeps the row’s keys in place and appends the failure fields in the written order', () => {
  const stale = {
    _ng_task_index: 3,
    reward: 1,
    error: 'old',
    _ng_failure_class: 'old_class',
    _ng_no_persist: true,
    _ng_failure_judge_error: 'old judge',
    _ng_step_latency_secs: [1],
    responses_create_params: { input: [] },
    _ng_failure_terminal: true,
  };
  assert.equal(
    JSON.stringify(failureRow(stale, 'invalid_row', 'bad row', true)),
    '{"_ng_task_index":3,"reward":0,"responses_create_params":{"input":[]},' +
      `"response":${PLACEHOLDER},"error":"bad row","_ng_failure_class":"invalid_row","_ng_failure_terminal":true}`,
  );
  assert.equal(
    JSON.stringify(failureRow({ _ng_rollout_index: 1 }, 'collector_error', 'down', false)),
    `{"_ng_rollout_index":1,"reward":0,"response":${PLACEHOLDER},"error":"down","_ng_failure_class":"collector_error"}`,
  );
});

test('every _ng_ key is in the table once', () => {
  const keys = Object.values(NG);
  assert.equal(new Set(keys).size, keys.length);
  for (const key of keys) assert.match(key, /^_ng_[a-z_]+$/);
});
