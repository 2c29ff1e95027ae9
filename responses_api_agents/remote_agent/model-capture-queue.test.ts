/**
 * Model-call capture through the Redis queue and across a collector crash, every hop a real process: a
 * `redis-server`, `gym env start` (the counter environment, the remote agent with `model_server` and
 * `token_id_capture: true`, `vllm_model` in front of the scripted vLLM of test/support/vllm-upstream.ts), a
 * `gym worker`, and `gym eval run` (through the queue, or direct). A scripted service makes one to three append-only
 * model calls per rollout through the URL it is handed, its first message naming the task and which of the task's
 * service invocations it is; so each row's capture and token chain show whose calls it holds.
 *
 * - Through the queue: every row carries exactly its own rollout's calls and their token ids.
 * - The collector SIGKILLed with rollouts held mid-service, then resumed: through the queue the worker finishes them
 *   and the resumed collector records them once; direct, the remote agent abandons them, the resume runs them again
 *   under the same attempt index, and the abandoned service's late model calls must not land in the new attempt.
 *   Either way the rows written before the crash keep their capture and the model server holds no rollout after.
 * - A worker SIGKILLed the same way: its jobs go back to the queue and run again, same attempt index, on another
 *   worker; the dead worker's abandoned service calls late, as above, and must not land in the new run's row.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { findFreePort, installRoot } from '../../src/config/index.js';
import { request } from '../../src/http/client.js';
import type { ModelCallCapture } from '../../src/model-server/records.js';
import { assistantMessage, responseObject, startScriptedService, type ServiceCall } from '../../src/testing/index.js';
import { lineCount, readJsonl, spawnGym, startGymEnv, tempDir, type RunningGym } from '../../test/support/cli.js';
import { serverInstances } from '../../test/support/environments.js';
import { startRedis, type RedisProcess } from '../../test/support/redis-server.js';
import {
  answerText,
  appendedHistory,
  EOS,
  ids,
  logProbOf,
  promptIds,
  startVllmUpstream,
  type VllmUpstream,
} from '../../test/support/vllm-upstream.js';
import { eventually, gate, type Gate } from '../../test/support/wait.js';

/** Upper bound of every wait for something that takes a second or so on a quiet machine. */
const WAIT_MS = 60_000;
const TEST_MS = 300_000;

const closers: Array<() => unknown> = [];
after(async () => {
  for (const close of closers.reverse()) await Promise.resolve(close()).catch(() => undefined);
});

/** One service call (one rollout attempt's only one: it returns the final answer) and what its model calls got. */
interface Invocation {
  task: string;
  /** Which of the task's invocations this is (0, 1, …): part of its first message. */
  nth: number;
  base: string;
  statuses: number[];
  /** Opened once its last model call was answered. */
  done: Gate;
}

/** What the service does after its first model call; the tests set it. */
let afterFirstCall: (invocation: Invocation) => Promise<void> = () => Promise.resolve();
const invocations: Invocation[] = [];

function taskText(i: number): string {
  return `task ${i}: ${'z'.repeat(i)}`;
}

/** Model calls the service makes for task i: 1, 2 or 3. */
function callsFor(task: string): number {
  return 1 + (Number(/^task (\d+)/.exec(task)![1]) % 3);
}

function openingOf(task: string, nth: number): string {
  return `${task} (invocation ${nth})`;
}

async function brain(call: ServiceCall): Promise<unknown> {
  const base = call.headers['x-gym-model-base-url'];
  if (typeof base !== 'string') throw new Error('no model base URL');
  const input = call.body.input as unknown;
  const task = String(Array.isArray(input) ? (input[0] as { content?: unknown }).content : input);
  const nth = invocations.filter((i) => i.task === task).length;
  const invocation: Invocation = { task, nth, base, statuses: [], done: gate() };
  invocations.push(invocation);
  const opening = openingOf(task, invocation.nth);
  const texts: string[] = [];
  for (let k = 0; k < callsFor(task); k++) {
    const res = await request(`${base}/chat/completions`, {
      method: 'POST',
      json: { model: 'x', messages: appendedHistory(opening, k) },
      timeoutMs: WAIT_MS,
    });
    invocation.statuses.push(res.status);
    if (res.status === 200) {
      texts.push((res.json() as { choices: { message: { content: string } }[] }).choices[0]!.message.content);
    }
    if (k === 0) await afterFirstCall(invocation);
  }
  invocation.done.open();
  return responseObject(texts.map((text) => assistantMessage(text)));
}

let redis: RedisProcess;
let upstream: VllmUpstream;
let headPort: number;
let modelUrl: string;
let envDir: string;
let worker: RunningGym;

