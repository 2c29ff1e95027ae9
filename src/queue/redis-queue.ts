/**
 * Distributed collection: the `RolloutQueue` backend that hands rollouts to `gym worker` processes on any number
 * of machines through Redis, with BullMQ as the job queue (at-least-once delivery, locks renewed while a worker
 * runs a job, stalled jobs handed to another worker, delayed re-offers of refused jobs). Workers append each result
 * to the run's results list; the collector, the only writer of the output files, reads that list in batches and
 * trims what it has appended. Exactly-once in the files follows from three rules: a rollout attempt always has the
 * same job id (`t<task>r<rollout>a<attempt>`), the collector records only results of jobs it is waiting for (a late
 * duplicate is dropped), and a result leaves Redis only after the collector appended it (so a collector killed in
 * between finds it again on resume). At most `concurrency` jobs of a run exist at a time, so Redis memory is bounded
 * by the window; every key of the run is deleted when it ends. Workers discover runs through the `tsgym:runs`
 * registry (protocol.ts). An outage of Redis pauses the run; past a deadline it fails with the resume command; a
 * Redis that comes back empty (restarted without persistence) gets the rollouts in flight again.
 */
import { Queue, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { GymError } from '../errors.js';
import type { Row } from '../runfiles/row.js';
import type { InProcessQueueOptions, RolloutJob, RolloutQueue } from '../collect/executor.js';
import { failureRow, routeOf } from '../collect/routing.js';
import { connect } from './connection.js';
import {
  connectionOptions,
  jobIdOf,
  ownerKey,
  QUEUE_NAME,
  readWorkers,
  resultsKey,
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
/** How long a finished run waits for its workers to stop serving it before deleting its keys. */
const WORKERS_LEAVE_MS = 5000;
/** Results read from the list per round trip. */
const READ_BATCH = 512;
/** Longest a result list entry may be (a bound on data from outside; a row bigger than this is a failure). */
const MAX_RESULT_CHARS = 256 * 1024 * 1024;

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

function parseResult(text: string): JobResult | undefined {
  if (text.length > MAX_RESULT_CHARS) return undefined;
  try {
    const value = JSON.parse(text) as JobResult;
    if (
      typeof value?.jobId !== 'string' ||
      typeof value.worker !== 'string' ||
      typeof value.row !== 'object' ||
      value.row === null
    )
      return undefined;
    return value;
  } catch {
    return undefined;
  }
}

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms).unref());

