/**
 * The CLI's process-level behaviour: a reader that closes stdout early (`gym … | head -1`) costs the output, not
 * the command — no EPIPE stack trace, the normal exit code, the command's files still written.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { spawnGym, tempDir, writeJsonl } from '../../test/support/cli.js';

test('gym eval profile with its stdout closed by the reader exits 0 without a stack trace and still writes its files', async () => {
  const dir = tempDir('tsgym-epipe-');
  const rows = Array.from({ length: 50 }, (_, task) => ({
    responses_create_params: { input: `t${task}` },
    _ng_task_index: task,
    _ng_rollout_index: 0,
    agent_ref: { name: 'a' },
  }));
  writeJsonl(path.join(dir, 'r_materialized_inputs.jsonl'), rows);
  writeJsonl(
    path.join(dir, 'r.jsonl'),
    rows.map((row) => ({ ...row, response: { output: [] }, reward: 1 })),
  );
  const running = spawnGym(['eval', 'profile', '--rollouts', 'r.jsonl'], { cwd: dir });
  running.child.stdout!.destroy(); // the reader is gone before the first line
  const result = await running.result;
  assert.equal(result.code, 0, result.stderr);
  assert.doesNotMatch(result.stderr, /EPIPE|\n\s+at /, result.stderr);
  assert.ok(existsSync(path.join(dir, 'r_reward_profiling.jsonl')));
});
