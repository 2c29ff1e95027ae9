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
import type { RolloutExecutor } from '../collect/executor.js';
import { NG } from '../runfiles/ng-keys.js';
import type { Row } from '../runfiles/row.js';
import { AgentReachability, isUndelivered } from '../collect/reachability.js';
import { httpAgentExecutor, routeOf } from '../collect/routing.js';
import { countedExecutor } from './worker-metrics.js';
import { connect } from './connection.js';
import { startConsumer, type Outcome, type RunConsumer } from './consumer.js';
import type { StreamJob } from './jobs-stream.js';
import { serveAggregations, type AggregationServer } from './remote-aggregate.js';
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
  log: (line: string) => void;
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

/** What a job this worker does not run comes to: back to the stream for another worker. */
const HAND_BACK: Outcome = { handBack: true };

export async function startWorker(options: WorkerOptions): Promise<RunningWorker> {
  const traces = await WorkerTraces.open(options.id);
  const worker = new QueueWorker(options, traces);
  await worker.begin();
  return worker;
}

/** One announced run this worker serves. */
interface ServedRun {
  consumer: RunConsumer;
  /** The consumer's own connection (its blocking reads hold it). */
  blocking: Redis;
  run: RunAnnouncement;
}

/**
 * The executor a run's jobs go through now: replaced by a fresh one (a fresh reachability gate) once a job finds the
 * agent refusing connections.
 */
interface RunGate {
  current: RolloutExecutor;
}

/** The worker's state: its Redis connection, the runs it serves, its refusal reports, and where stopping stands. */
class QueueWorker implements RunningWorker {
  readonly stopped: Promise<void>;
  private resolveStopped: () => void = () => undefined;
  private readonly client: Redis;
  private readonly served = new Map<string, ServedRun>();
  /** Per agent this environment lacks: when its refusals were last reported, and how many were refused since. */
  private readonly refusals = new Map<string, { loggedAt: number; since: number }>();
  private stopping = false;
  private redisDown = false;
  private refreshing = false;
  /** The refresh every 500 ms: runs announced and finished, this worker's roster entry, aggregation requests. */
  private timer: NodeJS.Timeout | undefined;
  private readonly aggregations: AggregationServer;

  constructor(
    private readonly options: WorkerOptions,
    private readonly traces: WorkerTraces,
  ) {
    const { address, agents, id, log } = options;
    this.client = connect(address, `tsgym-worker:${id}`);
    this.stopped = new Promise<void>((resolve) => (this.resolveStopped = resolve));
    // Producers without an environment ask a worker serving the agent for their end-of-run metrics.
    this.aggregations = serveAggregations({ client: this.client, agents, id, stopping: () => this.stopping, log });
    this.reportOutages();
  }

  /** Starts refreshing, serves the runs announced now, and says so. */
  async begin(): Promise<void> {
    const { address, agents, id, log } = this.options;
    this.timer = setInterval(() => this.refreshUnlessBusy(), 500);
    await this.refresh().catch(() => undefined);
    log(
      `worker ${id}: connected to ${address.url}; agents ${agents.names.join(', ') || '(none)'} from ${agents.source}.`,
    );
  }

  async stop(): Promise<void> {
    const { client, options } = this;
    const { id, log } = options;
    if (this.stopping) return this.stopped;
    this.stopping = true;
    clearInterval(this.timer);
    log(
      `worker ${id}: draining — no new jobs; waiting up to ${Math.round(options.drainMs / 1000)} s for the jobs in flight.`,
    );
    const drained = await Promise.all([...this.served.values()].map((entry) => this.release(entry, options.drainMs)));
    if (drained.includes(false))
      log(`worker ${id}: drain deadline reached; the unfinished jobs go to another worker once their claim expires.`);
    await Promise.race([
      client.hdel(WORKERS_KEY, id).catch(() => undefined),
      new Promise((r) => setTimeout(r, 1000).unref()),
    ]);
    client.disconnect();
    await flushTracing();
    log(`worker ${id}: stopped.`);
    this.resolveStopped();
    return this.stopped;
  }

