import { performance } from 'node:perf_hooks';

/**
 * The remote agent's live registry of its in-flight `/run` rollouts, served as `GET /status` and polled by the
 * collector (about once a second per agent) to write `<stem>_status.json`. Keeping the stages here rather than
 * streaming events on the `/run` exchange keeps the hot path free of extra I/O: a stage change is a couple of field
 * writes on an object allocated once per rollout, and the cost of reporting is paid by the poller, bounded by
 * `MAX_STATUS_ENTRIES`.
 *
 * Stages, in order: `queued` (waiting for a concurrency slot), `seeding`, `calling_service` (step k), `running_tool`
 * (tool NAME), `retrying_overload` (the service answered 429/503 with Retry-After; waiting before step k again),
 * `verifying`. Progress is any stage or step change; `since_progress_s` measures how long none happened.
 */

export type RolloutStage = 'queued' | 'seeding' | 'calling_service' | 'running_tool' | 'retrying_overload' | 'verifying';

/** One in-flight rollout, updated in place as it moves (never reallocated). */
export class RolloutProgress {
  stage: RolloutStage = 'queued';
  /** The loop step being worked on (0 before the first service call). */
  step = 0;
  tool: string | null = null;
  readonly startedAt = performance.now();
  progressAt = this.startedAt;

  constructor(
    readonly task: unknown,
    readonly rollout: unknown,
    readonly attempt: number,
  ) {}

  enter(stage: RolloutStage, step = this.step, tool: string | null = null): void {
    this.stage = stage;
    this.step = step;
    this.tool = tool;
    this.progressAt = performance.now();
  }
}

/** Entries in one `/status` answer at most; more in flight are counted in `truncated`. */
export const MAX_STATUS_ENTRIES = 10_000;

/** The JSON body of `GET /status` (also what the collector parses). */
export interface AgentStatusBody {
  in_flight: number;
  truncated: number;
  rollouts: Array<{
    task_index: unknown;
    rollout_index: unknown;
    attempt: number;
    stage: RolloutStage;
    step: number;
    tool: string | null;
    elapsed_s: number;
    since_progress_s: number;
  }>;
}

export class RolloutRegistry {
  private readonly live = new Set<RolloutProgress>();

  /** Registers a rollout of `row` (its `_ng_*` key); `end()` removes it. */
  begin(row: Record<string, unknown>): RolloutProgress {
    const attempt = typeof row._ng_attempt_index === 'number' ? row._ng_attempt_index : 0;
    const progress = new RolloutProgress(row._ng_task_index ?? null, row._ng_rollout_index ?? null, attempt);
    this.live.add(progress);
    return progress;
  }

  end(progress: RolloutProgress): void {
    this.live.delete(progress);
  }

  get size(): number {
    return this.live.size;
  }

  snapshot(now = performance.now()): AgentStatusBody {
    const rollouts: AgentStatusBody['rollouts'] = [];
    for (const entry of this.live) {
      if (rollouts.length >= MAX_STATUS_ENTRIES) break;
      rollouts.push({
        task_index: entry.task,
        rollout_index: entry.rollout,
        attempt: entry.attempt,
        stage: entry.stage,
        step: entry.step,
        tool: entry.tool,
        elapsed_s: seconds(now - entry.startedAt),
        since_progress_s: seconds(now - entry.progressAt),
      });
    }
    return { in_flight: this.live.size, truncated: this.live.size - rollouts.length, rollouts };
  }
}

function seconds(ms: number): number {
  return Math.round(ms) / 1000;
}