before(async () => {
  redis = await startRedis();
  closers.push(() => redis.kill());
  upstream = await startVllmUpstream();
  closers.push(() => upstream.close());
  const service = await startScriptedService(brain);
  closers.push(() => service.close());
  headPort = await findFreePort();
  const agentKey = '++remote_agent.responses_api_agents.remote_agent';
  const config = [
    `+config_paths=[${path.join(installRoot(), 'counter_remote.yaml')},${path.join(installRoot(), 'responses_api_models/vllm_model/configs/vllm_model.yaml')}]`,
    `${agentKey}.agent_base_url=${service.url}`,
    `${agentKey}.model_server={type: responses_api_models, name: policy_model}`,
    `${agentKey}.token_id_capture=true`,
    `${agentKey}.concurrency=32`,
    '++policy_model.responses_api_models.vllm_model.return_token_id_information=true',
    `++policy_base_url=${upstream.url}`,
    '++policy_api_key=',
    '++policy_model_name=served-model',
    `++head_server.port=${headPort}`,
  ];
  envDir = tempDir('tsgym-capture-queue-');
  const dir = envDir;
  const env = await startGymEnv(config, { cwd: dir, logDir: path.join(dir, 'logs'), servers: 3, timeoutMs: WAIT_MS });
  closers.push(env.stop);
  modelUrl = (await serverInstances(headPort)).find((s) => s.process_name === 'policy_model')!.url;
  worker = await startWorker('w1');
});

async function startWorker(id: string): Promise<RunningGym> {
  const started = spawnGym(
    ['worker', '--queue', redis.url, '--concurrency', '32', `++head_server.port=${headPort}`, `+worker_id=${id}`],
    { cwd: envDir },
  );
  closers.push(() => stop(started));
  await eventually(() => /connected to/.test(started.stderr()), {
    what: () => `the worker: ${started.stderr()}`,
    timeoutMs: WAIT_MS,
  });
  return started;
}

async function stop(gym: RunningGym): Promise<void> {
  if (gym.child.exitCode !== null || gym.child.signalCode !== null) return;
  gym.child.kill('SIGINT');
  await gym.result;
}

/** `n` counter tasks the service answers with messages only (so each verifies with reward 1). */
function writeTasks(dir: string, n: number): void {
  const rows = Array.from({ length: n }, (_, i) => ({
    responses_create_params: { input: [{ role: 'user', content: taskText(i) }] },
    initial_count: 0,
    expected_count: 0,
  }));
  writeFileSync(path.join(dir, 'in.jsonl'), rows.map((row) => `${JSON.stringify(row)}\n`).join(''));
}

function collector(dir: string, extra: string[]): RunningGym {
  const run = spawnGym(
    ['eval', 'run', '--no-serve', '-a', 'remote_agent', '-i', 'in.jsonl', '-o', 'out/r.jsonl']
      .concat(`++head_server.port=${headPort}`, '--concurrency', '32')
      .concat(extra),
    { cwd: dir },
  );
  closers.push(() => {
    if (run.child.exitCode === null && run.child.signalCode === null) run.child.kill('SIGKILL');
  });
  return run;
}

async function finished(run: RunningGym): Promise<string> {
  const result = await run.result;
  assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
  return result.stdout + result.stderr;
}

type Row = Record<string, unknown>;

/**
 * The row holds exactly the calls of one invocation of its own task, made through its own rollout's URL: the
 * capture's id and count, and each call's token ids and log-probs rebuilt on the output as the upstream answered
 * them for that invocation's conversation. Returns which invocation of the task it was.
 */
function assertOwnCapture(row: Row): number {
  const task = taskText(row._ng_task_index as number);
  const where = `row ${String(row._ng_task_index)}:${String(row._ng_rollout_index)}`;
  const capture = row.ng_model_call_capture as ModelCallCapture;
  assert.equal(capture.rollout_id, `${String(row._ng_task_index)}-${String(row._ng_rollout_index)}`, where);
  const k = callsFor(task);
  assert.equal(capture.calls.length, k, `${where}: ${JSON.stringify(capture).slice(0, 2000)}`);
  assert.deepEqual(
    capture.calls.map((c) => [c.status_code, c.error_category]),
    Array.from({ length: k }, () => [200, null]),
    where,
  );
  assert.equal(capture.gaps, undefined, where);
  const report = row._ng_token_capture as Record<string, unknown>;
  assert.equal(row.mask_sample, undefined, `${where}: ${JSON.stringify(report)}`);
  assert.deepEqual([report.n_calls, report.chains, report.delivered_fraction], [k, 1, 1], where);
  const output = (row.response as { output: Record<string, unknown>[] }).output;
  const first = output.find((item) => item.type === 'message') as { content: { text: string }[] };
  const opening = first.content[0]!.text.replace(/^reply to: /, '');
  const nth = /^(.*) \(invocation (\d+)\)$/.exec(opening);
  assert.ok(nth && nth[1] === task, `${where} holds the calls of another task: ${opening}`);
  const carriers = output.filter((item) => item.generation_token_ids);
  assert.equal(carriers.length, k, where);
  carriers.forEach((item, c) => {
    const history = appendedHistory(opening, c);
    const generation = [...ids(answerText(history)), EOS];
    assert.deepEqual(item.prompt_token_ids, promptIds(history), `${where} call ${c}`);
    assert.deepEqual(item.generation_token_ids, generation, `${where} call ${c}`);
    assert.deepEqual(
      item.generation_log_probs,
      generation.map((id, i) => logProbOf(id, i)),
      `${where} call ${c}`,
    );
  });
  return Number(nth[2]);
}

