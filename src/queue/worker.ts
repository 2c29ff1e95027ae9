/**
 * `gym worker`: serves every announced run's BullMQ queue with this machine's environment. Each job names its
 * agent; the worker runs it through that agent's `/run` (found through the local head server) and returns the
 * result row — or the failure row, stamped `_ng_worker` — to the collector through Redis. A job whose agent this
 * environment lacks is refused visibly: it goes back to the queue (delayed briefly) for another worker, it is not
 * failed. Stopping drains: no new job is taken, jobs in flight finish within the drain deadline, then the process
 * exits; a job left unfinished (or a worker that was killed) is handed to another worker once its lock expires.
 */
import { DelayedError, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { AgentDirectory } from '../collect/agents.js';
import type { Row } from '../runfiles/row.js';
import { AgentReachability, isUndelivered } from '../collect/reachability.js';
import { httpAgentExecutor, routeOf } from '../collect/routing.js';
import { countedExecutor } from './worker-metrics.js';
import { connect } from './connection.js';
import { serveAggregations } from './remote-aggregate.js';
import {
  connectionOptions,
  QUEUE_NAME,
  readRuns,
  resultsKey,
  WORKERS_KEY,
  type JobData,
  type JobResult,
  type QueueAddress,
  type RunAnnouncement,
  type WorkerPresence,
} from './protocol.js';

/** How long a refused job waits before it is offered again. */
const REFUSAL_DELAY_MS = 1000;
/** Refusals of one agent are reported at most this often (a job nobody can run is offered every second). */
const REFUSAL_LOG_MS = 10_000;
/** Roster entries of workers gone this long (killed, never deregistered) are pruned by the others. */
const ROSTER_PRUNE_MS = 10 * 60 * 1000;

export interface WorkerOptions {
  address: QueueAddress;
  agents: AgentDirectory;
  id: string;
  /** Jobs run at once, per run served. */
  concurrency: number;
  /** How long Ctrl-C waits for jobs in flight before leaving them to the stall recovery. */
  drainMs: number;
  /** How long a job waits for this machine's agent while it refuses connections before going back to the queue. */
  agentWaitMs: number;
  log(line: string): void;
}

export interface RunningWorker {
  /** Stops taking jobs, lets those in flight finish (bounded), deregisters; resolves when everything is closed. */
  stop(): Promise<void>;
  /** Resolves when the worker stopped (after `stop`). */
  readonly stopped: Promise<void>;
}

function jobLabel(job: Job): string {
  return `job ${job.id ?? '?'}`;
}

export async function startWorker(options: WorkerOptions): Promise<RunningWorker> {
  const { address, agents, id, log } = options;
  const client: Redis = connect(address, `tsgym-worker:${id}`);
  const served = new Map<string, { worker: Worker; run: RunAnnouncement }>();
  const refusals = new Map<string, { loggedAt: number; since: number }>();
  let stopping = false;
  let redisDown = false;
  let resolveStopped: () => void = () => undefined;
  const stopped = new Promise<void>((resolve) => (resolveStopped = resolve));
  // Producers without an environment ask a worker serving the agent for their end-of-run metrics.
  const aggregations = serveAggregations({ client, agents, id, stopping: () => stopping, log });

  client.on('close', () => {
    if (redisDown || stopping) return;
    redisDown = true;
    log(`worker ${id}: Redis at ${address.url} is unreachable; waiting for it (jobs in flight continue).`);
  });
  client.on('ready', () => {
    if (!redisDown) return;
    redisDown = false;
    log(`worker ${id}: Redis at ${address.url} is back.`);
  });

  /** Hands a job back to the queue (delayed briefly) so another worker can take it; never a failure. */
  const handBack = async (job: Job<JobData>, token: string | undefined): Promise<never> => {
    await job.moveToDelayed(Date.now() + REFUSAL_DELAY_MS, token);
    throw new DelayedError();
  };

  const processorFor = (run: RunAnnouncement) => {
    // The collector's reachability gate (D20), per outage: an agent that refuses connections holds its jobs for up
    // to agentWaitMs; given up, they go back to the queue (a later job starts a fresh gate, so the worker recovers).
    const gate = (): { reachability: AgentReachability; execute: ReturnType<typeof httpAgentExecutor> } => {
      const reachability = new AgentReachability({
        waitMs: options.agentWaitMs,
        urlOf: (agent) => agents.urlOf(agent),
        warn: (line) => log(`worker ${id}: ${line}`),
      });
      return { reachability, execute: countedExecutor(httpAgentExecutor(agents, run.runTimeoutMs, reachability)) };
    };
    let current = gate();
    return async (job: Job<JobData>, token?: string): Promise<void> => {
      const data = job.data;
      if (typeof data?.agent !== 'string' || typeof data.body !== 'string') {
        throw new Error(`${jobLabel(job)} carries no agent/body; it was not enqueued by gym eval run`);
      }
      if (agents.urlOf(data.agent) === undefined) {
        if (refusals.size > 1000) refusals.clear(); // agent names come from Redis: bounded
        const seen = refusals.get(data.agent) ?? { loggedAt: 0, since: 0 };
        refusals.set(data.agent, seen);
        seen.since++;
        if (Date.now() - seen.loggedAt >= REFUSAL_LOG_MS) {
          const more = seen.since > 1 ? ` (${seen.since - 1} more refused since the last report)` : '';
          log(
            `worker ${id}: refusing ${jobLabel(job)} of ${run.output}: agent '${data.agent}' is not in this worker's environment (${agents.source} offers ${agents.names.join(', ') || 'no agents'}); it goes back to the queue for another worker${more}.`,
          );
          seen.loggedAt = Date.now();
          seen.since = 0;
        }
        return handBack(job, token);
      }
      const key = /^t(\d+)r(\d+)a(\d+)$/.exec(job.id ?? '');
      const [task, rollout, attempt] = key ? [Number(key[1]), Number(key[2]), Number(key[3])] : [0, 0, 0];
      const used = current;
      const trace = typeof data.traceparent === 'string' ? { traceparent: data.traceparent } : {};
      const row: Row = await used.execute({ task, rollout, attempt, agent: data.agent, body: data.body, ...trace });
      if (isUndelivered(row)) {
        if (current === used) current = gate();
        log(
          `worker ${id}: ${jobLabel(job)} of ${run.output} never reached agent '${data.agent}' (it refuses connections); it goes back to the queue.`,
        );
        return handBack(job, token);
      }
      if (routeOf(row) === 'failures') row._ng_worker = id;
      // The result goes to the run's list before the job completes: if this worker dies in between, the job is
      // run again and the collector drops the second answer; the other order could lose the result.
      const result: JobResult = { jobId: job.id!, worker: id, row };
      await client.rpush(resultsKey(run.prefix), JSON.stringify(result));
    };
  };

  const serve = (run: RunAnnouncement): void => {
    const worker = new Worker<JobData, void>(QUEUE_NAME, processorFor(run), {
      connection: connectionOptions(address, `tsgym-worker:${id}`),
      prefix: run.prefix,
      concurrency: options.concurrency,
      // Locks renewed every stallMs / 2 (BullMQ's default) by a live worker, whatever the rollout's length; a dead
      // worker's lock expires after stallMs and the next stalled check (every stallMs / 2) moves the job back.
      lockDuration: run.stallMs,
      stalledInterval: Math.max(100, Math.round(run.stallMs / 2)),
      // Recovered after two worker deaths; the third makes it a retryable failure row (worker_lost) at the collector.
      maxStalledCount: 2,
      drainDelay: 1,
    });
    worker.on('error', () => undefined);
    worker.on('stalled', (jobId) =>
      log(
        `worker ${id}: job ${jobId} of ${run.output} stalled (its worker stopped renewing the lock); it is run again.`,
      ),
    );
    served.set(run.runId, { worker, run });
    log(`worker ${id}: serving ${run.output} (run ${run.runId}, ${options.concurrency} at a time).`);
  };

  const presence = (): WorkerPresence => ({
    id,
    agents: [...agents.names],
    runs: [...served.keys()],
    concurrency: options.concurrency,
    seenAt: Date.now(),
  });

  const refresh = async (): Promise<void> => {
    const runs = await readRuns(client);
    if (stopping) return;
    const live = new Set(runs.map((run) => run.runId));
    for (const run of runs) if (!served.has(run.runId)) serve(run);
    for (const [runId, entry] of served) {
      if (live.has(runId)) continue;
      served.delete(runId);
      log(`worker ${id}: ${entry.run.output} is finished (run ${runId}); no longer serving it.`);
      // Closed before the roster says so: the collector deletes the run's keys once no worker serves it, and a
      // worker still open would write some of them again.
      await Promise.race([
        entry.worker.close().catch(() => undefined),
        new Promise((resolve) => setTimeout(resolve, 2000).unref()),
      ]);
    }
    await client.hset(WORKERS_KEY, id, JSON.stringify(presence()));
    await aggregations.poll();
    const roster = await client.hgetall(WORKERS_KEY);
    const stale = Object.entries(roster)
      .filter(([, text]) => {
        try {
          return Date.now() - (JSON.parse(text) as WorkerPresence).seenAt > ROSTER_PRUNE_MS;
        } catch {
          return true;
        }
      })
      .map(([key]) => key);
    if (stale.length > 0) await client.hdel(WORKERS_KEY, ...stale);
  };

  let refreshing = false;
  const timer = setInterval(() => {
    if (refreshing || stopping || redisDown) return;
    refreshing = true;
    refresh()
      .catch(() => undefined)
      .finally(() => (refreshing = false));
  }, 500);
  await refresh().catch(() => undefined);
  log(
    `worker ${id}: connected to ${address.url}; agents ${agents.names.join(', ') || '(none)'} from ${agents.source}.`,
  );

  return {
    stopped,
    async stop() {
      if (stopping) return stopped;
      stopping = true;
      clearInterval(timer);
      const workers = [...served.values()].map((entry) => entry.worker);
      log(
        `worker ${id}: draining — no new jobs; waiting up to ${Math.round(options.drainMs / 1000)} s for the jobs in flight.`,
      );
      const drained = Promise.all(workers.map((worker) => worker.close().catch(() => undefined))).then(() => true);
      const timedOut = new Promise<boolean>((resolve) => setTimeout(() => resolve(false), options.drainMs).unref());
      if (!(await Promise.race([drained, timedOut]))) {
        log(`worker ${id}: drain deadline reached; the unfinished jobs go to another worker once their lock expires.`);
        await Promise.race([
          Promise.all(workers.map((worker) => worker.close(true).catch(() => undefined))),
          new Promise((r) => setTimeout(r, 2000).unref()),
        ]);
      }
      await Promise.race([
        client.hdel(WORKERS_KEY, id).catch(() => undefined),
        new Promise((r) => setTimeout(r, 1000).unref()),
      ]);
      client.disconnect();
      log(`worker ${id}: stopped.`);
      resolveStopped();
      return stopped;
    },
  };
}
