/** The in-process rollout queue and the progress line. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ProgressReporter } from './progress.js';
import { createInProcessQueue, type RolloutJob } from './executor.js';
import { gate } from '../../test/support/wait.js';

const job = (task: number): RolloutJob => ({ task, rollout: 0, agent: 'a', attempt: 0, body: '{}' });

describe('createInProcessQueue', () => {
  test('never has more than `concurrency` jobs in flight, and submit waits for room', async () => {
    const gates = new Map<number, () => void>();
    let inFlight = 0;
    let peak = 0;
    const results: number[] = [];
    const queue = createInProcessQueue({
      concurrency: 2,
      execute: async (j) => {
        inFlight++;
        peak = Math.max(peak, inFlight);
        const held = gate();
        gates.set(j.task, () => held.open());
        await held.opened;
        inFlight--;
        return { task: j.task };
      },
      onResult: (j) => results.push(j.task),
    });
    await queue.submit(job(0));
    let roomForMore = false;
    const second = queue.submit(job(1)).then(() => (roomForMore = true));
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(roomForMore, false, 'the window is full: the caller must wait before reading more input');
    gates.get(1)!();
    await second;
    const third = queue.submit(job(2));
    gates.get(0)!();
    await third;
    gates.get(2)!();
    await queue.drain();
    assert.equal(peak, 2);
    assert.deepEqual(results, [1, 0, 2], 'results are handed over in completion order');
  });

  test('a failing result handler stops the queue: the next submit or drain rejects with its error', async () => {
    const queue = createInProcessQueue({
      concurrency: 4,
      execute: (j) => Promise.resolve({ task: j.task }),
      onResult: () => {
        throw new Error('disk full');
      },
    });
    await queue.submit(job(0));
    await assert.rejects(queue.drain(), /disk full/);
    await assert.rejects(queue.submit(job(1)), /disk full/);
  });
});

describe('ProgressReporter', () => {
  const sink = (isTTY: boolean) => {
    const writes: string[] = [];
    return { writes, stream: { isTTY, columns: 200, write: (text: string) => writes.push(text) > 0 } as never };
  };

  test('on a terminal: one line redrawn in place, with rate, ETA, failures and mean reward, ended by a newline', () => {
    let now = 0;
    const out = sink(true);
    const progress = new ProgressReporter({ total: 10, stream: out.stream, now: () => now });
    now = 1000;
    progress.update({ done: 4, failures: 1, completed: 3, rewardSum: 2 });
    now = 1050;
    progress.update({ done: 5, failures: 1, completed: 4, rewardSum: 3 });
    assert.equal(out.writes.length, 1, 'redraws are throttled');
    assert.match(
      out.writes[0]!,
      /^\r\x1b\[2KCollecting rollouts: 4\/10 \(40%\) \| 4\.0 rollouts\/s \| elapsed 0:00:01 \| ETA 0:00:02 \| failures 1 \| mean reward 0\.667$/,
    );
    progress.finish();
    assert.match(out.writes.at(-2)!, /5\/10/);
    assert.equal(out.writes.at(-1), '\n');
  });

  test('elsewhere: a plain line at most every interval, and a final line', () => {
    let now = 0;
    const out = sink(false);
    const progress = new ProgressReporter({ total: 100, stream: out.stream, now: () => now, plainIntervalMs: 5000 });
    for (let done = 1; done <= 100; done++) {
      now = done * 100;
      progress.update({ done, failures: 0, completed: done, rewardSum: done });
    }
    progress.finish();
    assert.equal(out.writes.length, 3, 'at 5 s, at 10 s, and the final line');
    assert.ok(out.writes.every((line) => line.endsWith('\n') && !line.includes('\r')));
    assert.match(out.writes.at(-1)!, /100\/100 \(100%\)/);
  });
});
