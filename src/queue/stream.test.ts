/**
 * The queue's streams against entries no tsgym process wrote: a real `redis-server`, `gym worker` and
 * `gym eval run --queue` as child processes. An entry added by hand to the jobs stream without a job id, agent or
 * body is answered as unusable (the worker stays up); one added to the results stream that is not a list of results,
 * or is nested past the bound on received JSON, is skipped with a warning. Either way the run still records every
 * rollout once.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, test } from 'node:test';
import { Redis } from 'ioredis';
import { readJsonl, tempDir } from '../../test/support/cli.js';
import { runStreamKey, startQueuedRun, writeAgentRows } from '../../test/support/queue-run.js';
import { fakeReply, startFakeAgent, startFakeHead } from '../testing/fake-agent.js';
import { startRedis } from '../../test/support/redis-server.js';
import { eventually, gate } from '../../test/support/wait.js';

/** Upper bound of every wait for something that takes milliseconds on a quiet machine. */
const WAIT_MS = 60_000;

const closers: Array<() => unknown> = [];
after(async () => {
  for (const close of closers.reverse()) await close();
});

/** A run of `n` rows through one worker; rows from index 2 on wait at the agent until `release()`. */
async function heldRun(n: number) {
  const server = await startRedis();
  closers.push(() => server.kill());
  const released = gate();
  const agent = await startFakeAgent('alpha', async (row) => {
    if (Number(row.i) >= 2) await released.opened;
    return fakeReply.success(row, 1);
  });
  closers.push(() => agent.close());
  closers.push(() => released.open()); // before the agent closes: a failed test leaves no request held
  const head = await startFakeHead([agent]);
  closers.push(() => head.close());
  const dir = tempDir('tsgym-queue-stream-');
  writeAgentRows(dir, n);
  const { worker, run } = startQueuedRun({
    queueUrl: server.url,
    headPort: head.port,
    dir,
    closers,
    collectorArgs: ['--concurrency', '8'],
  });
  const admin = new Redis({ host: '127.0.0.1', port: server.port });
  closers.push(() => admin.disconnect());
  await eventually(() => agent.runs.length >= 4, {
    what: 'the run to be under way',
    timeoutMs: WAIT_MS,
    intervalMs: 50,
  });
  /** Lets the held rows finish, then checks the run recorded each row once and the worker is still up. */
  const release = async (): Promise<void> => {
    released.open();
    const result = await run.result;
    assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
    const seen = readJsonl(path.join(dir, 'out/r.jsonl'))
      .map((row) => row.i as number)
      .sort((a, b) => a - b);
    assert.deepEqual(
      seen,
      Array.from({ length: n }, (_, i) => i),
      'each row exactly once',
    );
    assert.equal(agent.runs.length, n, 'nothing ran twice');
    assert.equal(worker.child.exitCode, null, 'the worker is still up');
    worker.child.kill('SIGINT');
    assert.equal((await worker.result).code, 0);
  };
  return { admin, worker, run, release };
}

test(
  'a malformed entry in the jobs stream is answered as unusable; the worker stays up, the run completes once',
  { timeout: 240_000 },
  async () => {
    const { admin, worker, release } = await heldRun(12);
    await admin.xadd(await runStreamKey(admin, 'jobs'), '*', 'note', 'not a tsgym job');
    await eventually(() => /carries no job id, agent or body; .*answered as unusable, not run/.test(worker.stderr()), {
      what: 'the worker to answer the malformed entry',
      timeoutMs: WAIT_MS,
    });
    await release();
  },
);

test(
  'entries of the results stream that are not results, or nest past the bound, are skipped; the run completes once',
  { timeout: 240_000 },
  async () => {
    const { admin, run, release } = await heldRun(6);
    const results = await runStreamKey(admin, 'results');
    // A "result" for a job still held at the agent (task 3), its row nested 100,000 deep: taken as that job's result,
    // writing it would overflow the stack; it must be refused like any other unreadable entry.
    const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
    await admin.xadd(results, '*', 'r', `[{"jobId":"t3r0a0","worker":"intruder","row":${deep}}]`);
    await admin.xadd(results, '*', 'r', 'not json');
    await admin.xadd(results, '*', 'r', '{"jobId":"t4r0a0"}');
    await eventually(() => run.stderr().match(/Ignoring an unreadable entry of /g)?.length === 3, {
      what: () => `the collector to skip the three entries; stderr: ${run.stderr()}`,
      timeoutMs: WAIT_MS,
    });
    await release();
  },
);
