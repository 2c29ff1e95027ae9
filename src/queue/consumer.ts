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
  const { client, blocking, run, consumer, concurrency } = options;
  const key = jobsKey(run.prefix);
  const results = resultsKey(run.prefix);
  /** Entries pending under this consumer and not yet answered or handed back (the heartbeat keeps them). */
  const mine = new Map<string, StreamJob>();
  const held = new Map<string, NodeJS.Timeout>();
  /** When this worker last turned each job down (job id → ms). */
  const refusedAt = new Map<string, number>();
  const answering = new Set<Promise<unknown>>();
  let running = 0;
  let closing = false;
  let forced = false;
  let slotFreed: (() => void) | undefined;
  let finished: Array<{ entryId: string; text: string }> = [];
  let finishedChars = 0;

  const track = (work: Promise<unknown>): void => {
    const settled = work.catch(() => undefined).finally(() => answering.delete(settled));
    answering.add(settled);
  };

  /** One MULTI per batch of answers: every result with its job's acknowledgement and deletion. */
  const flush = (): void => {
    const batch = finished;
    finished = [];
    finishedChars = 0;
    if (batch.length === 0) return;
    const ids = batch.map((item) => item.entryId);
    const work = client
      .multi()
      .xadd(results, '*', 'r', `[${batch.map((item) => item.text).join(',')}]`)
      .xack(key, GROUP, ...ids)
      .xdel(key, ...ids)
      .exec()
      // Not answered (Redis gone at close): the entries stay pending and a live worker reclaims them.
      .then(() => ids.forEach((id) => mine.delete(id)));
    track(work);
    // The slots of the batch free together: one read takes new jobs for all of them.
    running -= batch.length;
    wakeLoop();
  };

  const handBack = (job: StreamJob): void => {
    held.delete(job.entryId);
    track(
      client
        .multi()
        .xadd(key, '*', ...job.fields)
        .xack(key, GROUP, job.entryId)
        .xdel(key, job.entryId)
        .exec()
        .then(() => mine.delete(job.entryId)),
    );
  };

  const wakeLoop = (): void => {
    const wake = slotFreed;
    slotFreed = undefined;
    wake?.();
  };
  const freeSlot = (): void => {
    running--;
    wakeLoop();
  };
  /**
   * Answers wait up to ANSWER_BATCH_MS for the others finishing meanwhile, one round trip for all of them; half the
   * slots waiting is enough (the other half keeps the agent busy meanwhile).
   */
  let flushTimer: NodeJS.Timeout | undefined;
  const answer = (entryId: string, text: string): void => {
    finished.push({ entryId, text });
    finishedChars += text.length;
    if (finished.length >= Math.max(1, concurrency / 2) || finishedChars >= ANSWER_BATCH_CHARS) {
      clearTimeout(flushTimer);
      flushTimer = undefined;
      flush();
    } else if (finished.length === 1) {
      flushTimer = setTimeout(() => {
        flushTimer = undefined;
        flush();
      }, ANSWER_BATCH_MS);
    }
  };

  const start = (job: StreamJob): void => {
    mine.set(job.entryId, job);
    if (closing) return handBack(job);
    running++;
    const work = options.execute(job).then(
      (outcome) => {
        if ('result' in outcome) return answer(job.entryId, JSON.stringify(outcome.result));
        freeSlot();
        // Handed back at once for another worker to take; a job this worker turned down moments ago (nobody else
        // took it) waits first, so a worker alone with jobs it cannot run does not spin on them.
        const now = Date.now();
        const again = now - (refusedAt.get(job.jobId) ?? 0) < REFUSAL_DELAY_MS;
        if (refusedAt.size > 10_000) refusedAt.clear(); // job ids come from Redis: bounded
        refusedAt.set(job.jobId, now);
        if (closing || !again) handBack(job);
        else
          held.set(
            job.entryId,
            setTimeout(() => handBack(job), REFUSAL_DELAY_MS),
          );
      },
      (error: unknown) => {
        // The job could not be run at all (unusable entry): answered so the collector's row says why.
        const lost = `the worker could not run it: ${(error as Error).message}`;
        answer(job.entryId, JSON.stringify({ jobId: job.jobId, worker: consumer, lost }));
      },
    );
    track(work);
  };

  const loop = async (): Promise<void> => {
    while (!closing) {
      const free = concurrency - running;
      if (free <= 0) {
        await new Promise<void>((resolve) => (slotFreed = resolve));
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
          key,
          '>',
        );
      } catch {
        // No group yet (Redis emptied, the collector re-creates it) or the connection dropped: try again shortly.
        await pause(200);
        continue;
      }
      for (const job of parseJobs(reply)) start(job);
    }
  };
  const looping = loop();

  const stallMs = run.stallMs;
  let beating = false;
  const beat = setInterval(
    () => {
      if (beating || forced || mine.size === 0) return;
      beating = true;
      heartbeat(client, key, consumer, [...mine.keys()])
        .catch(() => undefined)
        .finally(() => (beating = false));
    },
    Math.max(50, Math.round(stallMs / 3)),
  );
  let checking = false;
  const check = setInterval(
    () => {
      if (checking || closing) return;
      checking = true;
      reclaimStalled(client, { jobs: key, results }, consumer, stallMs, new Set(mine.keys()))
        .then(({ requeued, lost }) => {
          for (const jobId of requeued) options.onReclaimed(jobId, false);
          for (const jobId of lost) options.onReclaimed(jobId, true);
        })
        .catch(() => undefined)
        .finally(() => (checking = false));
    },
    Math.max(100, Math.round(stallMs / 2)),
  );
  beat.unref();
  check.unref();

  return {
    async close(force = false) {
      closing = true;
      if (force) {
        forced = true;
        clearInterval(beat);
      }
      clearInterval(check);
      slotFreed?.();
      if (force) return;
      await looping;
      for (const [entryId, timer] of held) {
        clearTimeout(timer);
        const job = mine.get(entryId);
        if (job) handBack(job);
      }
      while (answering.size > 0 || finished.length > 0) {
        flush();
        await Promise.all([...answering]);
      }
      clearInterval(beat);
    },
  };
}
