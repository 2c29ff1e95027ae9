/**
 * `+resume_from_cache=true` through the real CLI: retry rules (which outcomes run again), identity check (D9),
 * missing files, crash safety under SIGKILL (D10) and torn last lines.
 */
import assert from 'node:assert/strict';
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import {
  fakeReply,
  startFakeAgent,
  startFakeHead,
  type FakeAgent,
  type FakeRunHandler,
} from '../testing/fake-agent.js';
import type { Row } from '../runfiles/row.js';
import {
  keysOf,
  lineCount,
  readJsonl,
  runGym,
  spawnGym,
  tempDir,
  writeJsonl,
  type GymResult,
} from '../../test/support/cli.js';
import { eventually } from '../../test/support/wait.js';

const open: Array<{ close(): Promise<void> }> = [];
after(async () => {
  for (const server of open) await server.close();
});

interface Rig {
  agent: FakeAgent;
  dir: string;
  file(name: string): string;
  args: string[];
  gym(extra?: string[], env?: Record<string, string | undefined>): Promise<GymResult>;
}

async function rig(handler: FakeRunHandler, rows: Row[]): Promise<Rig> {
  const agent = await startFakeAgent('my_agent', (input, call) => handler(input, call));
  const head = await startFakeHead([agent]);
  open.push(agent, head);
  const dir = tempDir();
  writeJsonl(path.join(dir, 'in.jsonl'), rows);
  const args = [
    'eval',
    'run',
    '--no-serve',
    '-a',
    'my_agent',
    '-i',
    'in.jsonl',
    '-o',
    'r.jsonl',
    `++head_server.port=${head.port}`,
  ];
  return {
    agent,
    dir,
    args,
    file: (name) => path.join(dir, name),
    gym: (extra = [], env) =>
      runGym([...args, ...extra], { cwd: dir, env: { NEMO_GYM_MAX_ROLLOUT_ATTEMPTS: undefined, ...env } }),
  };
}

const row = (x: number): Row => ({ responses_create_params: { input: `row ${x}` }, x });