export function createRedisBackend(options: RedisBackendOptions): RedisBackend {
  const { address, warn } = options;
  let client: Redis | undefined;
  /** Blocks waiting for results; its own connection so it never delays the commands on `client`. */
  let reader: Redis | undefined;
  let queue: Queue | undefined;
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
    reader?.disconnect();
    if (queue) {
      // A Redis that is gone cannot take a polite goodbye: drop the connection instead of waiting on it.
      const bye = fatal ? queue.getBackend().close(true) : queue.close();
      await Promise.race([bye.catch(() => undefined), pause(2000)]);
    }
    client?.disconnect();
  };

  const backend: RedisBackend = {
    describe() {
      const now = Date.now();
      // Connected: announced as serving this run, or seen delivering its results (a short run ends before the roster is read).
      const serving = new Set(perWorker.keys());
      for (const worker of workers)
        if (announcement && worker.runs.includes(announcement.runId)) serving.add(worker.id);
      const shown = [...perWorker.entries()].slice(0, 4).map(([id, stats]) => `${id} ${rate(stats, now)}/s`);
      const more = perWorker.size > 4 ? ` +${perWorker.size - 4} more` : '';
      return `workers ${serving.size}${shown.length > 0 ? ` (${shown.join(', ')}${more})` : ''}`;
    },
    close: closeAll,
    create<J extends RolloutJob>(queueOptions: InProcessQueueOptions<J>): RolloutQueue<J> {
      const { concurrency, onResult } = queueOptions;
      /** Jobs submitted and not yet recorded, by job id. */
      const outstanding = new Map<string, J>();
      /** Results that arrived before their job was submitted (a resumed run still reading its inputs), by job id. */
      const early = new Map<string, JobResult>();
      let waiters: Array<() => void> = [];
      let attached: Promise<void> | undefined;
      let downSince: number | undefined;
      let attachedAt = Date.now();
      let pendingAdds: Array<{ name: string; data: JobData; opts: { jobId: string } }> = [];

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

      /** Records one result, once: results of jobs nobody waits for (duplicates, stale attempts) are dropped. */
      const deliver = (result: JobResult): void => {
        const job = outstanding.get(result.jobId);
        if (!job) {
          // Bounded by the window: at most `concurrency` jobs of the run exist, each answered at most a few times.
          if (early.size < 4 * concurrency) early.set(result.jobId, result);
          return;
        }
        let stats = perWorker.get(result.worker);
        if (!stats) perWorker.set(result.worker, (stats = { results: 0, firstAt: attachedAt }));
        stats.results++;
        const row = result.row;
        if (routeOf(row) === 'failures') {
          warn(
            `Failure on worker ${result.worker}: task ${job.task} rollout ${job.rollout} (${String(row._ng_failure_class)}): ${String(row.error ?? '').slice(0, 300)}`,
          );
        }
        outstanding.delete(result.jobId);
        try {
          onResult(job, row);
        } catch (error) {
          failNow(error);
        } finally {
          wake();
        }
      };

      /** Jobs go to Redis in batches: one round trip for every job submitted in the same turn of the event loop. */
      const flushAdds = (): void => {
        const batch = pendingAdds;
        pendingAdds = [];
        if (batch.length === 0 || !queue) return;
        // Commands wait through an outage (ioredis offline queue); a Redis that lost them gets them on reconnect.
        queue
          .addBulk(
            batch.map((add) => ({
              ...add,
              opts: { ...add.opts, attempts: 1, removeOnComplete: true, removeOnFail: false },
            })),
          )
          .catch(() => undefined);
      };
      const addJob = (jobId: string, job: J): void => {
        if (pendingAdds.length === 0) setImmediate(flushAdds);
        pendingAdds.push({
          name: 'rollout',
          data: { agent: job.agent, body: job.body, ...(job.traceparent ? { traceparent: job.traceparent } : {}) },
          opts: { jobId },
        });
      };

      /** Reads the results list in batches, records them, then trims what was recorded. */
      const readResults = async (prefix: string, firstPass: () => void): Promise<void> => {
        const key = resultsKey(prefix);
        while (!closed && !fatal) {
          try {
            const texts = await reader!.lrange(key, 0, READ_BATCH - 1);
            if (texts.length === 0) {
              firstPass();
              // Block until a result arrives without taking it: moving the list's last entry onto its own tail.
              await reader!.blmove(key, key, 'RIGHT', 'RIGHT', 1);
              continue;
            }
            for (const text of texts) {
              const result = parseResult(text);
              if (result) deliver(result);
              else warn(`Ignoring an unreadable entry of ${key} (not a tsgym worker result).`);
              if (fatal) return;
            }
            firstPass();
            // Only after the results are in the files: a collector killed before this finds them again on resume.
            await reader!.ltrim(key, texts.length, -1);
          } catch {
            if (closed || fatal) return;
            await pause(100);
          }
        }
      };

      /** Jobs BullMQ gave up on produce no result: each becomes a retryable failure row. */
      const collectAbandoned = async (): Promise<void> => {
        const failed = (await queue!.getJobs(['failed'], 0, 99, true)) as Job<JobData>[];
        for (const job of failed) {
          if (!job?.id) continue;
          const waiting = outstanding.get(job.id);
          if (waiting) {
            const reason = job.failedReason || 'the job failed on the queue';
            warn(`Failure on the queue: task ${waiting.task} rollout ${waiting.rollout} (${WORKER_LOST}): ${reason}`);
            const row = failureRow(
              JSON.parse(waiting.body) as Row,
              WORKER_LOST,
              `the job queue gave up on this rollout: ${reason}`,
              false,
            );
            deliver({ jobId: job.id, worker: 'none', row });
          }
          await queue!.remove(job.id).catch(() => undefined);
        }
      };

      /** Once per agent: rollouts no connected worker can run wait in the queue; say so instead of stalling silently. */
      const warnedAgents = new Set<string>();
      const warnUnservedAgents = (): void => {
        if (workers.length === 0) return;
        const offered = new Set(workers.flatMap((worker) => worker.agents));
        for (const job of outstanding.values()) {
          if (offered.has(job.agent) || warnedAgents.has(job.agent)) continue;
          warnedAgents.add(job.agent);
          warn(
            `No connected worker offers agent '${job.agent}' (workers: ${workers.map((worker) => worker.id).join(', ')}); its rollouts wait in the queue until a worker whose environment has it connects.`,
          );
        }
      };

      const register = async (): Promise<void> => {
        announcement!.refreshedAt = Date.now();
        await client!.hset(RUNS_KEY, announcement!.runId, JSON.stringify(announcement));
      };

      /** After a reconnect and every few seconds: a Redis that lost the run's data gets its jobs in flight again. */
      const recover = async (): Promise<void> => {
        if (!announcement || !client) return;
        await register();
        if ((await client.exists(ownerKey(announcement.prefix))) === 1) return;
        await client.set(ownerKey(announcement.prefix), String(process.pid));
        warn(
          `Redis no longer holds this run's data (restarted without persistence, or emptied): sending the ${outstanding.size} rollouts in flight again.`,
        );
        for (const [jobId, job] of outstanding) addJob(jobId, job);
      };

      const attach = async (): Promise<void> => {
        const runId = await options.runId();
        const prefix = runPrefix(runId);
        client = connect(address, `tsgym-collector:${runId}`);
        client.on('close', () => {
          if (downSince !== undefined || closed) return;
          downSince = Date.now();
          warn(
            `Redis at ${address.url} is unreachable: the run is paused (rollouts in flight keep their place; waiting up to ${Math.round(options.outageMs / 1000)} s).`,
          );
        });
        client.on('ready', () => {
          if (downSince === undefined) return;
          warn(
            `Redis at ${address.url} is back after ${((Date.now() - downSince) / 1000).toFixed(1)} s: the run continues.`,
          );
          downSince = undefined;
          recover().catch(() => undefined);
        });
        const deadline = setTimeout(() => failNow(outageError(options, 'could not be reached')), options.outageMs);
        try {
          await guarded(new Promise<void>((resolve) => client!.once('ready', () => resolve())));
        } finally {
          clearTimeout(deadline);
        }
        queue = new Queue(QUEUE_NAME, {
          connection: connectionOptions(address, `tsgym-collector:${runId}`),
          prefix,
          streams: { events: { maxLen: 100 } },
        });
        queue.on('error', () => undefined);
        if (!options.resume) {
          await guarded(queue.obliterate({ force: true }));
          await guarded(client.del(resultsKey(prefix)));
        }
        await guarded(client.set(ownerKey(prefix), String(process.pid)));
        announcement = {
          runId,
          prefix,
          output: options.output,
          stallMs: options.stallMs,
          runTimeoutMs: options.runTimeoutMs,
          refreshedAt: Date.now(),
        };
        await guarded(register());
        attachedAt = Date.now();
        reader = client.duplicate();
        reader.on('error', () => undefined);
        // Results that finished while no collector listened are read before the first job is submitted, so a
        // resumed run records them instead of running those rollouts again.
        await guarded(new Promise<void>((resolve) => void readResults(prefix, resolve)));
        if (early.size > 0)
          warn(
            `${early.size} results finished in Redis while no collector was listening; they are recorded, not run again.`,
          );
        let ticks = 0;
        timer = setInterval(() => {
          if (downSince !== undefined && Date.now() - downSince > options.outageMs) {
            failNow(outageError(options, `has been unreachable for ${Math.round((Date.now() - downSince) / 1000)} s`));
            return;
          }
          if (downSince !== undefined || !client || closed) return;
          ticks++;
          readWorkers(client).then(
            (list) => {
              workers = list;
              warnUnservedAgents();
            },
            () => undefined,
          );
          if (ticks % 2 === 0) collectAbandoned().catch(() => undefined);
          // Also catches a Redis emptied without a disconnect (FLUSHALL, a failover to an empty replica).
          if (ticks % 5 === 0) recover().catch(() => undefined);
        }, 1000);
        timer.unref();
      };

      return {
        async submit(job) {
          attached ??= attach();
          await guarded(attached);
          if (fatal) throw fatal.error;
          const jobId = jobIdOf(job.task, job.rollout, job.attempt);
          outstanding.set(jobId, job);
          const found = early.get(jobId);
          if (found) {
            early.delete(jobId);
            deliver(found);
          } else {
            addJob(jobId, job);
          }
          await until(() => outstanding.size < concurrency);
        },
        async drain() {
          // Even with nothing left to run, attaching clears what an interrupted earlier run left in Redis.
          attached ??= attach();
          await guarded(attached);
          await until(() => outstanding.size === 0);
          if (!queue || !client || !announcement) return;
          // The run is over: nothing of it stays in Redis. Workers stop serving it first (they would write some of
          // its keys again); one that does not answer within the bound is not waited for.
          await guarded(client.hdel(RUNS_KEY, announcement.runId));
          const runId = announcement.runId;
          for (const deadline = Date.now() + WORKERS_LEAVE_MS; Date.now() < deadline; await pause(100)) {
            const serving = await guarded(readWorkers(client));
            if (!serving.some((worker) => worker.runs.includes(runId))) break;
          }
          await guarded(queue.obliterate({ force: true }));
          await guarded(client.del(resultsKey(announcement.prefix), ownerKey(announcement.prefix)));
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
