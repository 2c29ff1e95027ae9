/**
 * Distributed collection: the `RolloutQueue` backend that hands rollouts to `gym worker` processes on any number
 * of machines through Redis, with BullMQ as the job queue (at-least-once delivery, locks renewed while a worker
 * runs a job, stalled jobs handed to another worker). The collector stays the only writer of the output files;
 * exactly-once in those files comes from three rules: a rollout attempt always has the same job id
 * (`t<task>r<rollout>a<attempt>`, so adding it again is a no-op), the collector only records results of jobs it is
 * waiting for (a late duplicate is dropped), and a result stays in Redis until the collector has appended it (so a
 * collector killed in between finds it again on resume). At most `concurrency` jobs of a run exist at a time, so
 * Redis memory is bounded by the window, and the run's keys are obliterated when it ends. Workers discover runs
 * through the `tsgym:runs` registry (see protocol.ts); an outage of Redis pauses the run and, past a deadline,
 * fails it with the resume command.
 */
import { Queue, QueueEvents, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { GymError } from '../errors.js';
import type { Row } from '../collect/materialize.js';
import type { InProcessQueueOptions, RolloutJob, RolloutQueue } from '../collect/queue.js';
import { failureRow, routeOf } from '../collect/routing.js';
import { connect } from './connection.js';
import {
  connectionOptions,
  jobIdOf,
  QUEUE_NAME,
  readWorkers,
  runPrefix,
  RUNS_KEY,
  type JobData,
  type JobResult,
  type QueueAddress,
  type RunAnnouncement,
  type WorkerPresence,
} from './protocol.js';

/** A job BullMQ gave up on (stalled too often, a worker crashed in the processor): a retryable failure row. */
export const WORKER_LOST = 'worker_lost';

export interface RedisBackendOptions {
  address: QueueAddress;
  /** Resolved once the materialized inputs exist (the first submit): the run's id. */
  runId: () => Promise<string>;
  /** The output file (announced to workers, for their logs). */
  output: string;
  /** false: a fresh run, so leftovers of an earlier run with the same id are discarded first. */
  resume: boolean;
  stallMs: number;
  runTimeoutMs: number;
  /** How long Redis may stay unreachable before the run fails. */
  outageMs: number;
  /** What to tell the user to run to resume (printed when the run fails for an outage). */
  resumeCommand: string;
  warn(line: string): void;
}

interface WorkerStats {
  results: number;
  firstAt: number;
}

export interface RedisBackend {
  create<J extends RolloutJob>(options: InProcessQueueOptions<J>): RolloutQueue<J>;
  /** For the progress line: workers connected and per-worker throughput. */
  describe(): string;
  /** Releases every connection (idempotent); called however the collection ended. */
  close(): Promise<void>;
}

function rate(stats: WorkerStats, now: number): string {
  const seconds = Math.max(0.1, (now - stats.firstAt) / 1000);
  return (stats.results / seconds).toFixed(1);
}

export function createRedisBackend(options: RedisBackendOptions): RedisBackend {
  const { address, warn } = options;
  let client: Redis | undefined;
  let queue: Queue | undefined;
  let events: QueueEvents | undefined;
  let announcement: RunAnnouncement | undefined;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  let workers: WorkerPresence[] = [];
  const perWorker = new Map<string, WorkerStats>();
  let fatal: { error: unknown } | undefined;
  let failNow: (error: unknown) => void = () => undefined;
  const fatalSignal = new Promise<never>((_, reject) => {
    failNow = (error) => {
      fatal ??= { error };
      reject(fatal.error);
    };
  });
  fatalSignal.catch(() => undefined);

  const closeAll = async (): Promise<void> => {
    if (closed) return;
    closed = true;
    if (timer) clearInterval(timer);
    // A Redis that is gone cannot take a polite goodbye: drop the connections instead of waiting on them.
    const polite = !fatal;
    const quit = async (thing: Queue | QueueEvents | undefined): Promise<void> => {
      if (!thing) return;
      if (polite) {
        await Promise.race([thing.close().catch(() => undefined), new Promise((resolve) => setTimeout(resolve, 2000).unref())]);
        return;
      }
      await Promise.race([thing.getBackend().close(true).catch(() => undefined), new Promise((resolve) => setTimeout(resolve, 500).unref())]);
    };
    await quit(events);
    await quit(queue);
    client?.disconnect();
  };

  const backend: RedisBackend = {
    describe() {
      const now = Date.now();
      // Connected: announced as serving this run, or seen delivering its results (a short run ends before the roster is read).
      const serving = new Set(perWorker.keys());
      for (const worker of workers) if (announcement && worker.runs.includes(announcement.runId)) serving.add(worker.id);
      const shown = [...perWorker.entries()].slice(0, 4).map(([id, stats]) => `${id} ${rate(stats, now)}/s`);
      const more = perWorker.size > 4 ? ` +${perWorker.size - 4} more` : '';
      return `workers ${serving.size}${shown.length > 0 ? ` (${shown.join(', ')}${more})` : ''}`;
    },
    close: closeAll,
    create<J extends RolloutJob>(queueOptions: InProcessQueueOptions<J>): RolloutQueue<J> {
      const { concurrency, onResult } = queueOptions;
      /** Jobs submitted and not yet recorded, by job id. */
      const outstanding = new Map<string, J>();
      /** Results found in Redis at attach time (completed while no collector listened), by job id. */
      const early = new Map<string, JobResult>();
      let waiters: Array<() => void> = [];
      let attached: Promise<void> | undefined;
      let downSince: number | undefined;
      let lastEventAt = Date.now();
      let attachedAt = Date.now();

      const wake = (): void => {
        const list = waiters;
        waiters = [];
        for (const waiter of list) waiter();
      };
      const until = async (condition: () => boolean): Promise<void> => {
        while (!condition()) {
          if (fatal) throw fatal.error;
          await Promise.race([new Promise<void>((resolve) => waiters.push(resolve)), fatalSignal]);
        }
        if (fatal) throw fatal.error;
      };
      const guarded = <T>(work: Promise<T>): Promise<T> => Promise.race([work, fatalSignal]);

      const removeJob = (jobId: string): void => {
        void queue?.remove(jobId).catch(() => undefined);
      };

      /** Records one result, once: results of jobs nobody waits for (duplicates, stale attempts) are dropped. */
      const deliver = (jobId: string, result: JobResult | undefined, failedReason?: string): void => {
        const job = outstanding.get(jobId);
        if (!job) {
          // Finished before the collector asked for it (a resumed run still reading its inputs), or a stale
          // attempt: kept aside, bounded by the window; the run's end obliterates whatever was never asked for.
          if (result?.row && early.size < 4 * concurrency) early.set(jobId, result);
          return;
        }
        let row: Row;
        if (result && typeof result === 'object' && result.row && typeof result.row === 'object') {
          row = result.row;
          const worker = typeof result.worker === 'string' ? result.worker : 'unknown';
          let stats = perWorker.get(worker);
          if (!stats) perWorker.set(worker, (stats = { results: 0, firstAt: attachedAt }));
          stats.results++;
          if (routeOf(row) === 'failures') {
            warn(`Failure on worker ${worker}: task ${job.task} rollout ${job.rollout} (${String(row._ng_failure_class)}): ${String(row.error ?? '').slice(0, 300)}`);
          }
        } else {
          const reason = failedReason ?? 'the worker returned no result';
          row = failureRow(JSON.parse(job.body) as Row, WORKER_LOST, `the job queue gave up on this rollout: ${reason}`, false);
          warn(`Failure on the queue: task ${job.task} rollout ${job.rollout} (${WORKER_LOST}): ${reason}`);
        }
        outstanding.delete(jobId);
        try {
          onResult(job, row);
        } catch (error) {
          failNow(error);
          return;
        } finally {
          wake();
        }
        removeJob(jobId);
      };

      const addJob = (jobId: string, job: J): Promise<unknown> => {
        const data: JobData = { agent: job.agent, body: job.body };
        return queue!.add('rollout', data, { jobId, attempts: 1, removeOnComplete: false, removeOnFail: false });
      };

      /** Results finished while nobody listened, and jobs Redis forgot (it restarted empty): both made good. */
      const reconcile = async (): Promise<void> => {
        if (!queue || !client || !announcement) return;
        announcement.refreshedAt = Date.now();
        await client.hset(RUNS_KEY, announcement.runId, JSON.stringify(announcement));
        for (let start = 0; ; start += 500) {
          const finished = (await queue.getJobs(['completed', 'failed'], start, start + 499, true)) as Job[];
          for (const job of finished) {
            if (!job?.id) continue;
            deliver(job.id, job.returnvalue as JobResult | undefined, job.failedReason || undefined);
          }
          if (finished.length < 500) break;
        }
        for (const [jobId, job] of outstanding) await addJob(jobId, job);
      };

      const attach = async (): Promise<void> => {
        const runId = await options.runId();
        const prefix = runPrefix(runId);
        client = connect(address, `tsgym-collector:${runId}`);
        client.on('close', () => {
          if (downSince !== undefined || closed) return;
          downSince = Date.now();
          warn(`Redis at ${address.url} is unreachable: the run is paused (rollouts in flight keep their place; waiting up to ${Math.round(options.outageMs / 1000)} s).`);
        });
        client.on('ready', () => {
          if (downSince === undefined) return;
          warn(`Redis at ${address.url} is back after ${((Date.now() - downSince) / 1000).toFixed(1)} s: the run continues.`);
          downSince = undefined;
          reconcile().catch(() => undefined);
        });
        const ready = new Promise<void>((resolve) => client!.once('ready', () => resolve()));
        const deadline = setTimeout(() => {
          failNow(outageError(options, 'could not be reached'));
        }, options.outageMs);
        try {
          await guarded(ready);
        } finally {
          clearTimeout(deadline);
        }
        const connection = connectionOptions(address, `tsgym-collector:${runId}`);
        queue = new Queue(QUEUE_NAME, { connection, prefix });
        queue.on('error', () => undefined);
        if (!options.resume) await guarded(queue.obliterate({ force: true }));
        announcement = {
          runId,
          prefix,
          output: options.output,
          stallMs: options.stallMs,
          runTimeoutMs: options.runTimeoutMs,
          refreshedAt: Date.now(),
        };
        // A short block keeps BullMQ's read watchdog short, so a collector whose Redis vanished can exit promptly.
        events = new QueueEvents(QUEUE_NAME, { connection, prefix, lastEventId: '$', blockingTimeout: 1000 });
        events.on('error', () => undefined);
        events.on('completed', ({ jobId, returnvalue }) => {
          lastEventAt = Date.now();
          deliver(jobId, returnvalue as unknown as JobResult);
        });
        events.on('failed', ({ jobId, failedReason }) => {
          lastEventAt = Date.now();
          // A processor that refuses a job (moves it back to delayed) is not a failure; only terminal ones land here.
          queue?.getJob(jobId).then((job) => {
            if (job && (job.finishedOn ?? 0) > 0) deliver(jobId, undefined, failedReason);
          }, () => undefined);
        });
        await guarded(events.waitUntilReady());
        attachedAt = Date.now();
        await guarded(reconcile());
        timer = setInterval(() => {
          if (downSince !== undefined && Date.now() - downSince > options.outageMs) {
            failNow(outageError(options, `has been unreachable for ${Math.round((Date.now() - downSince) / 1000)} s`));
            return;
          }
          if (downSince !== undefined || !client) return;
          readWorkers(client).then((list) => (workers = list), () => undefined);
          // Missed events (a reconnect of the events stream) are caught by a periodic look at finished jobs.
          const idle = outstanding.size > 0 && Date.now() - lastEventAt > 3000;
          if (idle) lastEventAt = Date.now();
          (idle ? reconcile() : client.hset(RUNS_KEY, announcement!.runId, JSON.stringify({ ...announcement!, refreshedAt: Date.now() }))).catch(
            () => undefined,
          );
        }, 1000);
        timer.unref();
      };

      return {
        async submit(job) {
          attached ??= attach();
          await guarded(attached);
          if (fatal) throw fatal.error;
          const jobId = jobIdOf(job.task, job.rollout, job.attempt ?? 0);
          outstanding.set(jobId, job);
          const found = early.get(jobId);
          if (found) {
            early.delete(jobId);
            deliver(jobId, found);
          } else {
            await guarded(addJob(jobId, job));
          }
          await until(() => outstanding.size < concurrency);
        },
        async drain() {
          if (attached) await guarded(attached);
          await until(() => outstanding.size === 0);
          if (!queue || !client || !announcement) return;
          // The run is over: nothing of it stays in Redis.
          await guarded(client.hdel(RUNS_KEY, announcement.runId));
          await guarded(queue.obliterate({ force: true }));
          await closeAll();
        },
      };
    },
  };
  return backend;
}

function outageError(options: RedisBackendOptions, what: string): GymError {
  // Class 'config' like an interrupted collection: the user acts (brings Redis back, resumes), nothing is lost.
  return new GymError(
    'GYM_QUEUE_UNREACHABLE',
    'config',
    `Redis at ${options.address.url} ${what} (waited ${Math.round(options.outageMs / 1000)} s, +queue_outage_secs); the finished rollouts are on disk and the rollouts in flight are kept in Redis. Once Redis is reachable, resume with: ${options.resumeCommand}`,
  );
}