function sortedKeys(rows: Row[]): string[] {
  return rows.map((row) => `${String(row._ng_task_index)}:${String(row._ng_rollout_index)}`).sort();
}

function allKeys(tasks: number, repeats = 1): string[] {
  return Array.from({ length: tasks }, (_, t) => Array.from({ length: repeats }, (_, r) => `${t}:${r}`))
    .flat()
    .sort();
}

/** The model server's `gym_model_rollouts_open`, read from its `GET /metrics`. */
async function rolloutsOpen(): Promise<number> {
  const text = (await request(`${modelUrl}/metrics`, { timeoutMs: WAIT_MS })).text();
  const match = /^gym_model_rollouts_open(?:\{[^}]*\})? (\d+)$/m.exec(text);
  assert.ok(match, `gym_model_rollouts_open on ${modelUrl}/metrics:\n${text.slice(0, 3000)}`);
  return Number(match[1]);
}

async function assertNothingOpen(): Promise<void> {
  await eventually(async () => (await rolloutsOpen()) === 0, {
    what: 'the model server to hold no open rollout (gym_model_rollouts_open 0)',
    timeoutMs: WAIT_MS,
    intervalMs: 100,
  });
}

test(
  'through the queue: 24 rollouts run by a gym worker, each row carries exactly its own calls and token ids',
  { timeout: TEST_MS },
  async () => {
    invocations.length = 0;
    afterFirstCall = () => Promise.resolve();
    const dir = tempDir('tsgym-capture-queue-');
    writeTasks(dir, 12);
    const before = upstream.requests.length;
    const said = await finished(collector(dir, ['--queue', redis.url, '--num-repeats', '2']));
    assert.match(said, /Distributing rollouts through Redis at redis:/);
    const rows = readJsonl(path.join(dir, 'out/r.jsonl'));
    assert.deepEqual(sortedKeys(rows), allKeys(12, 2), 'each rollout exactly once');
    const nths = new Map<number, number[]>();
    for (const row of rows) {
      const task = row._ng_task_index as number;
      nths.set(task, [...(nths.get(task) ?? []), assertOwnCapture(row)].sort());
    }
    for (const [task, seen] of nths) assert.deepEqual(seen, [0, 1], `task ${task}: each invocation on one row`);
    assert.equal(new Set(invocations.map((i) => i.base)).size, 24, 'each rollout had a model URL of its own');
    const made = invocations.reduce((sum, i) => sum + i.statuses.length, 0);
    const captured = rows.reduce((sum, row) => sum + (row.ng_model_call_capture as ModelCallCapture).calls.length, 0);
    assert.equal(captured, made, 'every call the service made is on a row');
    assert.equal(upstream.requests.length - before, made, 'and reached the upstream once');
    await assertNothingOpen();
  },
);

/** Tasks whose rollouts the crash tests hold after their first model call: each makes 2 or 3 calls. */
const HELD = [7, 8, 10, 11];
const TASKS = 12;

/** Start a run and wait until the unheld rollouts are on disk and the held ones are mid-service; the rows so far. */
async function heldMidRun(dir: string, extra: string[]): Promise<{ run: RunningGym; written: Row[] }> {
  writeTasks(dir, TASKS);
  const first = collector(dir, extra);
  const out = path.join(dir, 'out/r.jsonl');
  await eventually(
    () =>
      lineCount(out) === TASKS - HELD.length &&
      invocations.filter((i) => isHeld(i) && i.statuses.length === 1).length === HELD.length,
    {
      what: () => `the unheld rows on disk (${lineCount(out)}) and the held rollouts mid-service: ${first.stderr()}`,
      timeoutMs: WAIT_MS,
      intervalMs: 50,
    },
  );
  assert.equal(await rolloutsOpen(), HELD.length, 'the held rollouts are open on the model server');
  return { run: first, written: readJsonl(out) };
}

async function killed(gym: RunningGym, what: string): Promise<void> {
  gym.child.kill('SIGKILL');
  assert.equal((await gym.result).signal, 'SIGKILL', `${what} was killed mid-run`);
}

