/** `gym eval profile` through the real CLI on a hand-made run with failures, checked against hand-computed numbers. */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { before, test } from 'node:test';
import { readJsonl, runGym, tempDir, writeJsonl } from '../../test/support/cli.js';

const close = (actual: unknown, expected: number, what: string): void => {
  assert.equal(typeof actual, 'number', `${what} is a number`);
  const value = actual as number;
  assert.ok(Math.abs(value - expected) < 1e-9, `${what}: ${value} ≈ ${expected}`);
};

let dir = '';
const file = (name: string): string => path.join(dir, name);
const usage = (input: number, output: number) => ({
  usage: { input_tokens: input, output_tokens: output, total_tokens: input + output },
});

function writeLines(target: string, lines: string[]): void {
  writeFileSync(target, lines.map((line) => `${line}\n`).join(''));
}

/**
 * 3 tasks × 2 rollouts for agent `a`:
 * (0,0) reward 1 and (0,1) reward 0 completed; (1,0) reward 1.0 completed, (1,1) failed (retryable);
 * (2,0) missing, (2,1) failed terminally.
 */
before(() => {
  dir = tempDir('tsgym-profile-');
  const inputs = [0, 1, 2].flatMap((task) =>
    [0, 1].map((rollout) => ({
      responses_create_params: { input: `task ${task}` },
      q: task,
      agent_ref: { name: 'a' },
      _ng_task_index: task,
      _ng_rollout_index: rollout,
    })),
  );
  writeJsonl(file('r_materialized_inputs.jsonl'), inputs);
  writeLines(file('r.jsonl'), [
    // Written in completion order, and one reward as Python writes it (1.0).
    `{"reward":0,"score":0.25,"passed":false,"response":${JSON.stringify(usage(20, 6))},"_ng_task_index":0,"_ng_rollout_index":1,"agent_ref":{"name":"a"}}`,
    `{"reward":1.0,"score":1,"passed":true,"response":${JSON.stringify(usage(30, 8))},"_ng_task_index":1,"_ng_rollout_index":0,"agent_ref":{"name":"a"}}`,
    `{"reward":1,"score":0.5,"passed":true,"response":${JSON.stringify(usage(10, 4))},"_ng_task_index":0,"_ng_rollout_index":0,"agent_ref":{"name":"a"}}`,
  ]);
  writeJsonl(file('r_failures.jsonl'), [
    {
      reward: 0,
      error: 'HTTP 500',
      _ng_failure_class: 'remote_agent_error',
      _ng_task_index: 1,
      _ng_rollout_index: 1,
      agent_ref: { name: 'a' },
    },
    {
      reward: 0,
      error: 'bad object',
      _ng_failure_class: 'remote_agent_error',
      _ng_failure_terminal: true,
      _ng_task_index: 2,
      _ng_rollout_index: 1,
      agent_ref: { name: 'a' },
    },
  ]);
});

test('keys in neither the rollouts nor the sidecar stop the profile unless ++allow_partial_rollouts=true', async () => {
  const res = await runGym(['eval', 'profile', '--rollouts', 'r.jsonl'], { cwd: dir });
  assert.equal(res.code, 1);
  assert.match(
    res.stderr,
    /Missing rollout results for 1 materialized input rows .*Missing rollout keys: \[\(2, 0\)\]/s,
  );
  assert.match(res.stderr, /Use \+\+allow_partial_rollouts=True/);
});

