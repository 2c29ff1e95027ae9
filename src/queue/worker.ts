/**
 * `gym worker`: serves every announced run's jobs stream (jobs-stream.ts, consumer.ts) with this machine's
 * environment. Each job names its agent; the worker runs it through that agent's `/run` (found through the local
 * head server) and returns the result row — or the failure row, stamped `_ng_worker` — to the collector through
 * Redis. A job whose agent this environment lacks is refused visibly: it goes back to the stream (after a short
 * delay) for another worker, it is not failed. Stopping drains: no new job is taken, jobs in flight finish within
 * the drain deadline, then the process exits; a job left unfinished (or a worker that was killed) is moved back to
 * the stream by another worker's stalled check once it has gone the stall time without a heartbeat.
 */
import type { Redis } from 'ioredis';
import type { AgentDirectory } from '../collect/agents.js';
import type { Row } from '../runfiles/row.js';
import { AgentReachability, isUndelivered } from '../collect/reachability.js';
import { httpAgentExecutor, routeOf } from '../collect/routing.js';
import { countedExecutor } from './worker-metrics.js';
import { connect } from './connection.js';
import { startConsumer, type Outcome, type RunConsumer } from './consumer.js';
import type { StreamJob } from './jobs-stream.js';
import { serveAggregations } from './remote-aggregate.js';
import { flushTracing } from '../tracing/spans.js';
import { WorkerTraces } from './worker-trace.js';
import { readRuns, WORKERS_KEY, type QueueAddress, type RunAnnouncement, type WorkerPresence } from './protocol.js';

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

function jobLabel(job: StreamJob): string {
  return `job ${job.jobId || '?'}`;
}

export async function startWorker(options: WorkerOptions): Promise<RunningWorker> {
  const { address, agents, id, log } = options;
  const traces = await WorkerTraces.open(id);
  const client: Redis = connect(address, `tsgym-worker:${id}`);
  const served = new Map<string, { consumer: RunConsumer; blocking: Redis; run: RunAnnouncement }>();
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

  const handBack: Outcome = { handBack: true };

  const executorFor = (run: RunAnnouncement) => {
    // The collector's reachability gate (D20), per outage: an agent that refuses connections holds its jobs for up
    // to agentWaitMs; given up, they go back to the stream (a later job starts a fresh gate, so the worker recovers).
    const gate = (): { reachability: AgentReachability; execute: ReturnType<typeof httpAgentExecutor> } => {
      const reachability = new AgentReachability({
        waitMs: options.agentWaitMs,
        urlOf: (agent) => agents.urlOf(agent),
        warn: (line) => log(`worker ${id}: ${line}`),
      });
      return { reachability, execute: countedExecutor(httpAgentExecutor(agents, run.runTimeoutMs, reachability)) };
    };
    let current = gate();
    return async (job: StreamJob): Promise<Outcome> => {
      const data = job.data;
      const key = /^t(\d+)r(\d+)a(\d+)$/.exec(job.jobId);
      if (!key || data.agent === '' || data.body === '') {
        const problem = `${jobLabel(job)} of ${run.output} carries no job id, agent or body; it was not enqueued by gym eval run`;
        log(`worker ${id}: ${problem}: answered as unusable, not run.`);
        throw new Error(problem);
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
        return handBack;
      }
      const [task, rollout, attempt] = [Number(key[1]), Number(key[2]), Number(key[3])];
      const used = current;
      const trace = traces.begin({ task, rollout, attempt, agent: data.agent }, data);
      let row: Row;
      try {
        row = await used.execute({ task, rollout, attempt, agent: data.agent, body: data.body, ...trace.headers });
      } catch (error) {
        trace.abandon('worker_error');
        throw error;
      }
      if (isUndelivered(row)) {
        trace.abandon('handed_back');
        if (current === used) current = gate();
        log(
          `worker ${id}: ${jobLabel(job)} of ${run.output} never reached agent '${data.agent}' (it refuses connections); it goes back to the queue.`,
        );
        return handBack;
      }
      const route = routeOf(row);
      if (route === 'failures') row._ng_worker = id;
      trace.finish(row, route);
      // The result and the job's acknowledgement go to Redis in one step (consumer.ts): if this worker dies
      // before, the job is run again and the collector drops the second answer.
      return { result: { jobId: job.jobId, worker: id, row } };
    };
  };

  const serve = (run: RunAnnouncement): void => {
    const blocking = client.duplicate({ enableAutoPipelining: false });
    blocking.on('error', () => undefined);
    const consumer = startConsumer({
      client,
      blocking,
      run,
      consumer: id,
      concurrency: options.concurrency,
      execute: executorFor(run),
      onReclaimed: (jobId, lost) =>
        log(
          lost
            ? `worker ${id}: job ${jobId} of ${run.output} stalled once too often (its workers kept stopping); it is given up as worker_lost.`
            : `worker ${id}: job ${jobId} of ${run.output} stalled (its worker stopped renewing its claim); it is run again.`,
        ),
    });
    served.set(run.runId, { consumer, blocking, run });
    log(`worker ${id}: serving ${run.output} (run ${run.runId}, ${options.concurrency} at a time).`);
  };

  /** Stops serving one run: no new job, those in flight answered (bounded by `ms`), then its connection closed. */
  const release = async (entry: { consumer: RunConsumer; blocking: Redis }, ms: number): Promise<boolean> => {
    const drained = await Promise.race([
      entry.consumer.close().then(() => true),
      new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms).unref()),
    ]);
    if (!drained) await entry.consumer.close(true);
    entry.blocking.disconnect();
    return drained;
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
      await release(entry, 2000);
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
      log(
        `worker ${id}: draining — no new jobs; waiting up to ${Math.round(options.drainMs / 1000)} s for the jobs in flight.`,
      );
      const drained = await Promise.all([...served.values()].map((entry) => release(entry, options.drainMs)));
      if (drained.includes(false))
        log(`worker ${id}: drain deadline reached; the unfinished jobs go to another worker once their claim expires.`);
      await Promise.race([
        client.hdel(WORKERS_KEY, id).catch(() => undefined),
        new Promise((r) => setTimeout(r, 1000).unref()),
      ]);
      client.disconnect();
      await flushTracing();
      log(`worker ${id}: stopped.`);
      resolveStopped();
      return stopped;
    },
  };
}
