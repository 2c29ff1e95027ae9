/**
 * The schema of `<stem>_status.json` (docs/artefacts.md): the collector writes it (src/collect/status.ts) and the
 * viewer reads it (src/view/status-file.ts). Both name these types, which live here, below both, so the writer's
 * document and what the reader takes from it cannot drift apart.
 */
import type { InFlightEntry } from './in-flight.js';
import type { StepPercentiles } from './step-latency.js';

export type RunState = 'running' | 'finished' | 'interrupted';

/** One point of the history: cumulative counts at `t_s` seconds into the run. */
export interface HistoryPoint {
  t_s: number;
  done: number;
  completed: number;
  failed_by_class: Record<string, number>;
  in_flight: number;
}

export interface RunTotals {
  total: number;
  done: number;
  completed: number;
  failed: number;
  failed_retryable: number;
  failed_terminal: number;
  failed_by_class: Record<string, number>;
  in_flight: number;
  stalled: number;
  rollouts_per_s: number;
  /** Seconds left at the current rate; null while nothing is done yet. */
  eta_s: number | null;
  /** Over completed rollouts; null before the first one. */
  mean_reward: number | null;
}

/** An in-flight rollout as the collector's board lists it. */
export interface BoardEntry extends InFlightEntry {
  /** No stage or step change for longer than `stall_warning_secs`. */
  stalled: boolean;
}

/** The whole document, in the order the collector writes its keys. */
export interface RunStatusDocument {
  version: 1;
  state: RunState;
  started_at: string;
  updated_at: string;
  elapsed_s: number;
  stall_warning_secs: number;
  /** The run's trace salt (D25), so trace ids stay derivable; absent when the run has none. */
  trace_salt?: string;
  totals: RunTotals;
  in_flight: BoardEntry[];
  history: HistoryPoint[];
  /** Per-step service latency over the run (empty when no result carried any). */
  step_latency_secs: StepPercentiles[];
}