test('per task and per agent statistics, pass@k and the outcome counts match hand-computed values', async () => {
  const res = await runGym(
    [
      'eval',
      'profile',
      '--inputs',
      'r_materialized_inputs.jsonl',
      '--rollouts',
      'r.jsonl',
      '++allow_partial_rollouts=true',
    ],
    { cwd: dir },
  );
  assert.equal(res.code, 0, res.stderr);
  assert.match(res.stdout, /Reward profile completion: 3\/6 rollout rows \(50\.00%\)/);
  assert.match(res.stdout, /Input rows: 3 total; 1 complete; 1 partial; 1 without rollouts dropped from output\./);
  assert.match(
    res.stdout,
    /Agent a: 3 tasks, 6 rollouts expected: 3 completed, 2 failed \(1 retryable, 1 terminal\), 1 missing\./,
  );
  assert.match(
    res.stdout,
    /mean reward 0\.6667 over 3 completed; 0\.4000 over 5 attempted with failures counted as 0\./,
  );
  // The interval rests on the two tasks with a completed rollout (means 0.5 and 1): 0.75 ± t(0.975, 1) × 0.25.
  assert.match(res.stdout, /^ {2}reward +0\.6667 +\[-2\.4266, 3\.9266\] +1 +0 +1 +0\.5774$/m);
  assert.match(
    res.stdout,
    /^ {2}reward 95% CI \[-2\.4266, 3\.9266\] \(Student t over 2 task means, standard error 0\.2500\)\.$/m,
  );

  const groups = readJsonl(file('r_reward_profiling.jsonl'));
  assert.deepEqual(
    groups.map((g) => g._ng_task_index),
    [0, 1],
  );
  const [task0, task1] = groups as [Record<string, unknown>, Record<string, unknown>];
  assert.equal(task0['mean/reward'], 0.5);
  close(task0['std/reward'], Math.sqrt(0.5), 'task 0 std/reward');
  assert.equal(task0['mean/input_tokens'], 15);
  close(task0['std/input_tokens'], Math.sqrt(50), 'task 0 std/input_tokens');
  assert.equal(task0['mean/score'], 0.375);
  assert.equal(task0['median/passed'], 0.5);
  assert.deepEqual(task0.sample, { responses_create_params: { input: 'task 0' }, q: 0, agent_ref: { name: 'a' } });
  assert.deepEqual(
    (task0.rollout_infos as Array<Record<string, unknown>>).map((info) => info.rollout_id),
    ['0:0', '0:1'],
  );
  assert.equal(task0.num_rollouts, 2);
  assert.equal(task0.reward_profile_completion_pct, 100);
  assert.equal(task1['std/reward'], 0, 'a single rollout has std 0');
  assert.equal(task1.num_rollouts, 1);
  assert.equal(task1.expected_num_rollouts, 2);
  assert.equal(task1.failed_retryable_num_rollouts, 1);
  assert.equal(task1.missing_num_rollouts, 0, 'a failed rollout is not missing');
  assert.equal(task1.reward_profile_completion_pct, 50);
  assert.equal(task1.mean_reward_failures_as_zero, 0.5);

  const agents = JSON.parse(readFileSync(file('r_agent_metrics.json'), 'utf8')) as Array<Record<string, unknown>>;
  assert.equal(agents.length, 1);
  const a = agents[0]!;
  assert.deepEqual(a.agent_ref, { name: 'a' });
  close(a['mean/reward'], 2 / 3, 'mean/reward');
  assert.equal(a['median/reward'], 1);
  close(a['std/reward'], Math.sqrt(1 / 3), 'std/reward');
  assert.equal(a['mean/total_tokens'], 26);
  assert.equal(a['max/output_tokens'], 8);
  close(a['pass@1/accuracy'], 75, 'pass@1');
  close(a['pass@2/accuracy'], 100, 'pass@2');
  close(a['pass@1[avg-of-2]/accuracy'], 75, 'pass@1[avg-of-2]');
  assert.deepEqual(a.per_sample_aggregate, { accuracy: [100, 0] });
  close(a['pass@1[avg-of-2]/accuracy/std_dev_across_runs'], Math.sqrt(5000), 'std dev across runs');
  assert.deepEqual(a.rollout_counts, {
    tasks: 3,
    expected_rollouts: 6,
    completed_rollouts: 3,
    failed_retryable_rollouts: 1,
    failed_terminal_rollouts: 1,
    missing_rollouts: 1,
    mean_reward_completed: 2 / 3,
    mean_reward_failures_as_zero: 0.4,
  });
});

test('--json prints one JSON object for machines', async () => {
  const res = await runGym(['eval', 'profile', '--rollouts', 'r.jsonl', '++allow_partial_rollouts=true', '--json'], {
    cwd: dir,
  });
  assert.equal(res.code, 0, res.stderr);
  const report = JSON.parse(res.stdout) as {
    completion: Record<string, number>;
    rollout_counts: Record<string, number>;
    agents: Array<{ agent_ref: { name: string } }>;
    outputs: Record<string, string>;
  };
  assert.equal(report.completion.completed_rollout_rows, 3);
  assert.equal(report.completion.failed_rollout_rows, 2);
  assert.equal(report.completion.missing_rollout_rows, 1);
  assert.equal(report.rollout_counts.mean_reward_failures_as_zero, 0.4);
  assert.equal(report.agents[0]!.agent_ref.name, 'a');
  assert.equal(report.outputs.agent_metrics, 'r_agent_metrics.json');
});

test('a missing --inputs file is named', async () => {
  const res = await runGym(['eval', 'profile', '--inputs', 'nope.jsonl', '--rollouts', 'r.jsonl'], { cwd: dir });
  assert.equal(res.code, 1);
  assert.match(res.stderr, /Input file not found: 'nope\.jsonl' \(--inputs\)\. Check the path is spelled correctly\./);
});
