import assert from 'node:assert/strict';
import { test } from 'node:test';
import { COLLECTOR_ERROR } from '../collect/routing.js';
import { STEP_LATENCY_KEY } from '../contract/gym-wire.js';
import { failureRow } from './row.js';
import { LatencyByStep, MAX_STEPS } from './step-latency.js';

test('latency percentiles come from fixed-size histograms within 5% of the true value', () => {
  const latency = new LatencyByStep();
  for (let i = 1; i <= 1000; i++) latency.add(1, i / 100);
  const [step] = latency.percentiles();
  assert.equal(step!.count, 1000);
  for (const [got, want] of [
    [step!.p50, 5],
    [step!.p90, 9],
    [step!.p99, 9.9],
  ] as const) {
    assert.ok(Math.abs(got - want) / want <= 0.05, `${got} vs ${want}`);
  }
});

test('a result list is read per step, bad entries skipped, steps past MAX_STEPS folded into the last', () => {
  const latency = new LatencyByStep();
  latency.addResult([0.2, 'slow', -1, Number.NaN, 0.4]);
  latency.addResult({ not: 'a list' });
  latency.addResult(undefined);
  latency.addResult(Array.from({ length: MAX_STEPS + 5 }, () => 1));
  const steps = latency.percentiles();
  assert.deepEqual(
    steps.map((s) => [s.step, s.count]),
    [[1, 2], ...Array.from({ length: MAX_STEPS - 2 }, (_, i) => [i + 2, i + 2 === 5 ? 2 : 1]), [MAX_STEPS, 6]],
  );
  assert.ok(
    Math.abs(steps[4]!.p99 - 1) <= 0.05 && Math.abs(steps[4]!.p50 - 0.4) / 0.4 <= 0.05,
    JSON.stringify(steps[4]),
  );
});

test("a collector failure row built from a re-fed row drops that row's stale latencies", () => {
  const row = failureRow({ _ng_task_index: 0, _ng_step_latency_secs: [9, 9] }, COLLECTOR_ERROR, 'agent down', false);
  assert.equal(STEP_LATENCY_KEY in row, false);
  const board = new LatencyByStep();
  board.addResult(row[STEP_LATENCY_KEY]);
  assert.deepEqual(board.percentiles(), []);
});