test('resume retries a flaky rollout, never a terminal one, up to the attempt cap, stamping _ng_attempt_index', async () => {
  const calls = new Map<number, number>();
  const r = await rig(
    (input) => {
      const n = (calls.get(input.x as number) ?? 0) + 1;
      calls.set(input.x as number, n);
      if (input.x === 0) return n === 1 ? fakeReply.failure(input, 'flaky') : fakeReply.success(input);
      if (input.x === 1) return fakeReply.failure(input, 'invalid Responses API object', { terminal: true });
      if (input.x === 2) return fakeReply.failure(input, 'always down');
      return fakeReply.success(input);
    },
    [row(0), row(1), row(2), row(3)],
  );
  const cap2 = { NEMO_GYM_MAX_ROLLOUT_ATTEMPTS: '2' };
  assert.equal((await r.gym([], cap2)).code, 0);
  assert.equal(r.agent.runs.length, 4);
  for (const run of r.agent.runs) assert.equal(run._ng_attempt_index, undefined, 'a first attempt is unstamped');

  const first = await r.gym(['--resume'], cap2);
  assert.equal(first.code, 0, first.stderr);
  const retried = r.agent.runs.slice(4);
  assert.deepEqual(retried.map((run) => [run.x, run._ng_attempt_index]).sort(), [
    [0, 1],
    [2, 1],
  ]);
  assert.match(
    first.stdout,
    /- 4 original input rows\n- 1 rows already done \(in main jsonl\)\n- 3 prior failure attempts \(3 unique tasks\) in sidecar\n- 1 sidecar-terminal .* not retried\n- 0 hit max_attempts=2 → not retried\n- 2 rows that still need to be run/,
  );
  // Task 2 failed its 2nd attempt: at the cap, so nothing is offered for retry (it used to say "1 rollouts can still be retried").
  assert.match(first.stdout, /1 failed rollouts reached NEMO_GYM_MAX_ROLLOUT_ATTEMPTS=2; resume will not retry them/);
  assert.doesNotMatch(first.stdout, /can still be retried/);
  const recovered = readJsonl(r.file('r.jsonl')).find((s) => s.x === 0)!;
  assert.equal(recovered._ng_attempt_index, 1, 'the result carries the attempt index');

  // Task 2 now has 2 sidecar attempts: at the cap of 2 nothing is left to run.
  const capped = await r.gym(['--resume'], cap2);
  assert.equal(capped.code, 0);
  assert.equal(r.agent.runs.length, 6);
  assert.match(capped.stdout, /- 1 hit max_attempts=2 → not retried/);
  assert.match(capped.stdout, /Nothing left to run/);
  assert.doesNotMatch(capped.stdout, /can still be retried/);
  assert.match(capped.stdout, /1 failed rollouts reached NEMO_GYM_MAX_ROLLOUT_ATTEMPTS=2/);
  assert.match(
    capped.stdout,
    /4 tasks, 4 rollouts expected: 2 completed, 2 failed \(1 retryable, 1 terminal\), 0 missing/,
  );

  // An unparsable cap warns and falls back to 3, so task 2 gets a third attempt.
  const fallback = await r.gym(['--resume'], { NEMO_GYM_MAX_ROLLOUT_ATTEMPTS: 'lots' });
  assert.equal(fallback.code, 0);
  assert.match(
    fallback.stderr,
    /WARNING: could not parse NEMO_GYM_MAX_ROLLOUT_ATTEMPTS='lots' \(.*\); falling back to default 3\./,
  );
  assert.deepEqual(
    r.agent.runs.slice(6).map((run) => [run.x, run._ng_attempt_index]),
    [[2, 2]],
  );
  assert.equal(lineCount(r.file('r_failures.jsonl')), 5, 'one line per failed attempt');
  assert.deepEqual(keysOf(readJsonl(r.file('r.jsonl'))), ['0:0', '3:0']);
});

test('resume refuses when the inputs or the request-shaping config changed, naming the first differing task (D9)', async () => {
  const r = await rig((input) => fakeReply.success(input), [row(0), row(1), row(2)]);
  assert.equal((await r.gym()).code, 0);
  const changedConfig = await r.gym(['--resume', '--temperature', '0.7']);
  assert.equal(changedConfig.code, 1);
  assert.match(
    changedConfig.stderr,
    /Cannot resume: .*first at task 0 rollout 0 .*responses_create_params\.temperature is 0\.7 now but absent in the stored file/,
  );
  assert.match(changedConfig.stderr, /\+\+overwrite=true/);

  writeJsonl(r.file('in.jsonl'), [row(0), { ...row(1), x: 41 }, row(2)]);
  const changedInput = await r.gym(['--resume']);
  assert.equal(changedInput.code, 1);
  assert.match(
    changedInput.stderr,
    /first at task 1 rollout 0 \(input line 2, stored line 2\): x is 41 now but 1 in the stored file/,
  );
  assert.equal(r.agent.runs.length, 3, 'nothing was dispatched');

  writeJsonl(r.file('in.jsonl'), [row(0), row(1), row(2)]);
  const complete = await r.gym(['--resume']);
  assert.equal(complete.code, 0);
  assert.match(complete.stdout, /Nothing left to run/);
  assert.equal(r.agent.runs.length, 3);
});

