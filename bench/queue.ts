import path from 'node:path';
import { startRedis, type RedisProcess } from '../test/support/redis-server.js';
import { writeCounterRows } from '../resources_servers/example_session_state_mgmt/scripts/generate.js';
import { collect, GYM, REPO, startGym, type CollectResult, type RunningGym } from './gym.js';
import { delta, sampleProc, start, stop, waitForLine, type ProcSample } from './procs.js';
import { atLeast, atMost, round, type ScenarioReport } from './report.js';
import type { BenchContext } from './scenario-kit.js';
import type { ServiceOptions } from './service.js';

/**
 * Scenario 7: the same workload direct (`gym eval run --no-serve`) and through the queue (`--queue` with
 * `gym worker`s, each worker with its own `gym env start` environment), side by side in one run:
 *   - the queue's CPU cost per rollout — collector + worker(s) + redis-server + environment, minus the direct
 *     path's collector + environment — with an instant service;
 *   - the 2-worker ÷ 1-worker throughput ratio with a latency-bound service (each worker's concurrency is the
 *     bottleneck, the collector's window holds both).
 */

const RUN_TIMEOUT_MS = 180_000;
const CPU_ROLLOUTS = 3_000;
const CPU_ROUNDS = 2;
const LATENCY_ROLLOUTS = 1_200;
const WORKER_CONCURRENCY = 32;
const INSTANT: ServiceOptions = { steps: 4, itemBytes: 0, delayMs: 0 };
const LATENCY: ServiceOptions = { steps: 4, itemBytes: 0, delayMs: 100 };

interface RunningWorker {
  pid: number;
  stop(): Promise<void>;
}

async function startWorker(redis: RedisProcess, gym: RunningGym, id: string): Promise<RunningWorker> {
  const child = start(
    process.execPath,
    [
      GYM,
      'worker',
      '--queue',
      redis.url,
      '--concurrency',
      String(WORKER_CONCURRENCY),
      `++head_server.port=${gym.headPort}`,
      `+worker_id=${id}`,
    ],
    { cwd: REPO },
  );
  await waitForLine(child, /connected to redis:/, 30_000);
  return { pid: child.pid!, stop: () => stop(child, 10_000) };
}

let runs = 0;
async function collectAll(
  ctx: BenchContext,
  gym: RunningGym,
  input: string,
  rollouts: number,
  concurrency: number,
  extraArgs: string[] = [],
): Promise<CollectResult> {
  const run = await collect({
    headPort: gym.headPort,
    inputPath: input,
    outputDir: path.join(ctx.workDir, `queue-run-${++runs}`),
    concurrency,
    timeoutMs: RUN_TIMEOUT_MS,
    extraArgs,
  });
  if (run.completed !== rollouts || run.firstReward !== 1) {
    throw new Error(
      `expected ${rollouts} completed rollouts with reward 1, got ${run.completed} completed, ${run.failed} failed`,
    );
  }
  return run;
}

const sum = (values: Iterable<number>): number => [...values].reduce((a, b) => a + b, 0);

/** CPU of the given processes over `work`, plus the collector's own reading. */
async function measured(
  pids: Record<string, number>,
  work: () => Promise<CollectResult>,
): Promise<{ run: CollectResult; byProcess: Record<string, number> }> {
  const before: Record<string, ProcSample> = Object.fromEntries(
    Object.entries(pids).map(([key, pid]) => [key, sampleProc(pid)]),
  );
  const run = await work();
  const byProcess: Record<string, number> = { collector: run.collector.cpuMs };
  for (const [key, pid] of Object.entries(pids)) byProcess[key] = delta(before[key]!, sampleProc(pid)).cpuMs;
  return { run, byProcess };
}

function envPids(gym: RunningGym, tag: string): Record<string, number> {
  return {
    [`supervisor${tag}`]: gym.pids.supervisor,
    [`agent${tag}`]: gym.pids.agent,
    // A co-located environment is the agent's process (D23): counted once.
    ...(gym.colocated ? {} : { [`environment${tag}`]: gym.pids.environment }),
  };
}

