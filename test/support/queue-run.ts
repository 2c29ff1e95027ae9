/**
 * A queued run as the queue tests start it: `gym worker` and `gym eval run --no-serve --queue` as child processes
 * against one Redis and one head server, in one directory whose `in.jsonl` names the agent. Each process is killed
 * by the caller's closers if the test ends before it does.
 */
import path from 'node:path';
import type { Redis } from 'ioredis';
import { spawnGym, writeJsonl, type RunningGym } from './cli.js';
import { eventually } from './wait.js';

type Closers = Array<() => unknown>;

/** `n` rows for `agent`, each with its index `i` (so a test can check every row arrived exactly once). */
export function writeAgentRows(dir: string, n: number, agent = 'alpha'): void {
  writeJsonl(
    path.join(dir, 'in.jsonl'),
    Array.from({ length: n }, (_, i) => ({
      responses_create_params: { input: `row ${i}` },
      agent_ref: { name: agent },
      i,
    })),
  );
}

export interface QueuedRunOptions {
  queueUrl: string;
  headPort: number;
  dir: string;
  closers: Closers;
  /** Extra arguments of `gym eval run`. */
  collectorArgs?: string[];
  /** Extra environment of the worker (e.g. its OTLP endpoint). */
  workerEnv?: Record<string, string | undefined>;
}

function killedAtEnd(running: RunningGym, closers: Closers): RunningGym {
  closers.push(() => {
    if (running.child.exitCode === null && running.child.signalCode === null) running.child.kill('SIGKILL');
  });
  return running;
}

/** A worker (`w1`, concurrency 16) and a collector writing `out/r.jsonl`, started together. */
export function startQueuedRun(options: QueuedRunOptions): { worker: RunningGym; run: RunningGym } {
  const { queueUrl, headPort, dir, closers } = options;
  const worker = spawnGym(
    ['worker', '--queue', queueUrl, '--concurrency', '16', `++head_server.port=${headPort}`, '+worker_id=w1'],
    { cwd: dir, env: options.workerEnv },
  );
  const run = spawnGym(
    ['eval', 'run', '--no-serve', '-i', 'in.jsonl', '-o', 'out/r.jsonl', '--queue', queueUrl]
      .concat(`++head_server.port=${headPort}`)
      .concat(options.collectorArgs ?? []),
    { cwd: dir },
  );
  return { worker: killedAtEnd(worker, closers), run: killedAtEnd(run, closers) };
}

/** The Redis key of the run's `jobs` or `results` stream, once the run has made it (found with `KEYS`). */
export async function runStreamKey(admin: Redis, stream: 'jobs' | 'results'): Promise<string> {
  let key: string | undefined;
  await eventually(
    async () => {
      key = (await admin.keys(`tsgym:run:*:rollouts:${stream}`))[0];
      return key !== undefined;
    },
    { what: `the run's ${stream} stream`, timeoutMs: 60_000, intervalMs: 50 },
  );
  return key!;
}
