/**
 * A producer with Redis alone (`gym eval run --no-serve --queue …`, no head server named): it waits, visibly, for a
 * worker serving its rows' agents, fails in bounded time naming the agents that are served, and has its end-of-run
 * metrics computed by a worker through its local agent — the aggregate file identical to a direct run's. Real
 * `redis-server`, real CLI processes; the environment (head server, agents) lives in this test process.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { Redis } from 'ioredis';
import { readJsonl, runGym, spawnGym, tempDir, writeJsonl, type RunningGym } from '../../test/support/cli.js';
import {
  fakeReply,
  fakeResponse,
  startFakeAgent,
  startFakeHead,
  type FakeAgent,
  type FakeHead,
  type FakeRunHandler,
} from '../testing/fake-agent.js';
import type { Row } from '../runfiles/row.js';
import { App } from '../http/server.js';
import { findFreePort } from '../config/index.js';
import { startRedis, type RedisProcess } from '../../test/support/redis-server.js';
import { eventually } from '../../test/support/wait.js';

/** Upper bound of every wait for something that takes milliseconds on a quiet machine: only a broken run hits it. */
const WAIT_MS = 60_000;
/** Bound of one test: process starts and whole runs on a busy machine. */
const TEST_MS = 240_000;

const closers: Array<() => unknown> = [];
after(async () => {
  for (const close of closers.reverse()) await close();
});

// Rewards vary by row, so the metrics depend on every row arriving, in order.
const varied: FakeRunHandler = (row) => fakeReply.success(row, (row.i as number) % 3 === 0 ? 1 : 0);

async function scene(handler = varied): Promise<{ server: RedisProcess; agent: FakeAgent; head: FakeHead }> {
  const server = await startRedis();
  closers.push(() => server.kill());
  const agent = await startFakeAgent('alpha', handler);
  closers.push(() => agent.close());
  const head = await startFakeHead([agent]);
  closers.push(() => head.close());
  return { server, agent, head };
}

function worker(server: RedisProcess, head: FakeHead, dir: string, id = 'w1'): RunningGym {
  const running = spawnGym(
    ['worker', '--queue', server.url, '--concurrency', '16', `++head_server.port=${head.port}`, `+worker_id=${id}`],
    { cwd: dir },
  );
  closers.push(() => {
    if (running.child.exitCode === null && running.child.signalCode === null) running.child.kill('SIGKILL');
  });
  return running;
}

function producer(server: RedisProcess, dir: string, extra: string[] = []): RunningGym {
  const running = spawnGym(
    [
      'eval',
      'run',
      '--no-serve',
      '-i',
      'in.jsonl',
      '-o',
      'out/r.jsonl',
      '--queue',
      server.url,
      '--concurrency',
      '32',
    ].concat(extra),
    // No head server anywhere near: a head server lookup would fail.
    { cwd: dir },
  );
  closers.push(() => {
    if (running.child.exitCode === null && running.child.signalCode === null) running.child.kill('SIGKILL');
  });
  return running;
}

const rows = (n: number, agent: string): Row[] =>
  Array.from({ length: n }, (_, i) => ({
    responses_create_params: { input: `row ${i}` },
    agent_ref: { name: agent },
    i,
  }));

