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
import type { InProcessQueueOptions, RolloutJob, RolloutQueue } from '../collect/executor.js';
import { routeOf } from '../collect/routing.js';
import { NG } from '../runfiles/ng-keys.js';
import { failureRow, type Row } from '../runfiles/row.js';
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
  warn: (line: string) => void;
}

interface WorkerStats {
  results: number;
  firstAt: number;
}

export interface RedisBackend {
  create: <J extends RolloutJob>(options: InProcessQueueOptions<J>) => RolloutQueue<J>;
  /** For the progress line: workers connected and per-worker throughput. */
  describe: () => string;
  /** Releases every connection (idempotent); called however the collection ended. */
  close: () => Promise<void>;
}

/** A failure row's error for a warning line: its text, or the JSON of whatever else an agent wrote there. */
function errorTextOf(row: Row): string {
  const { error } = row;
  if (error === undefined || error === null) return '';
  return typeof error === 'string' ? error : JSON.stringify(error);
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
  const link = new CollectorLink(options);
  // Plain functions, not methods: the collector passes them on detached from this object.
  return {
    create: <J extends RolloutJob>(queueOptions: InProcessQueueOptions<J>): RolloutQueue<J> =>
      new RedisRolloutQueue(link, queueOptions),
    describe: () => link.describe(),
    close: () => link.close(),
  };
}

/**
 * The collector's side of Redis shared by the queue, the progress line and the final close: the two connections,
 * the run's announcement, the workers last read from the roster, their throughput, and the error that ends the run.
 */
class CollectorLink {
  client: Redis | undefined;
  /** Blocks waiting for results; its own connection so it never delays the commands on `client`. */
  reader: Redis | undefined;
  announcement: RunAnnouncement | undefined;
  /** The once-a-second check of Redis's health and of the workers' roster. */
  timer: NodeJS.Timeout | undefined;
  closed = false;
  /** The run is over: its announcement is withdrawn and must stay so. */
  ending = false;
  workers: WorkerPresence[] = [];
  readonly perWorker = new Map<string, WorkerStats>();
  /** The first error that stops the run (kept: every later wait throws it). */
  fatal: { error: unknown } | undefined;
  /** Rejects with the fatal error: raced against every wait, so none outlives the run's failure. */
  readonly fatalSignal: Promise<never>;
  private rejectFatal: (error: unknown) => void = () => undefined;

  constructor(readonly options: RedisBackendOptions) {
    this.fatalSignal = new Promise<never>((_, reject) => {
      this.rejectFatal = reject;
    });
    this.fatalSignal.catch(() => undefined);
  }

  failNow(error: unknown): void {
    this.fatal ??= { error };
    this.rejectFatal(this.fatal.error);
  }

  describe(): string {
    const { announcement, perWorker } = this;
    const now = Date.now();
    // Connected: announced as serving this run, or seen delivering its results (a short run ends before the roster is read).
    const serving = new Set(perWorker.keys());
    for (const worker of this.workers)
      if (announcement && worker.runs.includes(announcement.runId)) serving.add(worker.id);
    const shown = [...perWorker.entries()].slice(0, 4).map(([id, stats]) => `${id} ${rate(stats, now)}/s`);
    const more = perWorker.size > 4 ? ` +${perWorker.size - 4} more` : '';
    return `workers ${serving.size}${shown.length > 0 ? ` (${shown.join(', ')}${more})` : ''}`;
  }

  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    // Nothing waits on a goodbye: what matters is already in Redis or in the files.
    this.reader?.disconnect();
    this.client?.disconnect();
    return Promise.resolve();
  }
}

/** One run's rollouts through Redis: jobs added in batches, results read back and recorded once, the run withdrawn at the end. */
class RedisRolloutQueue<J extends RolloutJob> implements RolloutQueue<J> {
  private readonly concurrency: number;
  private readonly onResult: InProcessQueueOptions<J>['onResult'];
  /** Jobs submitted and not yet recorded, by job id. */
  private readonly outstanding = new Map<string, J>();
  /** Results that arrived before their job was submitted (a resumed run still reading its inputs), by job id. */
  private readonly early = new Map<string, JobResult>();
  /** Job ids a resumed run found still in the stream (waiting or in flight): submitted again, not added again. */
  private readonly queued = new Set<string>();
  /** Agents already warned about: no connected worker offers them. */
  private readonly warnedAgents = new Set<string>();
  private readonly stampEnqueue = exportRequested();
  private waiters: Array<() => void> = [];
  private attached: Promise<void> | undefined;
  /** When Redis became unreachable; undefined while it is reachable. */
  private downSince: number | undefined;
  /** The start of every worker's throughput (reset once the run is announced). */
  private attachedAt = Date.now();
  private pendingAdds: Array<{ jobId: string; data: JobData }> = [];
  /** Seconds of the health check, which re-checks that Redis still holds the run every fifth one. */
  private ticks = 0;

