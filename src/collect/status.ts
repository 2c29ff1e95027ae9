/**
 * The live state of a collection, written to `<stem>_status.json` while `gym eval run` works: run totals (done,
 * failed by class, in flight, rate, ETA, mean reward so far), a bounded history for the viewer's charts, per-step
 * service latency percentiles over the run (from each result's `_ng_step_latency_secs`, see ./step-latency.ts: the
 * only place the viewer finds them, since success rows do not carry them), and one entry per in-flight rollout with its stage and how long it has made no progress (`stalled` past
 * `stall_warning_secs`). The file is replaced atomically (write to a temporary name, then rename) about once a
 * second and once more at the end, so a reader never sees a torn file.
 *
 * The collector itself only knows which jobs it handed to the queue and which results came back: everything in
 * between comes from a `StageSource`. The default source polls each agent's `GET /status` once a second (the remote
 * agent keeps a registry of its in-flight rollouts, see src/rollout/status.ts), so a rollout's
 * hot path pays for nothing but a map insert and delete here. A distributed queue backend feeds the same board by
 * passing its own `StageSource` (e.g. one that reads what its workers publish, or that reports `queued` for jobs no
 * worker has claimed yet) through `CollectOptions.stageSource`; a job no source reports on is shown as `queued`.
 */
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import { isPlainObject } from '../config/types.js';
import { request } from '../http/client.js';
import type { AgentDirectory } from './agents.js';
import { rewardOf } from '../runfiles/outcomes.js';
import type { Route } from './routing.js';
import type { Row } from '../runfiles/row.js';
import { NG } from '../runfiles/ng-keys.js';
import { LatencyByStep } from '../runfiles/step-latency.js';
import type { HistoryPoint, RunState, RunStatusDocument } from '../runfiles/run-status.js';
import { attemptOf, inFlightEntry, seconds, STAGES, type InFlightRollout, type Stage } from '../runfiles/in-flight.js';

/** What a source knows about one in-flight rollout at the moment it answered. */
export interface StageReport {
  agent: string;
  task_index: unknown;
  rollout_index: unknown;
  attempt: number;
  stage: Stage;
  step: number;
  tool: string | null;
  /** Seconds since the rollout last changed stage or step, by the reporter's own clock. */
  since_progress_s: number;
}

/**
 * Where stages come from. `poll` is called at most once at a time, about once a second, with the agents that have
 * rollouts in flight; it must honour `signal` (aborted after ~1 s) and may answer partially. A rejection means
 * "nothing new this time", never a failed run.
 */
export interface StageSource {
  poll(agents: readonly string[], signal: AbortSignal): Promise<StageReport[]>;
}

/** Entries accepted from one agent's `/status` answer. */
const MAX_REPORTS_PER_AGENT = 10_000;
const STATUS_BODY_BYTES = 8 * 1024 * 1024;

function reportOf(agent: string, value: unknown): StageReport | undefined {
  if (!isPlainObject(value)) return undefined;
  const stage = value.stage;
  if (typeof stage !== 'string' || !(STAGES as readonly string[]).includes(stage)) return undefined;
  const num = (field: unknown): number => (typeof field === 'number' && Number.isFinite(field) ? field : 0);
  return {
    agent,
    task_index: value.task_index,
    rollout_index: value.rollout_index,
    attempt: num(value.attempt),
    stage: stage as Stage,
    step: num(value.step),
    tool: typeof value.tool === 'string' ? value.tool.slice(0, 128) : null,
    since_progress_s: Math.max(0, num(value.since_progress_s)),
  };
}

/** The default source: `GET <agent>/status`. Agents that do not serve it (404) are not asked again. */
export function agentStatusSource(agents: AgentDirectory): StageSource {
  const silent = new Set<string>();
  const pollOne = async (agent: string, signal: AbortSignal): Promise<StageReport[]> => {
    const url = agents.urlOf(agent);
    if (url === undefined || silent.has(agent)) return [];
    const res = await request(`${url}/status`, {
      method: 'GET',
      timeoutMs: 1000,
      maxBodyBytes: STATUS_BODY_BYTES,
      signal,
    });
    if (res.status === 404 || res.status === 405) silent.add(agent);
    if (res.status !== 200) return [];
    const body = res.json();
    const rollouts = isPlainObject(body) && Array.isArray(body.rollouts) ? body.rollouts : [];
    const reports: StageReport[] = [];
    for (let i = 0; i < rollouts.length && i < MAX_REPORTS_PER_AGENT; i++) {
      const report = reportOf(agent, rollouts[i]);
      if (report) reports.push(report);
    }
    return reports;
  };
  return {
    async poll(names, signal) {
      const answers = await Promise.allSettled(names.map((name) => pollOne(name, signal)));
      return answers.flatMap((answer) => (answer.status === 'fulfilled' ? answer.value : []));
    },
  };
}