test(
  'a producer with Redis alone waits for a worker, and its aggregate file is the direct run’s',
  { timeout: TEST_MS },
  async () => {
    const { server, agent, head } = await scene();
    const dir = tempDir('tsgym-producer-');
    const direct = tempDir('tsgym-producer-direct-');
    // More rows than one chunk of the metrics stream holds.
    const n = 1100;
    writeJsonl(path.join(dir, 'in.jsonl'), rows(n, 'alpha'));
    writeJsonl(path.join(direct, 'in.jsonl'), rows(n, 'alpha'));
    const run = producer(server, dir);
    let stdout = '';
    run.child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    await eventually(
      () => /Waiting up to 60 s for a gym worker on redis:\/\/.* none serves an agent yet/.test(stdout),
      {
        what: () => `the producer to say it waits for a worker: ${stdout}${run.stderr()}`,
        timeoutMs: WAIT_MS,
      },
    );
    const serving = worker(server, head, dir);
    const result = await run.result;
    assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
    assert.match(result.stdout, /Computing the metrics of agent 'alpha' \(1100 rollouts\) on a gym worker/);
    assert.equal(agent.aggregateCalls.length, 1, 'the worker asked its local agent once');
    assert.match(serving.stderr(), /computing the metrics of agent 'alpha' \(1100 rollouts\) for a collector/);
    assert.equal(readJsonl(path.join(dir, 'out/r.jsonl')).length, n);

    const baseline = await runGym(
      ['eval', 'run', '--no-serve', '-i', 'in.jsonl', '-o', 'out/r.jsonl', `++head_server.port=${head.port}`],
      { cwd: direct },
    );
    assert.equal(baseline.code, 0, baseline.stderr);
    const aggregateOf = (root: string): string => readFileSync(path.join(root, 'out/r_aggregate_metrics.json'), 'utf8');
    assert.equal(aggregateOf(dir), aggregateOf(direct));
    // Nothing of the metrics job stays in Redis.
    const client = new Redis({ host: '127.0.0.1', port: server.port });
    try {
      assert.deepEqual(await client.keys('tsgym:agg*'), []);
      assert.equal(await client.exists('tsgym:aggregations'), 0);
    } finally {
      client.disconnect();
    }
    serving.child.kill('SIGINT');
    await serving.result;
  },
);

test(
  'a producer whose rows name an agent no worker serves fails in bounded time, naming what is served',
  { timeout: TEST_MS },
  async () => {
    const { server, head } = await scene();
    const dir = tempDir('tsgym-producer-unserved-');
    writeJsonl(path.join(dir, 'in.jsonl'), rows(3, 'beta'));
    const serving = worker(server, head, dir);
    await eventually(() => /connected to/.test(serving.stderr()), {
      what: 'the worker to connect',
      timeoutMs: WAIT_MS,
    });
    const started = Date.now();
    const result = await producer(server, dir, ['+queue_worker_wait_secs=2']).result;
    assert.notEqual(result.code, 0);
    // A contrast, not a speed: it gave up after its 2 s, well before the 60 s it would wait without the setting (the
    // process start on a busy machine takes seconds of its own).
    const elapsed = Date.now() - started;
    assert.ok(elapsed < 30_000, `bounded by the 2 s setting, not the 60 s default: took ${elapsed} ms`);
    assert.match(result.stdout, /Waiting up to 2 s for a gym worker .*1 worker\(s\) connected, they serve 'alpha'/);
    assert.match(
      result.stderr,
      /No gym worker on redis:\/\/\S+ served the rows' agents within 2 s \(\+queue_worker_wait_secs\)\. Unknown agent 'beta'.*knows these agents: 'alpha'/,
    );
    serving.child.kill('SIGINT');
    await serving.result;
  },
);

test('a worker alive but busy with rollouts far longer than the lock keeps its jobs: none is run twice', async () => {
  // Lock of 1 s (renewed every 0.5 s by the live worker), rollouts of 4 s: a dead-worker check would fire 4 times over.
  const { server, agent, head } = await scene(async (row) => {
    await new Promise((resolve) => setTimeout(resolve, 4000));
    return fakeReply.success(row, 1);
  });
  const dir = tempDir('tsgym-producer-busy-');
  writeJsonl(path.join(dir, 'in.jsonl'), rows(4, 'alpha'));
  const serving = worker(server, head, dir);
  const result = await producer(server, dir, ['+queue_stall_secs=1']).result;
  assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
  assert.equal(agent.runs.length, 4, 'each rollout ran once');
  assert.doesNotMatch(serving.stderr(), /stalled/);
  assert.equal(readJsonl(path.join(dir, 'out/r.jsonl')).length, 4);
  serving.child.kill('SIGINT');
  await serving.result;
});