  constructor(
    private readonly link: CollectorLink,
    options: InProcessQueueOptions<J>,
  ) {
    this.concurrency = options.concurrency;
    this.onResult = options.onResult;
  }

  async submit(job: J): Promise<void> {
    this.attached ??= this.attach();
    await this.guarded(this.attached);
    if (this.link.fatal) throw this.link.fatal.error;
    const jobId = jobIdOf(job.task, job.rollout, job.attempt);
    this.outstanding.set(jobId, job);
    const found = this.early.get(jobId);
    if (found) {
      this.early.delete(jobId);
      this.deliver(found);
    } else if (!this.queued.delete(jobId)) {
      this.addJob(jobId, job);
    }
    await this.until(() => this.outstanding.size < this.concurrency);
  }

  async drain(): Promise<void> {
    // Even with nothing left to run, attaching clears what an interrupted earlier run left in Redis.
    this.attached ??= this.attach();
    await this.guarded(this.attached);
    await this.until(() => this.outstanding.size === 0);
    const { client, announcement } = this.link;
    if (!client || !announcement) return;
    await this.withdrawRun(client, announcement);
  }

  /**
   * The run is over: nothing of it stays in Redis. Workers stop serving it first (they would write some of its keys
   * again); one that does not answer within the bound is not waited for.
   */
  private async withdrawRun(client: Redis, announcement: RunAnnouncement): Promise<void> {
    // No refresh may announce the run again once it is withdrawn (workers would serve it again).
    this.link.ending = true;
    await this.guarded(client.hdel(RUNS_KEY, announcement.runId));
    const runId = announcement.runId;
    for (const deadline = Date.now() + WORKERS_LEAVE_MS; Date.now() < deadline; await pause(100)) {
      const serving = await this.guarded(readWorkers(client));
      if (!serving.some((worker) => worker.runs.includes(runId))) break;
    }
    const { prefix } = announcement;
    await this.guarded(client.del(jobsKey(prefix), resultsKey(prefix), ownerKey(prefix)));
    await this.link.close();
  }

  private wake(): void {
    const list = this.waiters;
    this.waiters = [];
    for (const waiter of list) waiter();
  }

  private async until(condition: () => boolean): Promise<void> {
    const { link } = this;
    while (!condition()) {
      if (link.fatal) throw link.fatal.error;
      await Promise.race([new Promise<void>((resolve) => this.waiters.push(resolve)), link.fatalSignal]);
    }
    if (link.fatal) throw link.fatal.error;
  }

  private guarded<T>(work: Promise<T>): Promise<T> {
    return Promise.race([work, this.link.fatalSignal]);
  }

  /** Records one result, once: results of jobs nobody waits for (duplicates, stale attempts) are dropped. */
  private deliver(result: JobResult): void {
    const job = this.outstanding.get(result.jobId);
    if (!job) {
      // Bounded by the window: at most `concurrency` jobs of the run exist, each answered at most a few times.
      if (this.early.size < 4 * this.concurrency) this.early.set(result.jobId, result);
      return;
    }
    const row = this.rowOf(result, job);
    this.outstanding.delete(result.jobId);
    try {
      this.onResult(job, row);
    } catch (error) {
      this.link.failNow(error);
    } finally {
      this.wake();
    }
  }

