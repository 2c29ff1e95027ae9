/**
 * Distributed collection over real processes: real `redis-server`s on free loopback ports, `gym eval run --queue`
 * and `gym worker` as child processes of the real CLI, each worker with its own (scripted, fast) environment: a
 * head server and agents in this test process. Every test checks that each rollout is in the files exactly once.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, test } from 'node:test';
import { Redis } from 'ioredis';
import {
  lineCount,
  readJsonl,
  runGym,
  spawnGym,
  tempDir,
  writeJsonl,
  type RunningGym,
} from '../../test/support/cli.js';
import {
  fakeReply,
  startFakeAgent,
  startFakeHead,
  type FakeAgent,
  type FakeHead,
  type FakeRunHandler,
} from '../testing/fake-agent.js';
import type { Row } from '../runfiles/row.js';
import { startRedis, type RedisProcess } from '../../test/support/redis-server.js';
import { eventually, gate, type Gate } from '../../test/support/wait.js';

const closers: Array<() => unknown> = [];
after(async () => {
  for (const close of closers.reverse()) await close();
});

/** Upper bound of every wait for something that takes milliseconds on a quiet machine: only a broken run hits it. */
const WAIT_MS = 60_000;
/** Bound of one test: several such waits, process starts and whole runs on a busy machine. */
const TEST_MS = 240_000;
/**
 * A stall time that no live worker reaches on a busy machine (it re-claims its jobs every third of it): for tests with
 * more than one worker alive at once that do not test stall recovery, so a worker starved of CPU for a second does not
 * have its jobs moved to another and run twice. Tests of the recovery keep 1 s with one worker alive at a time.
 */
const NO_STALL_SECS = 60;

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** A latency-bound agent: answers success after a few milliseconds (failure for rows marked fail). */
const quick: FakeRunHandler = async (row) => {
  await delay(5);
  return row.fail ? fakeReply.failure(row, 'scripted failure') : fakeReply.success(row, 1);
};

interface Environment {
  head: FakeHead;
  agents: FakeAgent[];
  /** `/run` calls this environment answered or is answering. */
  calls(): number;
}

async function environment(handlers: Record<string, FakeRunHandler>): Promise<Environment> {
  const agents: FakeAgent[] = [];
  for (const [name, handler] of Object.entries(handlers)) {
    const agent = await startFakeAgent(name, handler);
    agents.push(agent);
    closers.push(() => agent.close());
  }
  const head = await startFakeHead(agents);
  closers.push(() => head.close());
  return { head, agents, calls: () => agents.reduce((sum, agent) => sum + agent.runs.length, 0) };
}

async function redis(): Promise<RedisProcess> {
  const server = await startRedis();
  closers.push(() => server.kill());
  return server;
}

/** A worker; its drain deadline is only an upper bound (Ctrl-C waits for its jobs in flight, however slow). */
function startWorker(
  server: RedisProcess,
  env: Pick<Environment, 'head'>,
  id: string,
  dir: string,
  concurrency = 4,
  extra: string[] = [],
): RunningGym {
  const worker = spawnGym(
    [
      'worker',
      '--queue',
      server.url,
      '--concurrency',
      String(concurrency),
      `++head_server.port=${env.head.port}`,
      `+worker_id=${id}`,
      '+worker_drain_secs=120',
      ...extra,
    ],
    { cwd: dir },
  );
  closers.push(() => {
    if (worker.child.exitCode === null && worker.child.signalCode === null) worker.child.kill('SIGKILL');
  });
  return worker;
}

function collector(server: RedisProcess, head: FakeHead, dir: string, extra: string[] = [], stallSecs = 1): RunningGym {
  const run = spawnGym(
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
      `++head_server.port=${head.port}`,
      `+queue_stall_secs=${stallSecs}`,
      '--concurrency',
      '16',
      ...extra,
    ],
    { cwd: dir },
  );
  closers.push(() => {
    if (run.child.exitCode === null && run.child.signalCode === null) run.child.kill('SIGKILL');
  });
  return run;
}

function rows(n: number, agentOf: (i: number) => string, extra: (i: number) => Row = () => ({})): Row[] {
  return Array.from({ length: n }, (_, i) => ({
    responses_create_params: { input: `row ${i}` },
    agent_ref: { name: agentOf(i) },
    i,
    ...extra(i),
  }));
}

