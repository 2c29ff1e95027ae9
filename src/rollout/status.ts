/**
 * The remote agent's live registry of its in-flight `/run` rollouts, served as `GET /status` and polled by the
 * collector (about once a second per agent) to write `<stem>_status.json`. Keeping the stages here rather than
 * streaming events on the `/run` exchange keeps the hot path free of extra I/O: a stage change is a couple of field
 * writes on an object allocated once per rollout, and the cost of reporting is paid by the poller, bounded by
 * `MAX_STATUS_ENTRIES`. The stages and the entry per rollout are the collector's too: src/runfiles/in-flight.ts.
 */
import { performance } from 'node:perf_hooks';
import {
  attemptOf,
  inFlightEntry,
  type InFlightEntry,
  type InFlightRollout,
  type Stage,
} from '../runfiles/in-flight.js';
import { NG } from '../runfiles/ng-keys.js';
import type { Row } from '../runfiles/row.js';

/** One in-flight rollout, updated in place as it moves (never reallocated). */
export class RolloutProgress implements InFlightRollout {
  stage: Stage = 'queued';
  step = 0;
  tool: string | null = null;
  readonly startedAt = performance.now();
  progressAt = this.startedAt;

  constructor(
    readonly task: unknown,
    readonly rollout: unknown,
    readonly attempt: number,
  ) {}

  enter(stage: Stage, step = this.step, tool: string | null = null): void {
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
  rollouts: InFlightEntry[];
}

export class RolloutRegistry {
  private readonly live = new Set<RolloutProgress>();

  /** Registers a rollout of `row` (its `_ng_*` key); `end()` removes it. */
  begin(row: Row): RolloutProgress {
    const progress = new RolloutProgress(row[NG.taskIndex] ?? null, row[NG.rolloutIndex] ?? null, attemptOf(row));
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
    const rollouts: InFlightEntry[] = [];
    for (const entry of this.live) {
      if (rollouts.length >= MAX_STATUS_ENTRIES) break;
      rollouts.push(inFlightEntry(entry, now));
    }
    return { in_flight: this.live.size, truncated: this.live.size - rollouts.length, rollouts };
  }
}
