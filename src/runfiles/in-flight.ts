/**
 * One in-flight rollout as tsgym reports it, in both documents that list them: an agent's `GET /status` answer
 * (the remote agent's registry) and `<stem>_status.json` (the collector's board, fed from those answers). The
 * stages a rollout goes through, the attempt a row is, and the entry both write per rollout live here, below the
 * collector and the agents, because the remote agent may not import the collector.
 */
import { NG } from './ng-keys.js';
import type { Row } from './row.js';

/**
 * Stages, in order: `queued` (waiting for a concurrency slot; also what the collector shows until an agent says
 * more), `seeding`, `calling_service` (step k), `running_tool` (tool NAME), `retrying_overload` (the service
 * answered 429/503 with Retry-After; waiting before step k again), `verifying`.
 */
export const STAGES = [
  'queued',
  'seeding',
  'calling_service',
  'running_tool',
  'retrying_overload',
  'verifying',
] as const;
export type Stage = (typeof STAGES)[number];

/** The attempt a row is: its `_ng_attempt_index`, 0 on a first attempt. */
export function attemptOf(row: Row): number {
  const attempt = row[NG.attemptIndex];
  return typeof attempt === 'number' ? attempt : 0;
}

/** A rollout as its tracker holds it. Times are milliseconds on the tracker's own clock. */
export interface InFlightRollout {
  readonly task: unknown;
  readonly rollout: unknown;
  readonly attempt: number;
  /** The agent running it: the collector's entries name it; an agent's own leave it out. */
  readonly agent?: string;
  stage: Stage;
  /** The loop step being worked on (0 before the first service call). */
  step: number;
  tool: string | null;
  readonly startedAt: number;
  /** When the stage or step last changed. */
  progressAt: number;
}

/** A rollout's entry in either document. */
export interface InFlightEntry {
  task_index: unknown;
  rollout_index: unknown;
  attempt: number;
  agent?: string;
  stage: Stage;
  step: number;
  tool: string | null;
  elapsed_s: number;
  /** How long no stage or step change happened. */
  since_progress_s: number;
}

export function inFlightEntry(rollout: InFlightRollout, now: number): InFlightEntry {
  return {
    task_index: rollout.task,
    rollout_index: rollout.rollout,
    attempt: rollout.attempt,
    ...(rollout.agent === undefined ? {} : { agent: rollout.agent }),
    stage: rollout.stage,
    step: rollout.step,
    tool: rollout.tool,
    elapsed_s: seconds(now - rollout.startedAt),
    since_progress_s: seconds(now - rollout.progressAt),
  };
}

/** Milliseconds as seconds, to the millisecond, as every status document writes durations. */
export function seconds(ms: number): number {
  return Math.round(ms) / 1000;
}
