/**
 * One worker's consumer of one run's jobs stream (jobs-stream.ts): it takes up to `concurrency` jobs at a time
 * (XREADGROUP on its own blocking connection), runs each through `execute`, and answers them in batches: the results
 * of the jobs finished within ANSWER_BATCH_MS go to Redis as one entry of the results stream, in one MULTI with their
 * jobs' acknowledgements, and their slots are refilled by one read.
 * While it holds jobs it re-claims them as a heartbeat; its stalled check moves the jobs of stopped workers back.
 * Closing stops taking jobs, hands back the refused ones it holds, and waits for those in flight.
 */
import type { Redis } from 'ioredis';
import { GROUP, heartbeat, jobsKey, parseJobs, reclaimStalled, type StreamJob } from './jobs-stream.js';
import { resultsKey, type JobResult, type RunAnnouncement } from './protocol.js';

/** What running a job came to: its result, or "not here" (hand it back after a short delay). */
export type Outcome = { result: JobResult } | { handBack: true };

/** How long one XREADGROUP blocks (closing waits at most this long for the read in progress). */
const BLOCK_MS = 1000;
/** How long a finished job's answer waits for others to share its round trip. */
const ANSWER_BATCH_MS = 20;
/** A batch of answers this long goes at once (one results entry, well under the collector's bound on one). */
const ANSWER_BATCH_CHARS = 8 * 1024 * 1024;
/** How long a job this worker turned down twice in a row waits before it is offered again. */
const REFUSAL_DELAY_MS = 1000;

export interface ConsumerOptions {
  client: Redis;
  /** A connection of its own: XREADGROUP BLOCK holds it. */
  blocking: Redis;
  run: RunAnnouncement;
  consumer: string;
  concurrency: number;
  execute(job: StreamJob): Promise<Outcome>;
  /** A job of a stopped worker was moved back to the stream (or given up). */
  onReclaimed(jobId: string, lost: boolean): void;
}

export interface RunConsumer {
  /** Stops taking jobs; resolves once those in flight are answered. `force`: stop waiting and heartbeating. */
  close(force?: boolean): Promise<void>;
}

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms).unref());

export function startConsumer(options: ConsumerOptions): RunConsumer {
  return new JobsConsumer(options);
}

/** The consumer's state: the jobs it holds, its slots, the answers waiting to share a round trip, its timers. */
class JobsConsumer implements RunConsumer {
  private readonly key: string;
  private readonly results: string;
  /** Entries pending under this consumer and not yet answered or handed back (the heartbeat keeps them). */
  private readonly mine = new Map<string, StreamJob>();
  /** Refused jobs waiting out REFUSAL_DELAY_MS before they are handed back, by entry id. */
  private readonly held = new Map<string, NodeJS.Timeout>();
  /** When this worker last turned each job down (job id → ms). */
  private readonly refusedAt = new Map<string, number>();
  /** Runs and Redis writes not yet settled: closing waits for them. */
  private readonly answering = new Set<Promise<unknown>>();
  /** Slots in use: jobs taken and not yet answered or refused (a batch of answers frees its slots together). */
  private running = 0;
  private closing = false;
  private forced = false;
  /** Wakes the read loop waiting for a free slot. */
  private slotFreed: (() => void) | undefined;
  /** Answers waiting for others to share their round trip, and their total length. */
  private finished: Array<{ entryId: string; text: string }> = [];
  private finishedChars = 0;
  private flushTimer: NodeJS.Timeout | undefined;
  private beating = false;
  private checking = false;
  private readonly looping: Promise<void>;
  private readonly beat: NodeJS.Timeout;
  private readonly check: NodeJS.Timeout;

  constructor(private readonly options: ConsumerOptions) {
    this.key = jobsKey(options.run.prefix);
    this.results = resultsKey(options.run.prefix);
    this.looping = this.takeJobs();
    const { stallMs } = options.run;
    this.beat = setInterval(() => this.renewClaims(), Math.max(50, Math.round(stallMs / 3)));
    this.check = setInterval(() => this.moveStalledBack(), Math.max(100, Math.round(stallMs / 2)));
    this.beat.unref();
    this.check.unref();
  }

  async close(force = false): Promise<void> {
    this.closing = true;
    if (force) {
      this.forced = true;
      clearInterval(this.beat);
    }
    clearInterval(this.check);
    this.slotFreed?.();
    if (force) return;
    await this.looping;
    for (const [entryId, timer] of this.held) {
      clearTimeout(timer);
      const job = this.mine.get(entryId);
      if (job) this.handBack(job);
    }
    while (this.answering.size > 0 || this.finished.length > 0) {
      this.flush();
      await Promise.all([...this.answering]);
    }
    clearInterval(this.beat);
  }

  /** Takes jobs while there are free slots (one blocking read for all of them), until closing. */
  private async takeJobs(): Promise<void> {
    const { blocking, consumer, concurrency } = this.options;
    while (!this.closing) {
      const free = concurrency - this.running;
      if (free <= 0) {
        await new Promise<void>((resolve) => (this.slotFreed = resolve));
        continue;
      }
      let reply: unknown;
      try {
        reply = await blocking.call(
          'XREADGROUP',
          'GROUP',
          GROUP,
          consumer,
          'COUNT',
          free,
          'BLOCK',
          BLOCK_MS,
          'STREAMS',
          this.key,
          '>',
        );
      } catch {
        // No group yet (Redis emptied, the collector re-creates it) or the connection dropped: try again shortly.
        await pause(200);
        continue;
      }
      for (const job of parseJobs(reply)) this.start(job);
    }
  }

