import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { ConfigError } from '../errors.js';
import { findFreePort } from '../config/index.js';
import { startScriptedService } from '../testing/index.js';
import { readJsonl, runGym, tempDir } from '../../test/support/cli.js';
import { parseCollectionConfig } from './config.js';
import { counterEvalArgs, solveCounterTask, startGatedRun, type GatedRun } from '../../test/support/live-run.js';
import { RunStatusBoard, type StageReport } from './status.js';
import { eventually } from '../../test/support/wait.js';

const runs: GatedRun[] = [];
after(async () => {
  for (const run of runs) {
    run.release();
    if (run.gym.child.exitCode === null) run.gym.child.kill('SIGTERM');
    await run.gym.result;
    await run.service.close();
  }
});

type Status = {
  state: string;
  stall_warning_secs: number;
  totals: Record<string, unknown>;
  in_flight: Array<Record<string, unknown>>;
  history: Array<Record<string, unknown>>;
  step_latency_secs: Array<{ step: number; count: number; p50: number; p90: number; p99: number }>;
};

function readStatus(file: string): Status | undefined {
  if (!existsSync(file)) return undefined;
  return JSON.parse(readFileSync(file, 'utf8')) as Status;
}

test('gym eval run keeps <stem>_status.json current: stages from the remote agent, stalls, then the final totals', async () => {
  const run = await startGatedRun(['+stall_warning_secs=0.5']);
  runs.push(run);
  await run.held;
  let seen: Status | undefined;
  await eventually(
    () => {
      seen = readStatus(run.statusPath);
      return (
        seen?.in_flight.some(
          (entry) => entry.task_index === 0 && entry.stage === 'calling_service' && entry.stalled === true,
        ) === true
      );
    },
    { what: 'task 0 reported at calling_service and stalled', timeoutMs: 120_000, intervalMs: 20 },
  );
  const entry = seen!.in_flight.find((e) => e.task_index === 0)!;
  assert.deepEqual(
    Object.keys(entry).sort(),
    [
      'agent',
      'attempt',
      'elapsed_s',
      'rollout_index',
      'since_progress_s',
      'stage',
      'stalled',
      'step',
      'task_index',
      'tool',
    ].sort(),
  );
  assert.equal(entry.agent, 'remote_agent');
  assert.equal(entry.rollout_index, 0);
  assert.equal(entry.attempt, 0);
  assert.equal(entry.step, 1);
  // Stalled means more than 0.5 s without progress; the file states it to the millisecond, so at least 0.5.
  assert.ok(
    (entry.since_progress_s as number) >= 0.5 && (entry.elapsed_s as number) >= (entry.since_progress_s as number),
    JSON.stringify(entry),
  );
  assert.equal(seen!.state, 'running');
  assert.equal(seen!.stall_warning_secs, 0.5);
  assert.equal(seen!.totals.total, 5);
  assert.ok((seen!.totals.stalled as number) >= 1);
  await eventually(() => /stalled: task 0 rollout 0 \(calling_service step 1\)/.test(run.gym.stderr()), {
    what: 'the progress line naming the stalled rollout',
    timeoutMs: 120_000,
  });
  // No temporary file is left beside it: each write is renamed into place.
  assert.deepEqual(
    readdirSync(path.dirname(run.statusPath)).filter((name) => name.includes('.tmp-')),
    [],
  );

  run.release();
  const result = await run.gym.result;
  assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
  const final = readStatus(run.statusPath)!;
  assert.equal(final.state, 'finished');
  assert.deepEqual(final.in_flight, []);
  assert.equal(final.totals.done, 5);
  assert.equal(final.totals.completed, 5);
  assert.equal(final.totals.failed, 0);
  assert.deepEqual(final.totals.failed_by_class, {});
  assert.equal(final.totals.eta_s, 0);
  assert.equal(final.totals.mean_reward, 1);
  assert.equal(final.totals.in_flight, 0);
  assert.ok(final.history.length >= 2 && final.history.at(-1)!.done === 5);

  // Step latencies reach the status file, not the rows (C4): a success row is the verify response plus stamps.
  const rows = readJsonl(run.rolloutsPath);
  assert.equal(rows.length, 5);
  const stepsPerRow = rows.map((row) => {
    assert.equal('_ng_step_latency_secs' in row, false, `a success row carries latencies: ${JSON.stringify(row)}`);
    const output = (row.response as { output: Array<{ type: string }> }).output;
    return output.filter((item) => item.type === 'message' || item.type === 'function_call').length;
  });
  const maxSteps = Math.max(...stepsPerRow);
  assert.deepEqual(
    final.step_latency_secs.map((entry) => [entry.step, entry.count]),
    Array.from({ length: maxSteps }, (_, k) => [k + 1, stepsPerRow.filter((n) => n > k).length]),
  );
  // Task 0's first step waited for the gate (> 0.5 s: it stalled), so step 1's p99 (its slowest of 5) shows it.
  const first = final.step_latency_secs[0]!;
  assert.ok(first.p99 >= 0.5 && first.p50 <= first.p90 && first.p90 <= first.p99, JSON.stringify(first));
});

