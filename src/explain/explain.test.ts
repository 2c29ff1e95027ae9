import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { findFreePort } from '../config/index.js';
import { reply, startScriptedService, toolOutputsIn, type ScriptedService } from '../testing/index.js';
import { readJsonl, runGym, tempDir, writeJsonl } from '../../test/support/cli.js';
import { addendsOf, counterEvalArgs, solveCounterTask } from '../../test/support/live-run.js';
import { failure, success, FULL_TRAJECTORY } from '../../test/support/view-runs.js';

// One real collection (counter environment, remote agent, a scripted service) whose task with first addend 13 gets
// an HTTP 500 at its second step, after a tool ran: the rows gym eval explain reads are the ones gym eval run writes.
let service: ScriptedService;
let dir: string;
let failedTask: number;
let okTask: number;

before(async () => {
  service = await startScriptedService((call) =>
    addendsOf(call)[0] === 13 && toolOutputsIn(call.body.input).length > 0
      ? reply.status(500, 'service exploded\nat step two\nline 3\nline 4\nline 5\nline 6\nline 7')
      : solveCounterTask(call),
  );
  dir = tempDir('tsgym-explain-');
  const res = await runGym(counterEvalArgs(service.url, await findFreePort(), 'out/rollouts.jsonl'), { cwd: dir });
  assert.equal(res.code, 0, `${res.stdout}\n${res.stderr}`);
  const failures = readJsonl(path.join(dir, 'out/rollouts_failures.jsonl'));
  assert.equal(failures.length, 1);
  failedTask = failures[0]!._ng_task_index as number;
  okTask = readJsonl(path.join(dir, 'out/rollouts.jsonl'))[0]!._ng_task_index as number;
});
after(() => service.close());

test('a failure row: class, the failing hop with its status and first body lines, the steps, the re-run command', async () => {
  const res = await runGym(['eval', 'explain', 'out/rollouts.jsonl', `${failedTask}:0`], { cwd: dir });
  assert.equal(res.code, 0, res.stderr);
  const out = res.stdout;
  assert.match(out, new RegExp(`^Task ${failedTask}, rollout 0: failed \\(retryable\\), class remote_agent_error`));
  assert.match(out, /row: out\/rollouts_failures\.jsonl:1 \(attempt 0\)/);
  assert.match(out, /Failing hop: the service call at step 2\n {2}status: 500\n {2}body:\n {4}\| service exploded\n/);
  assert.match(out, /\| line 5\n {4}\| … 2 more lines/);
  assert.doesNotMatch(out, /line 6/);
  // Step 1 ran a tool against the real environment; its latency comes from _ng_step_latency_secs.
  assert.match(out, /step 1 {2}\d+\.\d{3}s\n {4}tool increment_counter\(\{"count":13\}\)\n {6}→ \S/);
  assert.match(out, /agent: remote_agent/);
  assert.match(out, /Re-run just this rollout/);
  assert.match(out, new RegExp(`gym eval run --no-serve -a remote_agent -i task${failedTask}_0\\.jsonl`));
});

test('the printed re-run command gives back exactly the dispatched input row', async () => {
  const res = await runGym(['eval', 'explain', 'out/rollouts.jsonl', `${failedTask}:0`, '--input-row'], { cwd: dir });
  assert.equal(res.code, 0, res.stderr);
  const inputs = readJsonl(path.join(dir, 'out/rollouts_materialized_inputs.jsonl'));
  const expected = inputs.filter((row) => row._ng_task_index === failedTask);
  assert.deepEqual(
    res.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as unknown),
    expected,
  );
});

test('a success row: outcome, reward, each step with its tools and what they returned; --full shows text whole', async () => {
  const res = await runGym(['eval', 'explain', 'out/rollouts.jsonl', `${okTask}:0`], { cwd: dir });
  assert.equal(res.code, 0, res.stderr);
  assert.match(res.stdout, new RegExp(`^Task ${okTask}, rollout 0: succeeded, reward 1\n`));
  assert.match(res.stdout, /tool get_counter_value\(\{\}\)\n {6}→ \{"count":/);
  assert.match(res.stdout, /assistant message: /);
  assert.doesNotMatch(res.stdout, /Failing hop/);

  const long = tempDir('tsgym-explain-long-');
  const text = 'x'.repeat(500);
  writeJsonl(path.join(long, 'r.jsonl'), [
    success(4, 0, 1, [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text }] }]),
  ]);
  const short = await runGym(['eval', 'explain', 'r.jsonl', '4:0'], { cwd: long });
  assert.match(short.stdout, /x{160}… \(500 chars; --full shows all\)/);
  const full = await runGym(['eval', 'explain', 'r.jsonl', '4:0', '--full'], { cwd: long });
  assert.match(full.stdout, new RegExp(`assistant message: x{500}\n`));
});