  /** The row a result records, counted for its worker's throughput and warned about when it is a failure. */
  private rowOf(result: JobResult, job: J): Row {
    const { warn } = this.link.options;
    let row: Row;
    if (result.lost === undefined) {
      row = result.row;
      const { perWorker } = this.link;
      let stats = perWorker.get(result.worker);
      if (!stats) perWorker.set(result.worker, (stats = { results: 0, firstAt: this.attachedAt }));
      stats.results++;
    } else {
      row = lostRow(job, result.lost);
      warn(`Failure on the queue: task ${job.task} rollout ${job.rollout} (${WORKER_LOST}): ${result.lost}`);
    }
    if (result.lost === undefined && routeOf(row) === 'failures') {
      warn(
        `Failure on worker ${result.worker}: task ${job.task} rollout ${job.rollout} (${String(row[NG.failureClass])}): ${errorTextOf(row).slice(0, 300)}`,
      );
    }
    return row;
  }

  /** Jobs go to Redis in batches: one round trip for every job submitted in the same turn of the event loop. */
  private flushAdds(): void {
    const batch = this.pendingAdds;
    this.pendingAdds = [];
    const { client, announcement } = this.link;
    if (batch.length === 0 || !client || !announcement) return;
    // Commands wait through an outage (ioredis offline queue); a Redis that lost them gets them on reconnect.
    const key = jobsKey(announcement.prefix);
    const pipeline = client.pipeline();
    for (const add of batch) pipeline.xadd(key, '*', ...jobFields(add.jobId, add.data));
    pipeline.exec().catch(() => undefined);
  }

  private addJob(jobId: string, job: J): void {
    if (this.pendingAdds.length === 0) setImmediate(() => this.flushAdds());
    const data: JobData = { agent: job.agent, body: job.body };
    if (job.traceparent) data.traceparent = job.traceparent;
    // The start of the worker's queue-wait span, only when the collector's rollout span (its parent) is recorded.
    if (this.stampEnqueue && job.traceparent) data.enqueuedAt = String(Date.now());
    this.pendingAdds.push({ jobId, data });
  }

  /**
   * Reads the results stream in batches (one round trip each: a read returns every result there, up to
   * READ_BATCH, or blocks until one arrives), records them, then trims what was recorded.
   */
  private async readResults(prefix: string, firstPass: () => void): Promise<void> {
    const { link } = this;
    const { warn } = link.options;
    const key = resultsKey(prefix);
    let last = '0-0';
    let block = false;
    while (!link.closed && !link.fatal) {
      try {
        const wait = block ? ['BLOCK', 1000] : [];
        const entries = streamEntries(
          await link.reader!.call('XREAD', 'COUNT', READ_BATCH, ...wait, 'STREAMS', key, last),
        );
        block = true;
        for (const entry of entries) {
          const { results, unreadable } = parseResults(fieldOf(entry, 'r') ?? '');
          for (const result of results) this.deliver(result);
          if (unreadable > 0) warn(`Ignoring an unreadable entry of ${key} (not a tsgym worker result).`);
          if (link.fatal) return;
        }
        firstPass();
        if (entries.length === 0) continue;
        last = entries.at(-1)!.id;
        // Only after the results are in the files (a collector killed before this finds them again on resume);
        // not waited for: it shares a write with the next read.
        link.reader!.xtrim(key, 'MINID', nextEntryId(last)).catch(() => undefined);
      } catch {
        if (link.closed || link.fatal) return;
        await pause(100);
      }
    }
  }

  /** Once per agent: rollouts no connected worker can run wait in the queue; say so instead of stalling silently. */
  private warnUnservedAgents(): void {
    const { workers } = this.link;
    if (workers.length === 0) return;
    const offered = new Set(workers.flatMap((worker) => worker.agents));
    for (const job of this.outstanding.values()) {
      if (offered.has(job.agent) || this.warnedAgents.has(job.agent)) continue;
      this.warnedAgents.add(job.agent);
      this.link.options.warn(
        `No connected worker offers agent '${job.agent}' (workers: ${workers.map((worker) => worker.id).join(', ')}); its rollouts wait in the queue until a worker whose environment has it connects.`,
      );
    }
  }

  private async register(): Promise<void> {
    const { client, announcement } = this.link;
    announcement!.refreshedAt = Date.now();
    await client!.hset(RUNS_KEY, announcement!.runId, JSON.stringify(announcement));
  }