  private reportOutages(): void {
    const { address, id, log } = this.options;
    this.client.on('close', () => {
      if (this.redisDown || this.stopping) return;
      this.redisDown = true;
      log(`worker ${id}: Redis at ${address.url} is unreachable; waiting for it (jobs in flight continue).`);
    });
    this.client.on('ready', () => {
      if (!this.redisDown) return;
      this.redisDown = false;
      log(`worker ${id}: Redis at ${address.url} is back.`);
    });
  }

  private refreshUnlessBusy(): void {
    if (this.refreshing || this.stopping || this.redisDown) return;
    this.refreshing = true;
    this.refresh()
      .catch(() => undefined)
      .finally(() => (this.refreshing = false));
  }

  private async refresh(): Promise<void> {
    const { client, options } = this;
    const runs = await readRuns(client);
    if (this.stopping) return;
    await this.followRuns(runs);
    await client.hset(WORKERS_KEY, options.id, JSON.stringify(this.presence()));
    await this.aggregations.poll();
    await this.pruneRoster();
  }

  /** Serves the runs newly announced and stops serving those no longer announced (finished). */
  private async followRuns(runs: RunAnnouncement[]): Promise<void> {
    const { id, log } = this.options;
    const live = new Set(runs.map((run) => run.runId));
    for (const run of runs) if (!this.served.has(run.runId)) this.serve(run);
    for (const [runId, entry] of this.served) {
      if (live.has(runId)) continue;
      this.served.delete(runId);
      log(`worker ${id}: ${entry.run.output} is finished (run ${runId}); no longer serving it.`);
      // Closed before the roster says so: the collector deletes the run's keys once no worker serves it, and a
      // worker still open would write some of them again.
      await this.release(entry, 2000);
    }
  }

  private presence(): WorkerPresence {
    const { agents, id, concurrency } = this.options;
    return { id, agents: [...agents.names], runs: [...this.served.keys()], concurrency, seenAt: Date.now() };
  }

  /** Removes the roster entries of workers gone for ROSTER_PRUNE_MS (killed, never deregistered), and unreadable ones. */
  private async pruneRoster(): Promise<void> {
    const roster = await this.client.hgetall(WORKERS_KEY);
    const stale = Object.entries(roster)
      .filter(([, text]) => {
        try {
          return Date.now() - (JSON.parse(text) as WorkerPresence).seenAt > ROSTER_PRUNE_MS;
        } catch {
          return true;
        }
      })
      .map(([key]) => key);
    if (stale.length > 0) await this.client.hdel(WORKERS_KEY, ...stale);
  }

  private serve(run: RunAnnouncement): void {
    const { id, log, concurrency } = this.options;
    const blocking = this.client.duplicate({ enableAutoPipelining: false });
    blocking.on('error', () => undefined);
    const gate: RunGate = { current: this.gatedExecutor(run) };
    const consumer = startConsumer({
      client: this.client,
      blocking,
      run,
      consumer: id,
      concurrency,
      execute: (job) => this.runJob(run, gate, job),
      onReclaimed: (jobId, lost) =>
        log(
          lost
            ? `worker ${id}: job ${jobId} of ${run.output} stalled once too often (its workers kept stopping); it is given up as worker_lost.`
            : `worker ${id}: job ${jobId} of ${run.output} stalled (its worker stopped renewing its claim); it is run again.`,
        ),
    });
    this.served.set(run.runId, { consumer, blocking, run });
    log(`worker ${id}: serving ${run.output} (run ${run.runId}, ${concurrency} at a time).`);
  }