/** Every input row appears exactly once across rollouts and failures. */
function assertExactlyOnce(dir: string, n: number): { rollouts: Row[]; failures: Row[] } {
  const rollouts = readJsonl(path.join(dir, 'out/r.jsonl'));
  const failures = readJsonl(path.join(dir, 'out/r_failures.jsonl'));
  const seen = [...rollouts, ...failures].map((row) => row.i as number).sort((a, b) => a - b);
  assert.deepEqual(
    seen,
    Array.from({ length: n }, (_, i) => i),
    'each row exactly once',
  );
  return { rollouts, failures };
}

async function keysLeft(server: RedisProcess): Promise<string[]> {
  const client = new Redis({ host: '127.0.0.1', port: server.port, lazyConnect: true });
  await client.connect();
  try {
    return await client.keys('tsgym:run*');
  } finally {
    client.disconnect();
  }
}

async function stopWorkers(workers: RunningGym[]): Promise<void> {
  for (const worker of workers)
    if (worker.child.exitCode === null && worker.child.signalCode === null) worker.child.kill('SIGINT');
  for (const worker of workers) {
    const result = await worker.result;
    if (result.signal === null) assert.equal(result.code, 0, result.stderr);
  }
}

/**
 * One Redis, one environment, `n` rows for alpha, and one worker serving them. Rows from `heldFrom` on wait at the
 * agent until the test opens `held`: when the test acts (kills the collector, or Redis), the run is surely under way
 * with rollouts in flight, however fast or slow the machine (a quiet one could otherwise finish every row first).
 */
async function oneWorkerScene(
  label: string,
  n: number,
  heldFrom: number,
): Promise<{ server: RedisProcess; dir: string; env: Environment; worker: RunningGym; held: Gate }> {
  const server = await redis();
  const dir = tempDir(`tsgym-queue-${label}-`);
  const held = gate();
  const env = await environment({
    alpha: async (row) => {
      if ((row.i as number) >= heldFrom) await held.opened;
      return fakeReply.success(row, 1);
    },
  });
  closers.push(() => held.open()); // before the agent closes: a failed test leaves no request held
  writeJsonl(
    path.join(dir, 'in.jsonl'),
    rows(n, () => 'alpha'),
  );
  return { server, dir, env, worker: startWorker(server, env, 'w1', dir, 8), held };
}

/** Entries in the run's results stream: results a worker wrote that no collector has consumed yet. */
async function resultsWaiting(server: RedisProcess): Promise<number> {
  const client = new Redis({ host: '127.0.0.1', port: server.port, lazyConnect: true });
  await client.connect();
  try {
    let count = 0;
    for (const key of await client.keys('tsgym:run:*:rollouts:results')) count += await client.xlen(key);
    return count;
  } finally {
    client.disconnect();
  }
}