test('resume without the previous files says so and runs fresh', async () => {
  const r = await rig((input) => fakeReply.success(input), [row(0)]);
  const res = await r.gym(['--resume']);
  assert.equal(res.code, 0, res.stderr);
  assert.match(res.stdout, /Skipping resume_from_cache because output_fpath r\.jsonl doesn't exist!/);
  assert.match(
    res.stdout,
    /Skipping resume_from_cache because materialized_jsonl_fpath r_materialized_inputs\.jsonl doesn't exist!/,
  );
  assert.equal(readJsonl(r.file('r.jsonl')).length, 1);
});

test('a collector killed with SIGKILL mid-run, then resumed, ends with every key exactly once (D10)', async (t) => {
  let holdSlowRows = true;
  const rows = Array.from({ length: 20 }, (_, x) => row(x));
  const r = await rig(
    (input) => ((input.x as number) >= 12 && holdSlowRows ? fakeReply.hang() : fakeReply.success(input)),
    rows,
  );
  const running = spawnGym([...r.args, '--concurrency', '20', '--num-repeats', '2'], { cwd: r.dir });
  t.after(() => void running.child.kill('SIGKILL'));
  // The fast rows' 24 rollouts land on disk while the slow rows' 16 are in flight: kill now.
  await eventually(() => lineCount(r.file('r.jsonl')) >= 24 && r.agent.runs.length >= 40, {
    what: '24 finished rollouts and 40 dispatched',
    timeoutMs: 120_000,
  });
  running.child.kill('SIGKILL');
  const killed = await running.result;
  assert.equal(killed.signal, 'SIGKILL');
  assert.equal(lineCount(r.file('r.jsonl')), 24);
  assert.ok(readFileSync(r.file('r.jsonl'), 'utf8').endsWith('\n'), 'only whole lines were written');

  holdSlowRows = false;
  const resumed = await r.gym(['--resume', '--num-repeats', '2']);
  assert.equal(resumed.code, 0, resumed.stderr);
  assert.match(resumed.stdout, /- 16 rows that still need to be run/);
  const keys = keysOf(readJsonl(r.file('r.jsonl')));
  assert.equal(keys.length, 40);
  assert.equal(new Set(keys).size, 40, 'every (task, rollout) exactly once');
  assert.equal(lineCount(r.file('r_failures.jsonl')), 0);
});

test('a torn last line in the rollouts file or the sidecar is ignored and cut off before appending', async () => {
  let fail = true;
  const r = await rig(
    (input) => (input.x === 2 && fail ? fakeReply.failure(input, 'flaky') : fakeReply.success(input)),
    [row(0), row(1), row(2)],
  );
  assert.equal((await r.gym()).code, 0);
  const lines = readFileSync(r.file('r.jsonl'), 'utf8').split('\n').filter(Boolean);
  const tornRow = JSON.parse(lines.at(-1)!) as Row;
  // The last success is cut mid-line, as a kill during the write would leave it.
  writeFileSync(r.file('r.jsonl'), `${lines.slice(0, -1).join('\n')}\n${lines.at(-1)!.slice(0, 40)}`);
  appendFileSync(r.file('r_failures.jsonl'), '{"_ng_task_index": 2, "_ng_rollout_in');
  fail = false;

  const resumed = await r.gym(['--resume']);
  assert.equal(resumed.code, 0, resumed.stderr);
  assert.match(resumed.stderr, /Ignoring the torn last line of r\.jsonl \(line 2/);
  assert.match(resumed.stderr, /Ignoring the torn last line of r_failures\.jsonl \(line 2/);
  assert.match(resumed.stdout, /- 1 prior failure attempts \(1 unique tasks\) in sidecar/);
  const rerun = r.agent.runs.slice(3).map((run) => [run.x, run._ng_attempt_index ?? 0]);
  assert.deepEqual(
    rerun.sort(),
    [
      [tornRow.x, 0],
      [2, 1],
    ].sort(),
  );
  const text = readFileSync(r.file('r.jsonl'), 'utf8');
  const final = text
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Row);
  assert.deepEqual(keysOf(final), ['0:0', '1:0', '2:0']);
  assert.equal(lineCount(r.file('r_failures.jsonl')), 1);
  for (const line of readFileSync(r.file('r_failures.jsonl'), 'utf8').split('\n').filter(Boolean)) JSON.parse(line);
});