  /** After a reconnect and every few seconds: a Redis that lost the run's data gets its jobs in flight again. */
  private async recover(): Promise<void> {
    const { client, announcement, ending } = this.link;
    if (!announcement || !client || ending) return;
    await this.register();
    if ((await client.exists(ownerKey(announcement.prefix))) === 1) return;
    await client.set(ownerKey(announcement.prefix), String(process.pid));
    await ensureGroup(client, jobsKey(announcement.prefix));
    this.link.options.warn(
      `Redis no longer holds this run's data (restarted without persistence, or emptied): sending the ${this.outstanding.size} rollouts in flight again.`,
    );
    for (const [jobId, job] of this.outstanding) this.addJob(jobId, job);
  }

  /** Connects, makes the run's keys, announces the run to workers, records results left from before, starts the health check. */
  private async attach(): Promise<void> {
    const { link } = this;
    const { options } = link;
    const runId = await options.runId();
    const prefix = runPrefix(runId);
    const client = this.connectWatchingOutages(runId);
    await this.firstReady(client);
    if (!options.resume) await this.guarded(client.del(jobsKey(prefix), resultsKey(prefix)));
    await this.guarded(ensureGroup(client, jobsKey(prefix)));
    await this.guarded(client.set(ownerKey(prefix), String(process.pid)));
    link.announcement = {
      runId,
      prefix,
      output: options.output,
      stallMs: options.stallMs,
      runTimeoutMs: options.runTimeoutMs,
      refreshedAt: Date.now(),
    };
    await this.guarded(this.register());
    this.attachedAt = Date.now();
    await this.recordLeftovers(client, prefix);
    link.timer = setInterval(() => this.checkHealth(), 1000);
    link.timer.unref();
  }

  /** The collector's connection, which says when Redis goes away and comes back (and then recovers the run). */
  private connectWatchingOutages(runId: string): Redis {
    const { link } = this;
    const { address, warn, outageMs } = link.options;
    const client = connect(address, `tsgym-collector:${runId}`);
    link.client = client;
    client.on('close', () => {
      if (this.downSince !== undefined || link.closed) return;
      this.downSince = Date.now();
      warn(
        `Redis at ${address.url} is unreachable: the run is paused (rollouts in flight keep their place; waiting up to ${Math.round(outageMs / 1000)} s).`,
      );
    });
    client.on('ready', () => {
      if (this.downSince === undefined) return;
      warn(
        `Redis at ${address.url} is back after ${((Date.now() - this.downSince) / 1000).toFixed(1)} s: the run continues.`,
      );
      this.downSince = undefined;
      this.recover().catch(() => undefined);
    });
    return client;
  }

  /** Waits for the first connection, failing the run when Redis cannot be reached within the outage bound. */
  private async firstReady(client: Redis): Promise<void> {
    const { link } = this;
    const deadline = setTimeout(
      () => link.failNow(outageError(link.options, 'could not be reached')),
      link.options.outageMs,
    );
    try {
      await this.guarded(new Promise<void>((resolve) => client.once('ready', () => resolve())));
    } finally {
      clearTimeout(deadline);
    }
  }

  /**
   * Results that finished while no collector listened are read before the first job is submitted, so a resumed run
   * records them instead of running those rollouts again; its jobs still in the stream are noted, not added again.
   */
  private async recordLeftovers(client: Redis, prefix: string): Promise<void> {
    const { link } = this;
    const { options } = link;
    link.reader = client.duplicate();
    link.reader.on('error', () => undefined);
    await this.guarded(new Promise<void>((resolve) => void this.readResults(prefix, resolve)));
    if (options.resume) await this.guarded(scanQueued(client, jobsKey(prefix), this.queued));
    if (this.early.size > 0)
      options.warn(
        `${this.early.size} results finished in Redis while no collector was listening; they are recorded, not run again.`,
      );
  }

  /** Every second: fails the run past the outage bound, reads the workers' roster, and now and then recovers. */
  private checkHealth(): void {
    const { link, downSince } = this;
    const { options } = link;
    if (downSince !== undefined && Date.now() - downSince > options.outageMs) {
      link.failNow(outageError(options, `has been unreachable for ${Math.round((Date.now() - downSince) / 1000)} s`));
      return;
    }
    if (downSince !== undefined || !link.client || link.closed) return;
    this.ticks++;
    readWorkers(link.client).then(
      (list) => {
        link.workers = list;
        this.warnUnservedAgents();
      },
      () => undefined,
    );
    // Also catches a Redis emptied without a disconnect (FLUSHALL, a failover to an empty replica).
    if (this.ticks % 5 === 0) this.recover().catch(() => undefined);
  }
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