test('rows written by NeMo Gym (no tsgym extras, no status file, no sidecar) are explained too', async () => {
  const ng = tempDir('tsgym-explain-ng-');
  const row = success(3, 1, 0.5, FULL_TRAJECTORY);
  writeJsonl(path.join(ng, 'rollouts.jsonl'), [row]);
  const res = await runGym(['eval', 'explain', 'rollouts.jsonl', '3:1'], { cwd: ng });
  assert.equal(res.code, 0, res.stderr);
  assert.match(res.stdout, /^Task 3, rollout 1: succeeded, reward 0\.5\n/);
  assert.match(res.stdout, /Steps \(2 service answer\(s\)\):\n {2}step 1\n {4}reasoning: Thinking about the capital/);
  assert.doesNotMatch(res.stdout, /trace id|worker/);
  // Without materialized inputs the input is rebuilt from the row, saying what it lacks.
  const input = await runGym(['eval', 'explain', 'rollouts.jsonl', '3:1', '--input-row'], { cwd: ng });
  assert.deepEqual(JSON.parse(input.stdout), {
    responses_create_params: row.responses_create_params,
    agent_ref: row.agent_ref,
    _ng_task_index: 3,
    _ng_rollout_index: 1,
  });
  assert.match(input.stderr, /rollouts_materialized_inputs\.jsonl is missing/);
});

test('retries, the worker and the trace id of a failure; every attempt is listed and the success is the outcome', async () => {
  const run = tempDir('tsgym-explain-retry-');
  const first = { ...failure(5, 0, 'agent loop failed: HTTP 503: busy', false), _ng_attempt_index: 0 };
  const second = {
    ...failure(5, 0, '/verify on the resources server failed: HTTP 500: boom', false),
    _ng_worker: 'gpu-host-7:4242',
    _ng_trace_id: '4bf92f3577b34da6a3ce929d0e0e4736',
  };
  writeJsonl(path.join(run, 'r_failures.jsonl'), [first, second]);
  const failed = await runGym(['eval', 'explain', 'r.jsonl', '5:0'], { cwd: run });
  assert.equal(failed.code, 0, failed.stderr);
  assert.match(failed.stdout, /worker: gpu-host-7:4242\n {2}trace id: 4bf92f3577b34da6a3ce929d0e0e4736\n/);
  assert.match(
    failed.stdout,
    /Attempts \(2 rows\):\n {2}attempt 0: failed \(retryable\) remote_agent_error: agent loop/,
  );
  assert.match(
    failed.stdout,
    /Failing hop: verifying on the environment \(\/verify\)\n {2}status: 500\n {2}body:\n {4}\| boom/,
  );

  writeJsonl(path.join(run, 'r.jsonl'), [{ ...success(5, 0, 1, []), _ng_attempt_index: 2 }]);
  writeFileSync(path.join(run, 'r_status.json'), JSON.stringify({ version: 1, trace_salt: 'ab'.repeat(16) }));
  const ok = await runGym(['eval', 'explain', 'r.jsonl', '5:0'], { cwd: run });
  assert.match(ok.stdout, /^Task 5, rollout 0: succeeded, reward 1\n {2}row: r\.jsonl:1 \(attempt 2\)/);
  assert.match(ok.stdout, /Attempts \(3 rows\)/);
  // The success's trace id is derived from the run's salt (it is not on the row, C4).
  assert.match(ok.stdout, /trace id: [0-9a-f]{32}\n/);
});

test('bad input: a task that is not a number, a missing file, a rollout with no row, a missing operand', async () => {
  const run = tempDir('tsgym-explain-bad-');
  writeJsonl(path.join(run, 'r.jsonl'), [success(0, 0, 1, [])]);
  const notTask = await runGym(['eval', 'explain', 'r.jsonl', 'abc'], { cwd: run });
  assert.equal(notTask.code, 1);
  assert.match(notTask.stderr, /^Error: 'abc' is not a task: write TASK or TASK:ROLLOUT/);
  const noFile = await runGym(['eval', 'explain', 'nope.jsonl', '0'], { cwd: run });
  assert.equal(noFile.code, 1);
  assert.match(noFile.stderr, /^Error: nope\.jsonl does not exist/);
  const noRow = await runGym(['eval', 'explain', 'r.jsonl', '9:0'], { cwd: run });
  assert.equal(noRow.code, 1);
  assert.match(noRow.stderr, /No row of task 9, rollout 0 in r\.jsonl/);
  const noTask = await runGym(['eval', 'explain', 'r.jsonl'], { cwd: run });
  assert.equal(noTask.code, 2);
  assert.match(noTask.stderr, /required: task\[:rollout\]/);
  writeFileSync(path.join(run, 'bad.jsonl'), '{"_ng_task_index": 0,\n');
  const torn = await runGym(['eval', 'explain', 'bad.jsonl', '0'], { cwd: run });
  assert.equal(torn.code, 1);
  assert.match(torn.stderr, /bad\.jsonl:1: malformed JSONL line/);
});