  private start(job: StreamJob): void {
    this.mine.set(job.entryId, job);
    if (this.closing) return this.handBack(job);
    this.running++;
    const work = this.options.execute(job).then(
      (outcome) => {
        if ('result' in outcome) return this.answer(job.entryId, JSON.stringify(outcome.result));
        this.freeSlot();
        this.refuse(job);
      },
      (error: unknown) => {
        // The job could not be run at all (unusable entry): answered so the collector's row says why.
        const lost = `the worker could not run it: ${(error as Error).message}`;
        this.answer(job.entryId, JSON.stringify({ jobId: job.jobId, worker: this.options.consumer, lost }));
      },
    );
    this.track(work);
  }

  /**
   * Handed back at once for another worker to take; a job this worker turned down moments ago (nobody else took it)
   * waits first, so a worker alone with jobs it cannot run does not spin on them.
   */
  private refuse(job: StreamJob): void {
    const now = Date.now();
    const again = now - (this.refusedAt.get(job.jobId) ?? 0) < REFUSAL_DELAY_MS;
    if (this.refusedAt.size > 10_000) this.refusedAt.clear(); // job ids come from Redis: bounded
    this.refusedAt.set(job.jobId, now);
    if (this.closing || !again) this.handBack(job);
    else
      this.held.set(
        job.entryId,
        setTimeout(() => this.handBack(job), REFUSAL_DELAY_MS),
      );
  }

  private track(work: Promise<unknown>): void {
    const settled = work.catch(() => undefined).finally(() => this.answering.delete(settled));
    this.answering.add(settled);
  }

  /**
   * Answers wait up to ANSWER_BATCH_MS for the others finishing meanwhile, one round trip for all of them; half the
   * slots waiting is enough (the other half keeps the agent busy meanwhile).
   */
  private answer(entryId: string, text: string): void {
    this.finished.push({ entryId, text });
    this.finishedChars += text.length;
    if (this.finished.length >= Math.max(1, this.options.concurrency / 2) || this.finishedChars >= ANSWER_BATCH_CHARS) {
      clearTimeout(this.flushTimer);
      this.flushTimer = undefined;
      this.flush();
    } else if (this.finished.length === 1) {
      this.flushTimer = setTimeout(() => {
        this.flushTimer = undefined;
        this.flush();
      }, ANSWER_BATCH_MS);
    }
  }

  /** One MULTI per batch of answers: every result with its job's acknowledgement and deletion. */
  private flush(): void {
    const batch = this.finished;
    this.finished = [];
    this.finishedChars = 0;
    if (batch.length === 0) return;
    const { key } = this;
    const ids = batch.map((item) => item.entryId);
    const work = this.options.client
      .multi()
      .xadd(this.results, '*', 'r', `[${batch.map((item) => item.text).join(',')}]`)
      .xack(key, GROUP, ...ids)
      .xdel(key, ...ids)
      .exec()
      // Not answered (Redis gone at close): the entries stay pending and a live worker reclaims them.
      .then(() => ids.forEach((id) => this.mine.delete(id)));
    this.track(work);
    // The slots of the batch free together: one read takes new jobs for all of them.
    this.running -= batch.length;
    this.wakeLoop();
  }

  private handBack(job: StreamJob): void {
    const { key } = this;
    this.held.delete(job.entryId);
    this.track(
      this.options.client
        .multi()
        .xadd(key, '*', ...job.fields)
        .xack(key, GROUP, job.entryId)
        .xdel(key, job.entryId)
        .exec()
        .then(() => this.mine.delete(job.entryId)),
    );
  }

  private wakeLoop(): void {
    const wake = this.slotFreed;
    this.slotFreed = undefined;
    wake?.();
  }

  private freeSlot(): void {
    this.running--;
    this.wakeLoop();
  }

  /** The heartbeat: re-claims the jobs this consumer holds, so no stalled check takes them. */
  private renewClaims(): void {
    if (this.beating || this.forced || this.mine.size === 0) return;
    this.beating = true;
    heartbeat(this.options.client, this.key, this.options.consumer, [...this.mine.keys()])
      .catch(() => undefined)
      .finally(() => (this.beating = false));
  }

  /** The stalled check: jobs of stopped workers go back to the stream (or are given up). */
  private moveStalledBack(): void {
    if (this.checking || this.closing) return;
    this.checking = true;
    const { options } = this;
    const ownEntries = new Set(this.mine.keys());
    reclaimStalled(
      options.client,
      { jobs: this.key, results: this.results },
      options.consumer,
      options.run.stallMs,
      ownEntries,
    )
      .then(({ requeued, lost }) => {
        for (const jobId of requeued) options.onReclaimed(jobId, false);
        for (const jobId of lost) options.onReclaimed(jobId, true);
      })
      .catch(() => undefined)
      .finally(() => (this.checking = false));
  }
}
