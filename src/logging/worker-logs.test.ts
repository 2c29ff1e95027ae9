/**
 * `gym worker --log-format json` and `gym eval run --queue … --log-format json` through a real `redis-server`: every
 * line either process writes is one JSON event (the worker's as `service: "worker"`), the collector still logs
 * each finished rollout with its trace id, and the worker logs each job it finished under the same trace id.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, test } from 'node:test';
import { runGym, spawnGym, tempDir, writeJsonl } from '../../test/support/cli.js';
import { eventually } from '../../test/support/wait.js';
import { startRedis } from '../../test/support/redis-server.js';
import { fakeReply, startFakeAgent, startFakeHead } from '../testing/fake-agent.js';

const closers: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const close of closers.reverse()) await close();
});

function parsedLines(text: string, where: string): Array<Record<string, unknown>> {
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      let value: Record<string, unknown> | undefined;
      assert.doesNotThrow(() => (value = JSON.parse(line) as Record<string, unknown>), `${where}: ${line}`);
      for (const key of ['time', 'level', 'service', 'msg'])
        assert.equal(typeof value![key], 'string', `${where}: ${line}`);
      return value!;
    });
}

test('gym worker and a queued gym eval run log JSON lines, rollouts by trace id', { timeout: 240_000 }, async () => {
  const server = await startRedis();
  closers.push(() => server.kill());
  const agent = await startFakeAgent('alpha', (row) => fakeReply.success(row, 1));
  closers.push(() => agent.close());
  const head = await startFakeHead([agent]);
  closers.push(() => head.close());
  const dir = tempDir('tsgym-logs-queue-');
  const n = 4;
  writeJsonl(
    path.join(dir, 'in.jsonl'),
    Array.from({ length: n }, (_, i) => ({
      responses_create_params: { input: `row ${i}` },
      agent_ref: { name: 'alpha' },
    })),
  );
  const worker = spawnGym(
    ['worker', '--queue', server.url, `++head_server.port=${head.port}`, '+worker_id=w1', '--log-format', 'json'],
    { cwd: dir },
  );
  closers.push(() => {
    if (worker.child.exitCode === null && worker.child.signalCode === null) worker.child.kill('SIGKILL');
    return Promise.resolve();
  });
  await eventually(() => /connected to/.test(worker.stderr()), {
    what: () => `the worker to connect: ${worker.stderr()}`,
    timeoutMs: 60_000,
  });
  const run = await runGym(
    ['eval', 'run', '--no-serve', '-i', 'in.jsonl', '-o', 'out/r.jsonl', '--queue', server.url, '--log-format', 'json'],
    { cwd: dir },
  );
  assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
  worker.child.kill('SIGINT');
  const stopped = await worker.result;
  assert.equal(stopped.code, 0, stopped.stderr);

  const workerEvents = [
    ...parsedLines(stopped.stdout, 'worker stdout'),
    ...parsedLines(stopped.stderr, 'worker stderr'),
  ];
  assert.ok(workerEvents.length > 0);
  for (const event of workerEvents) assert.equal(event.service, 'worker', JSON.stringify(event));
  assert.ok(workerEvents.some((e) => /connected to/.test(e.msg as string)));
  const collected = [...parsedLines(run.stdout, 'eval stdout'), ...parsedLines(run.stderr, 'eval stderr')];
  const finished = collected.filter((e) => e.msg === 'rollout finished');
  assert.equal(finished.length, n, JSON.stringify(collected));
  for (const event of finished) {
    assert.match(event.trace_id as string, /^[0-9a-f]{32}$/);
    assert.equal(event.agent, 'alpha');
    assert.equal(event.outcome, 'completed');
  }
  // The worker's event per finished job, under the same trace id as the collector's event for that rollout.
  const jobs = workerEvents.filter((e) => e.msg === 'job finished');
  assert.equal(jobs.length, n, JSON.stringify(workerEvents));
  for (const job of jobs) {
    const rollout = finished.find((e) => e.task_index === job.task_index && e.rollout_index === job.rollout_index);
    assert.ok(rollout, JSON.stringify(job));
    assert.equal(job.trace_id, rollout.trace_id);
    assert.equal(job.attempt, 0);
    assert.equal(job.agent, 'alpha');
    assert.equal(job.worker, 'w1');
    assert.equal(job.outcome, 'completed');
    assert.equal(job.level, 'info');
    assert.equal(typeof job.duration_ms, 'number');
  }
});