test(
  'a worker that dies while computing the metrics: the producer offers them to another worker',
  { timeout: TEST_MS },
  async () => {
    const server = await startRedis();
    closers.push(() => server.kill());
    // Host A's agent runs rollouts but never answers /aggregate_metrics (until its caller is gone).
    const app = new App();
    app.post('/run', (req) => ({ body: { ...(req.json() as Row), response: fakeResponse(), reward: 1 } }));
    app.post(
      '/aggregate_metrics',
      (req) => new Promise((resolve) => req.signal.addEventListener('abort', () => resolve({ status: 503, body: {} }))),
    );
    const listening = await app.listen(0, '127.0.0.1');
    closers.push(() => listening.close());
    const headA = await startFakeHead([{ name: 'alpha', host: '127.0.0.1', port: listening.port }]);
    closers.push(() => headA.close());
    const agentB = await startFakeAgent('alpha', varied);
    closers.push(() => agentB.close());
    const headB = await startFakeHead([agentB]);
    closers.push(() => headB.close());

    const dir = tempDir('tsgym-producer-lost-');
    writeJsonl(path.join(dir, 'in.jsonl'), rows(20, 'alpha'));
    const first = worker(server, headA, dir);
    const run = producer(server, dir);
    await eventually(() => /computing the metrics of agent 'alpha' \(20 rollouts\)/.test(first.stderr()), {
      what: () => `worker A to take the metrics job: ${first.stderr()}`,
      timeoutMs: WAIT_MS,
    });
    // The worst order: the producer is frozen, so the second worker looks at the offer after the dead worker's claim
    // lapsed and before the producer notices. A lapsed offer must not be taken again (the rows are gone with the dead
    // worker); the producer, thawed, offers the job anew. Worker B is up before the freeze (it finds the offer taken
    // meanwhile), so it looks at the offer soon after the lapse, while the frozen producer's offer is still fresh.
    const second = worker(server, headB, dir, 'w2');
    await eventually(() => /connected to/.test(second.stderr()), { what: 'worker B to connect', timeoutMs: WAIT_MS });
    const redis = new Redis(server.url);
    closers.push(() => redis.disconnect());
    const [claim] = await redis.keys('tsgym:agg:*:claim');
    assert.ok(claim, 'worker A holds a claim');
    run.child.kill('SIGSTOP');
    first.child.kill('SIGKILL');
    const lapsesAt = Date.now() + Math.max(0, await redis.pttl(claim));
    // A worker writes its presence, then looks at the offers; its next presence is written after that look is over.
    const seenAt = async (): Promise<number> => {
      const presence = await redis.hget('tsgym:workers', 'w2');
      return presence === null ? 0 : (JSON.parse(presence) as { seenAt: number }).seenAt;
    };
    let looked = 0;
    await eventually(async () => (looked = await seenAt()) > lapsesAt + 600, {
      what: () => `worker B to look at the offers after the claim lapsed: ${second.stderr()}`,
      timeoutMs: WAIT_MS,
    });
    await eventually(async () => (await seenAt()) > looked, {
      what: () => `worker B to finish that look: ${second.stderr()}`,
      timeoutMs: WAIT_MS,
    });
    const offerId = /^tsgym:agg:(.+):claim$/.exec(claim)![1]!;
    const offer = await redis.hget('tsgym:aggregations', offerId);
    assert.ok(offer, 'the frozen producer still offers the job');
    const offerAge = looked - (JSON.parse(offer) as { refreshedAt: number }).refreshedAt;
    assert.ok(offerAge < 30_000, `worker B looked while the offer was fresh (a stale one is skipped): ${offerAge} ms`);
    assert.equal(await redis.exists(claim), 0, 'worker B did not take the lapsed offer again');
    run.child.kill('SIGCONT');
    const result = await run.result;
    assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
    assert.match(result.stdout, /The worker computing the metrics of agent 'alpha' went away\./);
    assert.match(result.stdout, /Offering the metrics of agent 'alpha' to another worker \(offer 2 of 3\)/);
    assert.equal(agentB.aggregateCalls.length, 1);
    assert.equal(agentB.aggregateCalls[0]!.length, 20, 'the second worker got every row');
    second.child.kill('SIGINT');
    await second.result;
  },
);

test('a producer whose Redis is unreachable fails in bounded time, writing nothing', async () => {
  const dir = tempDir('tsgym-producer-noredis-');
  writeJsonl(path.join(dir, 'in.jsonl'), rows(3, 'alpha'));
  const port = await findFreePort();
  const result = await runGym(
    ['eval', 'run', '--no-serve', '-i', 'in.jsonl', '-o', 'out/r.jsonl', '--queue', `redis://127.0.0.1:${port}`].concat(
      ['+queue_outage_secs=1'],
    ),
    { cwd: dir },
  );
  assert.notEqual(result.code, 0);
  assert.match(
    result.stderr,
    new RegExp(`Redis at redis://127\\.0\\.0\\.1:${port} could not be reached \\(waited 1 s`),
  );
  assert.equal(existsSync(path.join(dir, 'out')), false, 'nothing written');
});