test('a status file that cannot be written costs one warning, not the run', async () => {
  const service = await startScriptedService(solveCounterTask);
  const dir = tempDir('tsgym-status-blocked-');
  // A non-empty directory where the file belongs: every rename onto it fails.
  mkdirSync(path.join(dir, 'out', 'rollouts_status.json', 'occupied'), { recursive: true });
  try {
    const result = await runGym(counterEvalArgs(service.url, await findFreePort(), 'out/rollouts.jsonl'), { cwd: dir });
    assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
    assert.equal(readJsonl(path.join(dir, 'out', 'rollouts.jsonl')).length, 5);
    assert.equal(
      result.stderr.match(
        /WARNING: cannot write the status file .*rollouts_status\.json \(.*\); the run goes on without it\./g,
      )?.length,
      1,
      result.stderr,
    );
    assert.deepEqual(
      readdirSync(path.join(dir, 'out')).filter((name) => name.includes('.tmp-')),
      [],
    );
  } finally {
    await service.close();
  }
});

test('the board: reports move entries, stalls follow the reporter clock, the history stays bounded', () => {
  let now = 1_000_000;
  const file = path.join(tempDir('tsgym-status-'), 'run_status.json');
  const stalled: string[][] = [];
  const board = new RunStatusBoard({
    file,
    total: 1000,
    stallWarningSecs: 10,
    now: () => now,
    onStalled: (labels) => stalled.push(labels),
  });
  const job = (task: number) => ({
    task,
    rollout: 0,
    agent: 'a',
    identity: { _ng_attempt_index: task === 1 ? 2 : undefined },
  });
  board.track(job(0));
  board.track(job(1));
  now += 30_000;
  const report = (task: number, attempt: number, since: number): StageReport => ({
    agent: 'a',
    task_index: task,
    rollout_index: 0,
    attempt,
    stage: 'running_tool',
    step: 3,
    tool: 'lookup',
    since_progress_s: since,
  });
  // Task 1 runs attempt 2; a report for its attempt 0, or from another agent, changes nothing.
  board.apply([report(0, 0, 2), report(1, 0, 0), { ...report(1, 2, 0), agent: 'b' }]);
  const doc = board.snapshot('running');
  assert.deepEqual(
    doc.in_flight.map((e) => [e.task_index, e.attempt, e.stage, e.step, e.tool, e.since_progress_s, e.stalled]),
    [
      [0, 0, 'running_tool', 3, 'lookup', 2, false],
      [1, 2, 'queued', 0, null, 30, true],
    ],
  );
  assert.equal(doc.totals.stalled, 1);
  board.settle(job(0), { reward: 0.5, _ng_step_latency_secs: [0.1, 0.2] }, 'rollouts');
  board.settle(
    job(1),
    { _ng_failure_class: 'remote_agent_error', _ng_failure_terminal: true, _ng_step_latency_secs: [0.3] },
    'failures',
  );
  const latency = (board.snapshot('running') as Pick<Status, 'step_latency_secs'>).step_latency_secs;
  // Both results' lists count, successes' and failures' alike.
  assert.deepEqual(
    latency.map((entry) => [entry.step, entry.count]),
    [
      [1, 2],
      [2, 1],
    ],
  );
  assert.ok(
    Math.abs(latency[1]!.p50 - 0.2) / 0.2 <= 0.05 && Math.abs(latency[0]!.p99 - 0.3) / 0.3 <= 0.05,
    JSON.stringify(latency),
  );
  for (let i = 0; i < 1000; i++) {
    now += 1000;
    board.snapshot('running');
  }
  const last = board.snapshot('running');
  assert.ok(last.history.length <= 240, `history holds ${last.history.length} points`);
  assert.deepEqual(last.totals.failed_by_class, { remote_agent_error: 1 });
  assert.equal(last.totals.failed_terminal, 1);
  assert.equal(last.totals.mean_reward, 0.5);
  board.finish('finished');
  assert.equal((JSON.parse(readFileSync(file, 'utf8')) as Status).state, 'finished');
  assert.deepEqual(stalled.at(-1), []);
});

test('stall_warning_secs must be a positive number of seconds', () => {
  const base = { input_jsonl_fpath: 'in.jsonl', output_jsonl_fpath: 'out.jsonl' };
  assert.equal(parseCollectionConfig(base).stallWarningSecs, 120);
  assert.equal(parseCollectionConfig({ ...base, stall_warning_secs: 30 }).stallWarningSecs, 30);
  assert.throws(
    () => parseCollectionConfig({ ...base, stall_warning_secs: 'soon' }),
    (err: unknown) => err instanceof ConfigError && /stall_warning_secs/.test(err.message),
  );
});