/** The identity of a job the board tracks (the collector's `DispatchJob` has these fields). */
export interface TrackedJob {
  task: number;
  rollout: number;
  agent: string;
  identity: Row;
}

interface InFlight extends InFlightRollout {
  readonly task: number;
  readonly rollout: number;
  readonly agent: string;
}

export interface StatusBoardOptions {
  file: string;
  /** Rollouts this run will send. */
  total: number;
  stallWarningSecs: number;
  source?: StageSource;
  /** Called after each tick with the stalled rollouts' labels (empty when none). */
  onStalled?: (labels: string[]) => void;
  /** Told once when the file cannot be written (the run goes on without it). */
  warn?: (line: string) => void;
  intervalMs?: number;
  now?: () => number;
  /** The run's trace salt (D25), written as `trace_salt` so trace ids stay derivable. */
  traceSalt?: string;
}

/** History points kept at most; when full, every other point is dropped and the spacing doubles. */
const MAX_HISTORY = 240;

const keyOf = (task: unknown, rollout: unknown, attempt: number): string =>
  `${String(task)}\u0000${String(rollout)}\u0000${attempt}`;

export class RunStatusBoard {
  private readonly inFlight = new Map<string, InFlight>();
  private readonly failedByClass: Record<string, number> = {};
  private done = 0;
  private completed = 0;
  private failedTerminal = 0;
  private rewardSum = 0;
  private readonly history: HistoryPoint[] = [];
  private readonly stepLatency = new LatencyByStep();
  private historyEveryMs: number;
  private lastHistoryAt = -Infinity;
  private readonly startedAt: number;
  private readonly startedWall = new Date();
  private timer: NodeJS.Timeout | undefined;
  private polling = false;
  private warned = false;
  private finished = false;
  private readonly now: () => number;
  private readonly intervalMs: number;

  constructor(private readonly options: StatusBoardOptions) {
    this.now = options.now ?? Date.now;
    this.startedAt = this.now();
    this.intervalMs = options.intervalMs ?? 1000;
    this.historyEveryMs = this.intervalMs;
  }

  /** Writes the first file and starts the periodic poll + write. */
  start(): void {
    this.write('running');
    this.timer = setInterval(() => void this.tick(), this.intervalMs);
    this.timer.unref();
  }

  track(job: TrackedJob): void {
    const attempt = attemptOf(job.identity);
    const at = this.now();
    this.inFlight.set(keyOf(job.task, job.rollout, attempt), {
      task: job.task,
      rollout: job.rollout,
      attempt,
      agent: job.agent,
      startedAt: at,
      stage: 'queued',
      step: 0,
      tool: null,
      progressAt: at,
    });
  }

  /** A result was recorded (or dropped, route `nowhere`); its step latencies, if any, join the run's. */
  settle(job: TrackedJob, result: Row, route: Route): void {
    this.inFlight.delete(keyOf(job.task, job.rollout, attemptOf(job.identity)));
    this.done++;
    this.stepLatency.addResult(result[NG.stepLatencySecs]);
    if (route === 'rollouts') {
      this.completed++;
      this.rewardSum += rewardOf(result);
    } else if (route === 'failures') {
      const failureClass = String(result[NG.failureClass]);
      this.failedByClass[failureClass] = (this.failedByClass[failureClass] ?? 0) + 1;
      if (result[NG.failureTerminal] === true) this.failedTerminal++;
    }
  }

  /** Stops the timer and writes the final file (once: later calls do nothing). */
  finish(state: Exclude<RunState, 'running'>): void {
    if (this.finished) return;
    this.finished = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.write(state);
  }

  /** Applies a source's reports; a report for a rollout that is no longer in flight is ignored. */
  apply(reports: readonly StageReport[], at = this.now()): void {
    for (const report of reports) {
      const entry = this.inFlight.get(keyOf(report.task_index, report.rollout_index, report.attempt));
      if (!entry || entry.agent !== report.agent) continue;
      entry.stage = report.stage;
      entry.step = report.step;
      entry.tool = report.tool;
      entry.progressAt = Math.max(entry.startedAt, at - report.since_progress_s * 1000);
    }
  }

