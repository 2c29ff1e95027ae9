/**
 * Distributed collection: the `RolloutQueue` backend that hands rollouts to `gym worker` processes on any number
 * of machines through Redis, with a stream per run as the job queue (jobs-stream.ts: at-least-once delivery,
 * heartbeats while a worker runs a job, stalled jobs moved back for another worker, delayed re-offers of refused
 * jobs). The collector adds the jobs of one event-loop turn in one pipelined write. Workers answer jobs by adding
 * their results to the run's results stream in the same step that removes the jobs from the jobs stream; the
 * collector, the only writer of the output files, reads that stream in batches and trims what it has appended.
 * Exactly-once in the files follows from three rules: a rollout attempt always has the same job id
 * (`t<task>r<rollout>a<attempt>`), the collector records only results of jobs it is waiting for (a late
 * duplicate is dropped), and a result leaves Redis only after the collector appended it (so a collector killed in
 * between finds it again on resume). At most `concurrency` jobs of a run exist at a time, so Redis memory is bounded
 * by the window; every key of the run is deleted when it ends. Workers discover runs through the `tsgym:runs`
 * registry (protocol.ts). An outage of Redis pauses the run; past a deadline it fails with the resume command; a
 * Redis that comes back empty (restarted without persistence) gets the rollouts in flight again.
 */
import type { Redis } from 'ioredis';
import { MAX_ENVELOPED_JSON_DEPTH, parseBoundedJson } from '../bounded-json/index.js';
import { GymError } from '../errors.js';
import type { Row } from '../runfiles/row.js';
import type { InProcessQueueOptions, RolloutJob, RolloutQueue } from '../collect/executor.js';
import { failureRow, routeOf } from '../collect/routing.js';
import { exportRequested } from '../tracing/spans.js';
import { connect } from './connection.js';
import { ensureGroup, fieldOf, jobFields, jobsKey, nextEntryId, parseJobs, streamEntries } from './jobs-stream.js';
import {
  jobIdOf,
  ownerKey,
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

/** A job the queue gave up on (its workers kept dying, or it could not be run): a retryable failure row. */
export const WORKER_LOST = 'worker_lost';
/** How long a finished run waits for its workers to stop serving it before deleting its keys. */
const WORKERS_LEAVE_MS = 5000;
/** Results stream entries read per round trip. */
const READ_BATCH = 512;
/** Longest a results stream entry may be (a bound on data from outside; one bigger than this is ignored). */
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

/**
 * The results of one entry of the results stream (a JSON array of them), without those that are not well-formed.
 * Anyone with the Redis address can add entries, so the text is bounded like any received JSON: in length, and in
 * nesting (a row as deep as an agent may answer, inside the entry's array and its result object), since a row
 * taken here is written out, and encoding one nested deeper than the stack would stop the collector.
 */
function parseResults(text: string): { results: JobResult[]; unreadable: number } {
  if (text.length > MAX_RESULT_CHARS) return { results: [], unreadable: 1 };
  let value: unknown;
  try {
    value = parseBoundedJson(text, MAX_ENVELOPED_JSON_DEPTH + 2);
  } catch {
    return { results: [], unreadable: 1 };
  }
  if (!Array.isArray(value)) return { results: [], unreadable: 1 };
  const results: JobResult[] = [];
  for (const item of value as JobResult[]) {
    const wellFormed =
      typeof item?.jobId === 'string' &&
      typeof item.worker === 'string' &&
      (typeof item.lost === 'string' || (typeof item.row === 'object' && item.row !== null));
    if (wellFormed) results.push(item);
  }
  return { results, unreadable: value.length - results.length };
}

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms).unref());

