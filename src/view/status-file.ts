/**
 * Reads `<stem>_status.json` (written by the collector, src/collect/status.ts) for the live page and the charts.
 * It comes from disk, so it is bounded (size, entries) and checked field by field; anything off is dropped rather
 * than shown half-parsed. Absent or unreadable means "no live state", never an error page.
 */
import { open } from 'node:fs/promises';
import { isPlainObject } from '../config/types.js';
import { statusPathFor } from '../runfiles/paths.js';
import type { BoardEntry, RunStatusDocument } from '../runfiles/run-status.js';
import { MAX_STEPS } from '../runfiles/step-latency.js';

const MAX_STATUS_BYTES = 16 * 1024 * 1024;
const MAX_IN_FLIGHT_SHOWN = 2000;

/** A board entry as shown: a file without an entry's stage or agent still lists it (`unknown`, empty). */
type ShownEntry = Omit<BoardEntry, 'stage' | 'agent'> & { stage: string; agent: string };

/**
 * What the live page and the charts take from the document (../runfiles/run-status.ts), each field checked: the
 * history and the latencies as written; the state and totals as found, since a reader shows what is there.
 */
export interface RunStatus extends Pick<RunStatusDocument, 'updated_at' | 'history' | 'step_latency_secs'> {
  state: string;
  totals: Record<string, number | null | Record<string, number>>;
  in_flight: ShownEntry[];
  /** In-flight entries beyond those kept here. */
  in_flight_hidden: number;
}

const num = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) ? value : 0);
const counts = (value: unknown): Record<string, number> =>
  isPlainObject(value)
    ? (Object.fromEntries(
        Object.entries(value)
          .filter(([, n]) => typeof n === 'number')
          .slice(0, 100),
      ) as Record<string, number>)
    : {};

export async function readRunStatus(rolloutsPath: string): Promise<RunStatus | undefined> {
  let text: string;
  try {
    const handle = await open(statusPathFor(rolloutsPath), 'r');
    try {
      const { size } = await handle.stat();
      if (size > MAX_STATUS_BYTES) return undefined;
      text = (await handle.readFile()).toString('utf8');
    } finally {
      await handle.close();
    }
  } catch {
    return undefined;
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isPlainObject(doc)) return undefined;
  const inFlight = Array.isArray(doc.in_flight) ? doc.in_flight.filter(isPlainObject) : [];
  const totals = isPlainObject(doc.totals) ? doc.totals : {};
  return {
    state: typeof doc.state === 'string' ? doc.state : 'unknown',
    updated_at: typeof doc.updated_at === 'string' ? doc.updated_at : '',
    totals: Object.fromEntries(
      Object.entries(totals).map(([key, value]) => [
        key,
        key === 'failed_by_class' ? counts(value) : typeof value === 'number' ? value : null,
      ]),
    ),
    in_flight: inFlight.slice(0, MAX_IN_FLIGHT_SHOWN).map((entry) => ({
      task_index: entry.task_index,
      rollout_index: entry.rollout_index,
      attempt: num(entry.attempt),
      agent: typeof entry.agent === 'string' ? entry.agent : '',
      stage: typeof entry.stage === 'string' ? entry.stage : 'unknown',
      step: num(entry.step),
      tool: typeof entry.tool === 'string' ? entry.tool : null,
      elapsed_s: num(entry.elapsed_s),
      since_progress_s: num(entry.since_progress_s),
      stalled: entry.stalled === true,
    })),
    in_flight_hidden: Math.max(0, inFlight.length - MAX_IN_FLIGHT_SHOWN),
    history: (Array.isArray(doc.history) ? doc.history.filter(isPlainObject).slice(0, 10_000) : []).map((point) => ({
      t_s: num(point.t_s),
      done: num(point.done),
      completed: num(point.completed),
      failed_by_class: counts(point.failed_by_class),
      in_flight: num(point.in_flight),
    })),
    step_latency_secs: (Array.isArray(doc.step_latency_secs)
      ? doc.step_latency_secs.filter(isPlainObject).slice(0, MAX_STEPS)
      : []
    )
      .map((entry) => ({
        step: num(entry.step),
        count: num(entry.count),
        p50: num(entry.p50),
        p90: num(entry.p90),
        p99: num(entry.p99),
      }))
      .filter((entry) => entry.step >= 1 && entry.count > 0),
  };
}
