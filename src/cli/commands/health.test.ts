/** `gym eval health` through the real CLI, on a run's files with problems provoked on purpose. */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { runGym } from '../../../test/support/cli.js';

let dir = '';
before(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'tsgym-health-cli-'));
});
after(() => {
  rmSync(dir, { recursive: true, force: true });
});

const USAGE = { input_tokens: 3, output_tokens: 2, total_tokens: 5 };
const answer = (text: string): unknown => ({
  type: 'message',
  role: 'assistant',
  content: [{ type: 'output_text', text }],
});

function success(task: number, rollout: number, output: unknown[], extra: Record<string, unknown> = {}): unknown {
  return {
    response: { id: `r${task}_${rollout}`, status: 'completed', output, usage: USAGE },
    reward: 1,
    _ng_task_index: task,
    _ng_rollout_index: rollout,
    ...extra,
  };
}

function jsonl(name: string, rows: unknown[]): string {
  const file = path.join(dir, name);
  writeFileSync(file, rows.map((row) => `${JSON.stringify(row)}\n`).join(''));
  return file;
}

/**
 * Task 0: two identical repeats (a warning) and a duplicate of 0:1. Task 1: an unanswered call, an empty answer, a
 * reward of 2 and no usage. Task 2: a timeout in the sidecar and one rollout missing.
 */
function writeProblemRun(): void {
  jsonl('rollouts.jsonl', [
    success(0, 0, [answer('same')]),
    success(0, 1, [answer('same')]),
    success(0, 1, [answer('same')]),
    success(1, 0, [{ type: 'function_call', call_id: 'c1', name: 'add', arguments: '{}' }, answer('done')]),
    success(1, 1, [answer('   ')]),
    success(1, 2, [answer('fine')], { reward: 2 }),
    success(1, 3, [answer('fine')], { response: { output: [answer('fine')] } }),
  ]);
  jsonl('rollouts_failures.jsonl', [
    {
      reward: 0,
      error: '/run exceeded run_timeout_secs=5.0s',
      _ng_failure_class: 'remote_agent_error',
      _ng_failure_code: 'REMOTE_AGENT_RUN_TIMEOUT',
      _ng_task_index: 2,
      _ng_rollout_index: 0,
    },
  ]);
  const keys = [
    [0, 0],
    [0, 1],
    [1, 0],
    [1, 1],
    [1, 2],
    [1, 3],
    [2, 0],
    [2, 1],
  ];
  jsonl(
    'rollouts_materialized_inputs.jsonl',
    keys.map(([task, rollout]) => ({ _ng_task_index: task, _ng_rollout_index: rollout })),
  );
}

test('gym eval health prints the line and the summary path, writes the summary beside the run, and exits 0', async () => {
  writeProblemRun();
  const result = await runGym(['eval', 'health', 'rollouts.jsonl'], { cwd: dir });
  assert.equal(result.code, 0, result.stderr);
  assert.equal(
    result.stdout,
    'Rollout health: 9 checked, 1 healthy, 8 unhealthy (rollout_duplicate_identity 2, rollout_missing 1, rollout_failed 1, ' +
      'rollout_timeout 1, rollout_unanswered_tool_call 1, rollout_empty_final_answer 1, rollout_reward_out_of_range 1, ' +
      'rollout_usage_missing 1; warnings: task_degenerate_repeats 1 task)\n' +
      'Quality summary: rollouts_quality_summary.json\n',
  );
  const summary = JSON.parse(readFileSync(path.join(dir, 'rollouts_quality_summary.json'), 'utf8')) as {
    checks: Record<string, { examples: string[] }>;
  };
  assert.deepEqual(summary.checks.rollout_missing?.examples, ['2:1']);
  assert.deepEqual(summary.checks.task_degenerate_repeats?.examples, ['0:*']);

  const json = await runGym(['eval', 'health', 'rollouts.jsonl', '--json'], { cwd: dir });
  assert.equal(json.code, 0, json.stderr);
  assert.deepEqual(JSON.parse(json.stdout), summary);
});

test('gym eval health on a missing file is one Error paragraph naming it, exit 1', async () => {
  const result = await runGym(['eval', 'health', path.join('results', 'missing.jsonl')], { cwd: dir });
  assert.equal(result.code, 1);
  assert.match(
    result.stderr,
    /^Error: results\/missing\.jsonl does not exist\. gym eval health checks a rollouts file/,
  );
  assert.doesNotMatch(result.stderr, /\n\s+at /);
});