/** Start a run, wait until the held rollouts are mid-service, SIGKILL the collector; the rows written before. */
async function crashMidRun(dir: string, extra: string[]): Promise<Row[]> {
  const { run, written } = await heldMidRun(dir, extra);
  await killed(run, 'the collector');
  return written;
}

function isHeld(invocation: Invocation): boolean {
  return HELD.some((i) => taskText(i) === invocation.task);
}

/** The rows written before the crash are still there, byte for byte the same capture. */
function assertKept(written: Row[], rows: Row[]): void {
  for (const early of written) {
    const now = rows.find(
      (row) => row._ng_task_index === early._ng_task_index && row._ng_rollout_index === early._ng_rollout_index,
    );
    assert.deepEqual(now?.ng_model_call_capture, early.ng_model_call_capture);
  }
}

test(
  'through the queue, a SIGKILLed collector: the worker finishes the held rollouts and the resume records each once',
  { timeout: TEST_MS },
  async () => {
    invocations.length = 0;
    const release = gate();
    closers.push(() => release.open());
    afterFirstCall = (invocation) => (isHeld(invocation) ? release.opened : Promise.resolve());
    const dir = tempDir('tsgym-capture-queue-');
    const queue = ['--queue', redis.url];
    const written = await crashMidRun(dir, queue);
    const resumed = collector(dir, [...queue, '--resume']);
    release.open();
    await finished(resumed);
    const rows = readJsonl(path.join(dir, 'out/r.jsonl'));
    assert.deepEqual(sortedKeys(rows), allKeys(TASKS), 'each rollout exactly once');
    for (const row of rows) assert.equal(assertOwnCapture(row), 0, 'nothing ran twice');
    assertKept(written, rows);
    assert.equal(invocations.length, TASKS, 'the resume re-ran nothing');
    await assertNothingOpen();
  },
);

test(
  "direct, a SIGKILLed collector: the resumed attempt's capture holds none of the abandoned attempt's late calls",
  { timeout: TEST_MS },
  async () => {
    abandonThenRunAgain();
    const dir = tempDir('tsgym-capture-direct-');
    const written = await crashMidRun(dir, []);
    await finished(collector(dir, ['--resume']));
    await assertRunAgain(dir, written);
  },
);

test(
  "through the queue, a SIGKILLed worker: its jobs run again on another, whose rows hold none of the dead one's calls",
  { timeout: TEST_MS },
  async () => {
    abandonThenRunAgain();
    const dir = tempDir('tsgym-capture-worker-');
    // A short stall time moves the dead worker's jobs back soon; only one worker is alive at a time here.
    const { run, written } = await heldMidRun(dir, ['--queue', redis.url, '+queue_stall_secs=1']);
    await killed(worker, 'the worker');
    worker = await startWorker('w2');
    await finished(run);
    await assertRunAgain(dir, written);
  },
);

/**
 * The held rollouts are abandoned and run again with the same attempt index. The abandoned invocation (0) of a held
 * task makes its later model calls only once the new one (1) made its first, and the new one goes on only once those
 * late calls were answered: so they fall inside the new run, whose row must not hold them.
 */
function abandonThenRunAgain(): void {
  invocations.length = 0;
  const againStarted = new Map(HELD.map((i) => [taskText(i), gate()]));
  for (const held of againStarted.values()) closers.push(() => held.open());
  afterFirstCall = async (invocation) => {
    if (!isHeld(invocation)) return;
    if (invocation.nth === 0) return againStarted.get(invocation.task)!.opened;
    againStarted.get(invocation.task)!.open();
    await invocations.find((i) => i.task === invocation.task && i.nth === 0)!.done.opened;
  };
}

async function assertRunAgain(dir: string, written: Row[]): Promise<void> {
  const rows = readJsonl(path.join(dir, 'out/r.jsonl'));
  assert.deepEqual(sortedKeys(rows), allKeys(TASKS), 'each rollout exactly once');
  for (const row of rows) {
    const nth = assertOwnCapture(row);
    const held = HELD.includes(row._ng_task_index as number);
    assert.equal(nth, held ? 1 : 0, `row ${String(row._ng_task_index)}: the run that wrote it`);
  }
  assertKept(written, rows);
  const abandoned = invocations.filter((i) => isHeld(i) && i.nth === 0);
  assert.equal(abandoned.length, HELD.length);
  for (const invocation of abandoned) {
    // The late calls did happen (the test provoked what it tests) and were refused: their rollout was closed.
    assert.deepEqual(invocation.statuses.slice(1), Array(callsFor(invocation.task) - 1).fill(404), invocation.task);
  }
  await assertNothingOpen();
}