  private async tick(): Promise<void> {
    if (!this.polling && this.options.source && this.inFlight.size > 0) {
      this.polling = true;
      const agents = [...new Set([...this.inFlight.values()].map((entry) => entry.agent))];
      const signal = AbortSignal.timeout(this.intervalMs);
      try {
        const reports = await this.options.source.poll(agents, signal);
        if (this.timer) this.apply(reports);
      } catch {
        // Stages are best effort: a slow or restarting agent leaves the last known ones in place.
      } finally {
        this.polling = false;
      }
    }
    if (!this.timer) return;
    this.write('running');
  }

  private stalledLabels(at: number): string[] {
    const limitMs = this.options.stallWarningSecs * 1000;
    const labels: string[] = [];
    for (const entry of this.inFlight.values()) {
      if (at - entry.progressAt <= limitMs) continue;
      const where =
        entry.stage === 'running_tool'
          ? `running_tool ${entry.tool ?? ''}`
          : entry.stage === 'calling_service'
            ? `calling_service step ${entry.step}`
            : entry.stage;
      // No duration in the label: it changes only when the set of stalls or their stages do.
      labels.push(`task ${entry.task} rollout ${entry.rollout} (${where.trim()})`);
    }
    return labels;
  }

  private recordHistory(at: number, force: boolean): void {
    if (!force && at - this.lastHistoryAt < this.historyEveryMs) return;
    this.lastHistoryAt = at;
    this.history.push({
      t_s: seconds(at - this.startedAt),
      done: this.done,
      completed: this.completed,
      failed_by_class: { ...this.failedByClass },
      in_flight: this.inFlight.size,
    });
    if (this.history.length > MAX_HISTORY) {
      // Keep the first and the latest points, drop every other one in between.
      const kept = this.history.filter((_, i) => i % 2 === 0 || i === this.history.length - 1);
      this.history.splice(0, this.history.length, ...kept);
      this.historyEveryMs *= 2;
    }
  }

  /** The status document as written to the file. */
  snapshot(state: RunState): RunStatusDocument {
    const at = this.now();
    this.recordHistory(at, state !== 'running');
    const elapsedS = (at - this.startedAt) / 1000;
    const rate = elapsedS > 0 ? this.done / elapsedS : 0;
    const remaining = Math.max(0, this.options.total - this.done);
    const failed = Object.values(this.failedByClass).reduce((sum, n) => sum + n, 0);
    const limitMs = this.options.stallWarningSecs * 1000;
    const inFlight = [...this.inFlight.values()].map((entry) => ({
      ...inFlightEntry(entry, at),
      stalled: at - entry.progressAt > limitMs,
    }));
    return {
      version: 1,
      state,
      started_at: this.startedWall.toISOString(),
      updated_at: new Date().toISOString(),
      elapsed_s: seconds(at - this.startedAt),
      stall_warning_secs: this.options.stallWarningSecs,
      ...(this.options.traceSalt ? { trace_salt: this.options.traceSalt } : {}),
      totals: {
        total: this.options.total,
        done: this.done,
        completed: this.completed,
        failed,
        failed_retryable: failed - this.failedTerminal,
        failed_terminal: this.failedTerminal,
        failed_by_class: { ...this.failedByClass },
        in_flight: this.inFlight.size,
        stalled: inFlight.filter((entry) => entry.stalled).length,
        rollouts_per_s: Math.round(rate * 1000) / 1000,
        eta_s: state !== 'running' ? 0 : rate > 0 ? Math.round(remaining / rate) : null,
        mean_reward: this.completed > 0 ? this.rewardSum / this.completed : null,
      },
      in_flight: inFlight,
      history: this.history,
      step_latency_secs: this.stepLatency.percentiles(),
    };
  }

  /** Never throws: the status file is a convenience, so a full disk or a bad path costs one warning, not the run. */
  private write(state: RunState): void {
    const document = this.snapshot(state);
    const temporary = `${this.options.file}.tmp-${process.pid}`;
    try {
      writeFileSync(temporary, `${JSON.stringify(document, null, 1)}\n`);
      renameSync(temporary, this.options.file);
    } catch (err) {
      if (!this.warned)
        this.options.warn?.(
          `WARNING: cannot write the status file ${this.options.file} (${(err as Error).message}); the run goes on without it.`,
        );
      this.warned = true;
      rmSync(temporary, { force: true });
    }
    this.options.onStalled?.(state === 'running' ? this.stalledLabels(this.now()) : []);
  }
}