test(
  'three workers and one collector: every rollout once, failures name their worker, a worker without the agent refuses',
  { timeout: TEST_MS },
  async () => {
    const server = await redis();
    const dir = tempDir('tsgym-queue-');
    // w1 and w2 start together once w3 has refused; whichever takes a job first holds it (at most its concurrency,
    // 4, of the 20 beta rows nobody else runs) until the other has taken one too, so both surely take jobs, however
    // far apart the two processes get going on a busy machine.
    const both = gate();
    let pair: Environment[] = [];
    const untilBoth: FakeRunHandler = async (row, call) => {
      if (pair.length === 2 && pair.every((env) => env.calls() > 0)) both.open();
      await both.opened;
      return quick(row, call);
    };
    const envs = [
      await environment({ alpha: untilBoth, beta: untilBoth }),
      await environment({ alpha: untilBoth, beta: untilBoth }),
      await environment({ alpha: quick }),
    ];
    closers.push(() => both.open()); // before the agents close: a failed test leaves no request held
    pair = [envs[0]!, envs[1]!];
    const n = 60;
    writeJsonl(
      path.join(dir, 'in.jsonl'),
      rows(
        n,
        (i) => (i % 3 === 0 ? 'beta' : 'alpha'),
        (i) => (i % 20 === 7 ? { fail: true } : {}),
      ),
    );
    // The worker without beta starts alone, so it is offered beta rows before anyone else can take them.
    const lacking = startWorker(server, envs[2]!, 'w3', dir);
    await eventually(() => /connected to/.test(lacking.stderr()), {
      what: 'the worker without beta to connect',
      timeoutMs: WAIT_MS,
    });
    const run = collector(server, envs[0]!.head, dir, [], NO_STALL_SECS);
    await eventually(() => /refusing job/.test(lacking.stderr()), {
      what: 'the worker without beta to refuse a job',
      timeoutMs: WAIT_MS,
    });
    await eventually(
      () =>
        /No connected worker offers agent 'beta' \(workers: w3\); its rollouts wait in the queue/.test(run.stderr()),
      { what: 'the collector to say beta has no worker', timeoutMs: WAIT_MS },
    );
    const workers = [startWorker(server, envs[0]!, 'w1', dir), startWorker(server, envs[1]!, 'w2', dir), lacking];
    const result = await run.result;
    assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
    const { failures } = assertExactlyOnce(dir, n);
    assert.equal(failures.length, 3);
    for (const failure of failures) {
      assert.match(String(failure._ng_worker), /^w[123]$/);
      assert.match(
        result.stderr,
        new RegExp(`Failure on worker ${String(failure._ng_worker)}: task ${String(failure._ng_task_index)} rollout 0`),
      );
    }
    // The worker whose environment lacks beta ran none of its rows, and said why.
    assert.equal(envs[2]!.agents[0]!.runs.filter((row) => (row.agent_ref as Row).name === 'beta').length, 0);
    assert.match(
      workers[2]!.stderr(),
      /refusing job t\d+r0a0 of out\/r\.jsonl: agent 'beta' is not in this worker's environment/,
    );
    assert.ok(
      envs.every((env) => env.calls() > 0),
      `every worker took jobs: ${envs.map((env) => env.calls()).join(', ')}`,
    );
    assert.match(result.stderr, /workers 3 \(/);
    assert.match(result.stdout, /60 rollouts expected: 57 completed, 3 failed \(3 retryable, 0 terminal\), 0 missing/);
    await stopWorkers(workers);
    assert.deepEqual(await keysLeft(server), [], 'a finished run leaves nothing behind in Redis');
  },
);

/** An agent that answers the first `answered` calls and then hangs: the worker in front of it has jobs in flight. */
function answersThenHangs(answered: number): FakeRunHandler {
  return async (row, call) => (call < answered ? quick(row, call) : fakeReply.hang());
}

test(
  'a SIGKILLed worker: its jobs in flight are run again after the stall timeout and recorded once',
  { timeout: TEST_MS },
  async () => {
    const server = await redis();
    const dir = tempDir('tsgym-queue-kill-');
    const stuck = await environment({ alpha: answersThenHangs(5) });
    const healthy = await environment({ alpha: quick });
    const n = 40;
    writeJsonl(
      path.join(dir, 'in.jsonl'),
      rows(n, () => 'alpha'),
    );
    const doomed = startWorker(server, stuck, 'doomed', dir);
    await eventually(() => /connected to/.test(doomed.stderr()), {
      what: 'the first worker to connect',
      timeoutMs: WAIT_MS,
    });
    // Only one worker is alive at a time here (the survivor starts as the doomed one is killed), so the 1 s stall
    // time cannot move a live worker's jobs.
    const run = collector(server, healthy.head, dir);
    await eventually(() => stuck.calls() >= 9, {
      what: 'the doomed worker to hold 4 jobs in flight',
      timeoutMs: WAIT_MS,
    });
    const survivor = startWorker(server, healthy, 'survivor', dir);
    doomed.child.kill('SIGKILL');
    const result = await run.result;
    assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
    const { rollouts } = assertExactlyOnce(dir, n);
    assert.equal(rollouts.length, n);
    // The four rows that hung on the dead worker were run again by the survivor.
    const hung = stuck.agents[0]!.runs.slice(5).map((row) => row.i as number);
    assert.equal(hung.length, 4);
    const rerun = new Set(healthy.agents[0]!.runs.map((row) => row.i as number));
    for (const i of hung) assert.ok(rerun.has(i), `row ${i} re-run after the stall`);
    await stopWorkers([survivor]);
  },
);

test(
  'a SIGKILLed collector: resume consumes the results finished meanwhile, re-runs nothing, duplicates nothing',
  { timeout: TEST_MS },
  async () => {
    const n = 60;
    const { server, dir, env, worker, held } = await oneWorkerScene('resume', n, 10);
    const first = collector(server, env.head, dir);
    await eventually(() => lineCount(path.join(dir, 'out/r.jsonl')) >= 10, {
      what: 'ten rollouts on disk',
      timeoutMs: WAIT_MS,
    });
    first.child.kill('SIGKILL');
    const killed = await first.result;
    assert.equal(killed.signal, 'SIGKILL', 'the collector was killed mid-run');
    // The jobs already enqueued (those held at the agent among them) finish while no collector listens; their
    // results wait in Redis.
    held.open();
    await eventually(async () => (await resultsWaiting(server)) > 0, {
      what: 'results written to Redis with no collector listening',
      timeoutMs: WAIT_MS,
      intervalMs: 50,
    });
    const resumed = collector(server, env.head, dir, ['--resume']);
    const result = await resumed.result;
    assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
    assertExactlyOnce(dir, n);
    assert.equal(env.calls(), n, 'no finished rollout was run twice');
    const waited = /(\d+) results finished in Redis while no collector was listening/.exec(result.stderr);
    assert.ok(waited && Number(waited[1]) >= 1, result.stderr);
    await stopWorkers([worker]);
    assert.deepEqual(await keysLeft(server), []);
  },
);

test(
  'Redis restarting empty mid-run pauses the run visibly; it then continues and records each rollout once',
  { timeout: TEST_MS },
  async () => {
    const n = 80;
    const { server, dir, env, worker, held } = await oneWorkerScene('restart', n, 10);
    // The outage allowance is only an upper bound: Redis is back as soon as it restarts.
    const run = collector(server, env.head, dir, ['+queue_outage_secs=180']);
    await eventually(() => lineCount(path.join(dir, 'out/r.jsonl')) >= 10, {
      what: 'ten rollouts on disk',
      timeoutMs: WAIT_MS,
    });
    await server.kill();
    await eventually(() => /is unreachable: the run is paused/.test(run.stderr()), {
      what: 'the pause to be reported',
      timeoutMs: WAIT_MS,
    });
    await server.restart();
    // The rollouts held at the agent are still in flight: the collector must send them again to the empty Redis.
    await eventually(() => /Redis no longer holds this run's data/.test(run.stderr()), {
      what: () => `the collector to notice the emptied Redis: ${run.stderr()}`,
      timeoutMs: WAIT_MS,
    });
    held.open();
    const result = await run.result;
    assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
    assert.match(result.stderr, /is back after [\d.]+ s: the run continues/);
    assert.match(result.stderr, /Redis no longer holds this run's data .*: sending the \d+ rollouts in flight again/);
    assertExactlyOnce(dir, n);
    await stopWorkers([worker]);
  },
);

test(
  'Redis that stays away fails the run with a clear error and the resume command; the resume finishes it once',
  { timeout: TEST_MS },
  async () => {
    const n = 40;
    const { server, dir, env, worker, held } = await oneWorkerScene('outage', n, 5);
    const run = collector(server, env.head, dir, ['+queue_outage_secs=2']);
    await eventually(() => lineCount(path.join(dir, 'out/r.jsonl')) >= 5, {
      what: 'five rollouts on disk',
      timeoutMs: WAIT_MS,
    });
    await server.kill();
    const result = await run.result;
    // The rollouts held at the agent may finish now: the resume below records each of them once.
    held.open();
    assert.equal(result.code, 1, result.stderr);
    assert.match(
      result.stderr,
      /Error: Redis at redis:\/\/127\.0\.0\.1:\d+ has been unreachable for \d+ s .*the finished rollouts are on disk.*resume with: gym eval run .*(--resume|\+resume_from_cache=true)/s,
    );
    assert.doesNotMatch(result.stderr, /unexpected|at .*\.js:\d+/);
    await server.restart();
    const resumed = await collector(server, env.head, dir, ['--resume']).result;
    assert.equal(resumed.code, 0, `${resumed.stdout}\n${resumed.stderr}`);
    assertExactlyOnce(dir, n);
    await stopWorkers([worker]);
  },
);

test(
  'Ctrl-C on a worker drains: its jobs in flight finish and are recorded, it takes no new job, it exits 0',
  { timeout: TEST_MS },
  async () => {
    const server = await redis();
    const dir = tempDir('tsgym-queue-drain-');
    // The first worker's two jobs stay in flight until it has begun to drain: it cannot finish them (and take two
    // more) before the Ctrl-C lands, however the processes are scheduled.
    const drainingNow = gate();
    const slow = await environment({ alpha: async (row) => (await drainingNow.opened, fakeReply.success(row, 1)) });
    closers.push(() => drainingNow.open()); // before the agent closes: a failed test leaves no request held
    const other = await environment({ alpha: quick });
    const n = 12;
    writeJsonl(
      path.join(dir, 'in.jsonl'),
      rows(n, () => 'alpha'),
    );
    const draining = startWorker(server, slow, 'draining', dir, 2);
    await eventually(() => /connected to/.test(draining.stderr()), {
      what: 'the first worker to connect',
      timeoutMs: WAIT_MS,
    });
    const run = collector(server, slow.head, dir);
    await eventually(() => slow.calls() >= 2, { what: 'two jobs in flight on the first worker', timeoutMs: WAIT_MS });
    draining.child.kill('SIGINT');
    await eventually(() => /draining — no new jobs/.test(draining.stderr()), {
      what: () => `the worker to start draining: ${draining.stderr()}`,
      timeoutMs: WAIT_MS,
    });
    drainingNow.open();
    const stopped = await draining.result;
    assert.equal(stopped.code, 0, stopped.stderr);
    assert.match(stopped.stderr, /draining — no new jobs/);
    assert.equal(slow.calls(), 2, 'no job taken after Ctrl-C');
    // Both jobs it had finished before it exited: their results are recorded.
    await eventually(() => lineCount(path.join(dir, 'out/r.jsonl')) >= 2, {
      what: 'the drained results on disk',
      timeoutMs: WAIT_MS,
    });
    startWorker(server, other, 'other', dir);
    const result = await run.result;
    assert.equal(result.code, 0, result.stderr);
    assertExactlyOnce(dir, n);
    assert.equal(other.calls(), n - 2, 'the rest ran once, on the other worker');
  },
);

test(
  'a job whose worker dies three times becomes a retryable worker_lost failure row',
  { timeout: TEST_MS },
  async () => {
    const server = await redis();
    const dir = tempDir('tsgym-queue-lost-');
    const hanging = await environment({ alpha: () => fakeReply.hang() });
    const healthy = await environment({ alpha: quick });
    writeJsonl(
      path.join(dir, 'in.jsonl'),
      rows(1, () => 'alpha'),
    );
    let run: RunningGym | undefined;
    for (let death = 1; death <= 3; death++) {
      const doomed = startWorker(server, hanging, `doomed${death}`, dir);
      await eventually(() => /connected to/.test(doomed.stderr()), {
        what: `doomed worker ${death} to connect`,
        timeoutMs: WAIT_MS,
      });
      // One worker alive at a time: the 1 s stall time moves only a dead worker's job.
      run ??= collector(server, healthy.head, dir);
      await eventually(() => hanging.calls() >= death, {
        what: `doomed worker ${death} to take the job`,
        timeoutMs: WAIT_MS,
      });
      assert.equal(hanging.calls(), death, 'the one job, taken once by each doomed worker');
      doomed.child.kill('SIGKILL');
      await doomed.result;
    }
    // A live worker's stalled check finds the third death and gives the job up.
    const survivor = startWorker(server, healthy, 'survivor', dir);
    const result = await run!.result;
    assert.equal(result.code, 0, result.stderr);
    const { failures } = assertExactlyOnce(dir, 1);
    assert.equal(failures[0]!._ng_failure_class, 'worker_lost');
    assert.equal(failures[0]!._ng_failure_terminal, undefined, 'retryable');
    assert.match(String(failures[0]!.error), /the job queue gave up on this rollout/);
    assert.equal(healthy.calls(), 0);
    await stopWorkers([survivor]);
  },
);

test('bad queue settings are one clear paragraph, before anything runs', { timeout: TEST_MS }, async () => {
  const dir = tempDir('tsgym-queue-config-');
  const env = await environment({ alpha: quick });
  const noQueue = await runGym(['worker', `++head_server.port=${env.head.port}`], { cwd: dir });
  assert.equal(noQueue.code, 1);
  assert.match(
    noQueue.stderr,
    /^Error: gym worker needs the Redis to take jobs from: add --queue redis:\/\/HOST:PORT\[\/DB\]/,
  );
  const badUrl = await runGym(['worker', '--queue', 'http://127.0.0.1:6379', `++head_server.port=${env.head.port}`], {
    cwd: dir,
  });
  assert.equal(badUrl.code, 1);
  assert.match(
    badUrl.stderr,
    /Config value 'queue_url' \(--queue\) must be a Redis URL such as redis:\/\/127\.0\.0\.1:6379\/0, got "http:\/\/127\.0\.0\.1:6379": the scheme must be redis:/,
  );
  writeJsonl(
    path.join(dir, 'in.jsonl'),
    rows(2, () => 'alpha'),
  );
  const badRun = await runGym(
    [
      'eval',
      'run',
      '--no-serve',
      '-i',
      'in.jsonl',
      '-o',
      'r.jsonl',
      '--queue',
      'redis://h:6379/x',
      `++head_server.port=${env.head.port}`,
    ],
    { cwd: dir },
  );
  assert.equal(badRun.code, 1);
  assert.match(badRun.stderr, /the database 'x' is not a number/);
  assert.equal(env.calls(), 0);
  for (const res of [noQueue, badUrl, badRun]) assert.doesNotMatch(res.stderr, /unexpected|\n\s+at /);
});

test(
  'a Redis emptied under a running collector (FLUSHALL, no disconnect): the rollouts in flight are sent again, each recorded once',
  { timeout: TEST_MS },
  async () => {
    const n = 60;
    const server = await redis();
    const dir = tempDir('tsgym-queue-flush-');
    // Tasks from 10 on wait at a gate until Redis has been emptied, so rollouts are surely in flight at the flush
    // however fast the machine is (without it, a quiet machine could finish all 60 before the flush lands).
    const flushed = gate();
    const env = await environment({
      alpha: async (row) => {
        if (Number(row._ng_task_index) >= 10) await flushed.opened;
        return fakeReply.success(row, 1);
      },
    });
    closers.push(() => flushed.open()); // before the agent closes: a failed test leaves no request held
    writeJsonl(
      path.join(dir, 'in.jsonl'),
      rows(n, () => 'alpha'),
    );
    const worker = startWorker(server, env, 'w1', dir, 8);
    const run = collector(server, env.head, dir);
    await eventually(() => lineCount(path.join(dir, 'out/r.jsonl')) >= 10, {
      what: 'ten rollouts on disk',
      timeoutMs: WAIT_MS,
    });
    await eventually(() => env.calls() >= 18, {
      what: 'the next rollouts held in flight at the gate',
      timeoutMs: WAIT_MS,
    });
    const admin = new Redis({ host: '127.0.0.1', port: server.port });
    await admin.flushall();
    admin.disconnect();
    await eventually(() => /Redis no longer holds this run's data/.test(run.stderr()), {
      what: 'the collector to notice the emptied Redis',
      timeoutMs: WAIT_MS,
    });
    flushed.open();
    const result = await run.result;
    assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
    assert.match(result.stderr, /Redis no longer holds this run's data/);
    assertExactlyOnce(dir, n);
    await stopWorkers([worker]);
  },
);

test(
  'a worker whose own agent refuses connections hands its jobs back; another worker runs them, no failure rows',
  { timeout: TEST_MS },
  async () => {
    const server = await redis();
    const dir = tempDir('tsgym-queue-deadagent-');
    const gone = await startFakeAgent('alpha', quick);
    const deadPort = gone.port;
    await gone.close();
    const deadHead = await startFakeHead([{ name: 'alpha', host: '127.0.0.1', port: deadPort }]);
    closers.push(() => deadHead.close());
    const healthy = await environment({ alpha: quick });
    const n = 20;
    writeJsonl(
      path.join(dir, 'in.jsonl'),
      rows(n, () => 'alpha'),
    );
    const stranded = startWorker(server, { head: deadHead }, 'stranded', dir, 4, ['+agent_unreachable_wait_secs=0.5']);
    await eventually(() => /connected to/.test(stranded.stderr()), {
      what: 'the worker with a dead agent to connect',
      timeoutMs: WAIT_MS,
    });
    // Two workers alive at once: a stall time neither reaches, so only the hand-back moves a job.
    const run = collector(server, healthy.head, dir, [], NO_STALL_SECS);
    await eventually(
      () => /never reached agent 'alpha' \(it refuses connections\); it goes back to the queue/.test(stranded.stderr()),
      { what: 'a job handed back', timeoutMs: WAIT_MS },
    );
    const survivor = startWorker(server, healthy, 'survivor', dir);
    const result = await run.result;
    assert.equal(result.code, 0, result.stderr);
    const { failures } = assertExactlyOnce(dir, n);
    assert.equal(failures.length, 0, 'a job that never reached an agent is not a failure');
    assert.equal(healthy.calls(), n);
    await stopWorkers([stranded, survivor]);
  },
);