export async function queueScaleOut(ctx: BenchContext): Promise<ScenarioReport> {
  const name = '7. queue scale-out';
  const gyms: RunningGym[] = [];
  const workers: RunningWorker[] = [];
  let redis: RedisProcess | undefined;
  try {
    await ctx.service.configure(INSTANT);
    for (const tag of ['a', 'b']) {
      gyms.push(
        await startGym({
          serviceUrl: ctx.service.url,
          concurrency: 4 * WORKER_CONCURRENCY,
          workDir: path.join(ctx.workDir, `env-queue-${tag}`),
        }),
      );
    }
    const [gymA, gymB] = gyms as [RunningGym, RunningGym];
    redis = await startRedis();
    const cpuInput = path.join(ctx.workDir, `queue-counter-${CPU_ROLLOUTS}.jsonl`);
    await writeCounterRows(cpuInput, CPU_ROLLOUTS, 11);
    const window = 2 * WORKER_CONCURRENCY;
    const workerA = await startWorker(redis, gymA, 'bench-a');
    workers.push(workerA);
    const queueArgs = ['--queue', redis.url];

    // Warm both paths, then alternate them so each pair runs under the same machine load.
    await collectAll(ctx, gymA, cpuInput, 500, window, ['--limit', '500']);
    await collectAll(ctx, gymA, cpuInput, 500, window, ['--limit', '500', ...queueArgs]);
    const direct: number[] = [];
    const queued: number[] = [];
    const split: string[] = [];
    const directSplit: string[] = [];
    for (let i = 0; i < CPU_ROUNDS; i++) {
      const plain = await measured(envPids(gymA, ''), () => collectAll(ctx, gymA, cpuInput, CPU_ROLLOUTS, window));
      const viaQueue = await measured({ ...envPids(gymA, ''), worker: workerA.pid, redis: redis.pid() }, () =>
        collectAll(ctx, gymA, cpuInput, CPU_ROLLOUTS, window, queueArgs),
      );
      direct.push(sum(Object.values(plain.byProcess)) / CPU_ROLLOUTS);
      queued.push(sum(Object.values(viaQueue.byProcess)) / CPU_ROLLOUTS);
      directSplit.push(
        Object.entries(plain.byProcess)
          .map(([key, ms]) => `${key} ${(ms / CPU_ROLLOUTS).toFixed(3)}`)
          .join(', '),
      );
      split.push(
        Object.entries(viaQueue.byProcess)
          .map(([key, ms]) => `${key} ${(ms / CPU_ROLLOUTS).toFixed(3)}`)
          .join(', '),
      );
      ctx.log(
        `  round ${i + 1}: CPU ms/rollout direct ${direct[i]!.toFixed(3)} (${directSplit[i]}), queue ${queued[i]!.toFixed(3)} (${split[i]})`,
      );
    }
    const directMs = sum(direct) / CPU_ROUNDS;
    const queueMs = sum(queued) / CPU_ROUNDS;
    const overheadMs = queueMs - directMs;

    // Latency-bound: one worker's concurrency is the bottleneck; a second worker (own environment) doubles it.
    await ctx.service.configure(LATENCY);
    const latencyInput = path.join(ctx.workDir, `queue-counter-${LATENCY_ROLLOUTS}.jsonl`);
    await writeCounterRows(latencyInput, LATENCY_ROLLOUTS, 13);
    // The window holds more than both workers take, so a worker never waits for the collector to refill it.
    const deepWindow = 4 * WORKER_CONCURRENCY;
    const one = await collectAll(ctx, gymA, latencyInput, LATENCY_ROLLOUTS, deepWindow, queueArgs);
    workers.push(await startWorker(redis, gymB, 'bench-b'));
    const two = await collectAll(ctx, gymA, latencyInput, LATENCY_ROLLOUTS, deepWindow, queueArgs);
    const rateOne = one.progressRate ?? LATENCY_ROLLOUTS / (one.wallMs / 1000);
    const rateTwo = two.progressRate ?? LATENCY_ROLLOUTS / (two.wallMs / 1000);
    const ideal = (1000 / (LATENCY.steps * LATENCY.delayMs)) * WORKER_CONCURRENCY;
    ctx.log(
      `  latency-bound: 1 worker ${rateOne.toFixed(1)} rollouts/s, 2 workers ${rateTwo.toFixed(1)} rollouts/s (ideal per worker ${ideal.toFixed(0)}/s)`,
    );
    return {
      figures: [
        atMost(name, 'queue CPU ms per rollout over direct (collector+worker+redis)', overheadMs, 0.3, {
          direct_cpu_ms_per_rollout: round(directMs),
          queue_cpu_ms_per_rollout: round(queueMs),
          rollouts: CPU_ROLLOUTS,
          rounds: CPU_ROUNDS,
        }),
        atLeast(name, '2-worker ÷ 1-worker throughput (latency-bound)', rateTwo / rateOne, 1.8, {
          one_worker_rollouts_per_s: round(rateOne, 1),
          two_workers_rollouts_per_s: round(rateTwo, 1),
          worker_concurrency: WORKER_CONCURRENCY,
          service_delay_ms_per_step: LATENCY.delayMs,
        }),
      ],
      notes: [
        `7: CPU per rollout, ${CPU_ROLLOUTS} instant rollouts: direct ${directMs.toFixed(3)} ms (${directSplit.join(' | ')}), through the queue ${queueMs.toFixed(3)} ms (${split.join(' | ')})`,
        `7: latency-bound (${LATENCY.steps} steps × ${LATENCY.delayMs} ms, ${WORKER_CONCURRENCY} per worker): 1 worker ${rateOne.toFixed(1)}/s, 2 workers ${rateTwo.toFixed(1)}/s, wall ${(one.wallMs / 1000).toFixed(1)} s vs ${(two.wallMs / 1000).toFixed(1)} s`,
      ],
    };
  } finally {
    for (const worker of workers) await worker.stop();
    await redis?.kill();
    for (const gym of gyms) await gym.stop();
  }
}