export function createRedisBackend(options: RedisBackendOptions): RedisBackend {
  const { address, warn } = options;
  let client: Redis | undefined;
  /** Blocks waiting for results; its own connection so it never delays the commands on `client`. */
  let reader: Redis | undefined;
  let announcement: RunAnnouncement | undefined;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  /** The run is over: its announcement is withdrawn and must stay so. */
  let ending = false;
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

  const closeAll = (): Promise<void> => {
    if (closed) return Promise.resolve();
    closed = true;
    if (timer) clearInterval(timer);
    // Nothing waits on a goodbye: what matters is already in Redis or in the files.
    reader?.disconnect();
    client?.disconnect();
    return Promise.resolve();
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
      let pendingAdds: Array<{ jobId: string; data: JobData }> = [];
      const stampEnqueue = exportRequested();
      /** Job ids a resumed run found still in the stream (waiting or in flight): submitted again, not added again. */
      const queued = new Set<string>();

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
        let row: Row;
        if (result.lost === undefined) {
          row = result.row;
          let stats = perWorker.get(result.worker);
          if (!stats) perWorker.set(result.worker, (stats = { results: 0, firstAt: attachedAt }));
          stats.results++;
        } else {
          row = lostRow(job, result.lost);
          warn(`Failure on the queue: task ${job.task} rollout ${job.rollout} (${WORKER_LOST}): ${result.lost}`);
        }
        if (result.lost === undefined && routeOf(row) === 'failures') {
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
        if (batch.length === 0 || !client || !announcement) return;
        // Commands wait through an outage (ioredis offline queue); a Redis that lost them gets them on reconnect.
        const key = jobsKey(announcement.prefix);
        const pipeline = client.pipeline();
        for (const add of batch) pipeline.xadd(key, '*', ...jobFields(add.jobId, add.data));
        pipeline.exec().catch(() => undefined);
      };
      const addJob = (jobId: string, job: J): void => {
        if (pendingAdds.length === 0) setImmediate(flushAdds);
        const data: JobData = { agent: job.agent, body: job.body };
        if (job.traceparent) data.traceparent = job.traceparent;
        // The start of the worker's queue-wait span, only when the collector's rollout span (its parent) is recorded.
        if (stampEnqueue && job.traceparent) data.enqueuedAt = String(Date.now());
        pendingAdds.push({ jobId, data });
      };

      /**
       * Reads the results stream in batches (one round trip each: a read returns every result there, up to
       * READ_BATCH, or blocks until one arrives), records them, then trims what was recorded.
       */
      const readResults = async (prefix: string, firstPass: () => void): Promise<void> => {
        const key = resultsKey(prefix);
        let last = '0-0';
        let block = false;
        while (!closed && !fatal) {
          try {
            const wait = block ? ['BLOCK', 1000] : [];
            const entries = streamEntries(
              await reader!.call('XREAD', 'COUNT', READ_BATCH, ...wait, 'STREAMS', key, last),
            );
            block = true;
            for (const entry of entries) {
              const { results, unreadable } = parseResults(fieldOf(entry, 'r') ?? '');
              for (const result of results) deliver(result);
              if (unreadable > 0) warn(`Ignoring an unreadable entry of ${key} (not a tsgym worker result).`);
              if (fatal) return;
            }
            firstPass();
            if (entries.length === 0) continue;
            last = entries.at(-1)!.id;
            // Only after the results are in the files (a collector killed before this finds them again on resume);
            // not waited for: it shares a write with the next read.
            reader!.xtrim(key, 'MINID', nextEntryId(last)).catch(() => undefined);
          } catch {
            if (closed || fatal) return;
            await pause(100);
          }
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
        if (!announcement || !client || ending) return;
        await register();
        if ((await client.exists(ownerKey(announcement.prefix))) === 1) return;
        await client.set(ownerKey(announcement.prefix), String(process.pid));
        await ensureGroup(client, jobsKey(announcement.prefix));
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
        if (!options.resume) await guarded(client.del(jobsKey(prefix), resultsKey(prefix)));
        await guarded(ensureGroup(client, jobsKey(prefix)));
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
        if (options.resume) await guarded(scanQueued(client, jobsKey(prefix), queued));
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
          } else if (!queued.delete(jobId)) {
            addJob(jobId, job);
          }
          await until(() => outstanding.size < concurrency);
        },
        async drain() {
          // Even with nothing left to run, attaching clears what an interrupted earlier run left in Redis.
          attached ??= attach();
          await guarded(attached);
          await until(() => outstanding.size === 0);
          if (!client || !announcement) return;
          // The run is over: nothing of it stays in Redis. Workers stop serving it first (they would write some of
          // its keys again); one that does not answer within the bound is not waited for.
          // No refresh may announce the run again once it is withdrawn (workers would serve it again).
          ending = true;
          await guarded(client.hdel(RUNS_KEY, announcement.runId));
          const runId = announcement.runId;
          for (const deadline = Date.now() + WORKERS_LEAVE_MS; Date.now() < deadline; await pause(100)) {
            const serving = await guarded(readWorkers(client));
            if (!serving.some((worker) => worker.runs.includes(runId))) break;
          }
          const { prefix } = announcement;
          await guarded(client.del(jobsKey(prefix), resultsKey(prefix), ownerKey(prefix)));
          await closeAll();
        },
      };
    },
  };
  return backend;
}

/** The ids of the jobs in the stream (a resumed run's leftovers), read in pages; bounded by `limit` entries. */
async function scanQueued(client: Redis, key: string, into: Set<string>, limit = 100_000): Promise<void> {
  for (let from = '-'; into.size < limit;) {
    const page = parseJobs(await client.xrange(key, from, '+', 'COUNT', 1000));
    for (const job of page) into.add(job.jobId);
    if (page.length < 1000) return;
    from = `(${page.at(-1)!.entryId}`;
  }
}

/** The failure row of a job the queue gave up on (its workers kept dying, or it could not be run). */
function lostRow(job: RolloutJob, reason: string): Row {
  return failureRow(
    JSON.parse(job.body) as Row,
    WORKER_LOST,
    `the job queue gave up on this rollout: ${reason}`,
    false,
  );
}

function outageError(options: RedisBackendOptions, what: string): GymError {
  // Class 'config' like an interrupted collection: the user acts (brings Redis back, resumes), nothing is lost.
  return new GymError(
    'GYM_QUEUE_UNREACHABLE',
    'config',
    `Redis at ${options.address.url} ${what} (waited ${Math.round(options.outageMs / 1000)} s, +queue_outage_secs); the finished rollouts are on disk and the rollouts in flight are kept in Redis. Once Redis is reachable, resume with: ${options.resumeCommand}`,
  );
}