  /** Stops serving one run: no new job, those in flight answered (bounded by `ms`), then its connection closed. */
  private async release(entry: ServedRun, ms: number): Promise<boolean> {
    const drained = await Promise.race([
      entry.consumer.close().then(() => true),
      new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms).unref()),
    ]);
    if (!drained) await entry.consumer.close(true);
    entry.blocking.disconnect();
    return drained;
  }

  /**
   * The collector's reachability gate (D20), per outage: an agent that refuses connections holds its jobs for up to
   * agentWaitMs; given up, they go back to the stream (a later job starts a fresh gate, so the worker recovers).
   */
  private gatedExecutor(run: RunAnnouncement): RolloutExecutor {
    const { agents, id, log } = this.options;
    const reachability = new AgentReachability({
      waitMs: this.options.agentWaitMs,
      urlOf: (agent) => agents.urlOf(agent),
      warn: (line) => log(`worker ${id}: ${line}`),
    });
    return countedExecutor(httpAgentExecutor(agents, run.runTimeoutMs, reachability));
  }

  /** Runs one job through its agent: the result row, a hand-back (agent absent or unreachable), or a throw (unusable). */
  private async runJob(run: RunAnnouncement, gate: RunGate, job: StreamJob): Promise<Outcome> {
    const { agents, id, log } = this.options;
    const data = job.data;
    const key = /^t(\d+)r(\d+)a(\d+)$/.exec(job.jobId);
    if (!key || data.agent === '' || data.body === '') {
      const problem = `${jobLabel(job)} of ${run.output} carries no job id, agent or body; it was not enqueued by gym eval run`;
      log(`worker ${id}: ${problem}: answered as unusable, not run.`);
      throw new Error(problem);
    }
    if (agents.urlOf(data.agent) === undefined) return this.refuseAbsentAgent(run, job);
    const [task, rollout, attempt] = [Number(key[1]), Number(key[2]), Number(key[3])];
    const used = gate.current;
    const trace = this.traces.begin({ task, rollout, attempt, agent: data.agent }, data);
    let row: Row;
    try {
      row = await used({ task, rollout, attempt, agent: data.agent, body: data.body, ...trace.headers });
    } catch (error) {
      trace.abandon('worker_error');
      throw error;
    }
    if (isUndelivered(row)) {
      trace.abandon('handed_back');
      if (gate.current === used) gate.current = this.gatedExecutor(run);
      log(
        `worker ${id}: ${jobLabel(job)} of ${run.output} never reached agent '${data.agent}' (it refuses connections); it goes back to the queue.`,
      );
      return HAND_BACK;
    }
    const route = routeOf(row);
    if (route === 'failures') row[NG.worker] = id;
    trace.finish(row, route);
    // The result and the job's acknowledgement go to Redis in one step (consumer.ts): if this worker dies
    // before, the job is run again and the collector drops the second answer.
    return { result: { jobId: job.jobId, worker: id, row } };
  }

  /** A job whose agent this environment lacks goes back for another worker; reported at most every REFUSAL_LOG_MS. */
  private refuseAbsentAgent(run: RunAnnouncement, job: StreamJob): Outcome {
    const { agents, id, log } = this.options;
    const { agent } = job.data;
    if (this.refusals.size > 1000) this.refusals.clear(); // agent names come from Redis: bounded
    const seen = this.refusals.get(agent) ?? { loggedAt: 0, since: 0 };
    this.refusals.set(agent, seen);
    seen.since++;
    if (Date.now() - seen.loggedAt >= REFUSAL_LOG_MS) {
      const more = seen.since > 1 ? ` (${seen.since - 1} more refused since the last report)` : '';
      log(
        `worker ${id}: refusing ${jobLabel(job)} of ${run.output}: agent '${agent}' is not in this worker's environment (${agents.source} offers ${agents.names.join(', ') || 'no agents'}); it goes back to the queue for another worker${more}.`,
      );
      seen.loggedAt = Date.now();
      seen.since = 0;
    }
    return HAND_BACK;
  }
}
