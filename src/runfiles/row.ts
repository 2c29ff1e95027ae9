/**
 * One row of a run: a dataset line, a `/run` result, a line of `<stem>.jsonl` or its failures sidecar. Rows are
 * JSON objects whose fields belong to the dataset, the environment and the agent, so `Row` says no more than that;
 * readers check the fields they use. `SuccessRow` and `FailureRow` add what tsgym itself writes (the `_ng_*` keys of
 * ./ng-keys.ts and the reference's `reward`, `response`, `error`), for the code that builds rows. It lives in the
 * run files layer so that metrics, the collector, the viewer, the test doubles and the remote agent all name the
 * same types.
 */
import type { ResponseObject } from '../contract/body-schemas.js';
import { placeholderResponse } from '../contract/placeholder-response.js';
import { NG, type NgKey, type NgValues } from './ng-keys.js';

export type Row = Record<string, unknown>;

type NgFields<Key extends NgKey> = { [K in Key]: NgValues[K] };
type OptionalNgFields<Key extends NgKey> = { [K in Key]?: NgValues[K] };

/**
 * What the collector copies from the input row onto every result, overwriting the agent's (docs/design.md, "Result
 * stamps and routing"): the rollout key and `agent_ref`, and the run stamps the row carries.
 */
export type RowStamps = NgFields<typeof NG.taskIndex | typeof NG.rolloutIndex> & {
  agent_ref: unknown;
  skills_ref?: unknown;
} & OptionalNgFields<typeof NG.attemptIndex | typeof NG.rolloutId>;

/** A line of `<stem>.jsonl`: exactly the environment's `/verify` answer plus the collector's stamps (C4). */
export type SuccessRow = Row & { reward: number; response: unknown } & RowStamps &
  OptionalNgFields<typeof NG.usageFilled>;

/**
 * A failure row (docs/design.md, "The failure row"): the input row, reward 0, a placeholder response, the error text
 * and the class; the remote agent adds the evidence it has (D2), a queue worker its name, the collector its stamps.
 */
export type FailureRow = Row & { reward: number; response: ResponseObject; error: string } & NgFields<
    typeof NG.failureClass
  > &
  OptionalNgFields<
    | typeof NG.failureTerminal
    | typeof NG.failureCode
    | typeof NG.partialResponse
    | typeof NG.stepLatencySecs
    | typeof NG.usageFilled
    | typeof NG.queueWaitSecs
    | typeof NG.rolloutDurationSecs
    | typeof NG.traceId
    | typeof NG.worker
  >;

/** The routing flags a stale input row may carry; a failure row carries only the ones set for it. */
const ROUTING_KEYS = [
  NG.failureClass,
  NG.failureCode,
  NG.failureTerminal,
  NG.noPersist,
  NG.failureJudgeError,
  'error',
] as const;

/**
 * The failure row of `row`: a copy with the stale routing flags removed, then `reward` 0, the placeholder
 * `response`, the `error`, the class, the error's stable code when there is one and, when retrying cannot help, the
 * terminal flag, in that order after the row's own keys (keys the row already has keep their place). Evidence keys a
 * caller adds go after these.
 */
export function failureRow(
  row: Row,
  failureClass: string,
  error: string,
  terminal: boolean,
  code?: string,
): FailureRow {
  const copy: Row = { ...row };
  for (const key of ROUTING_KEYS) delete copy[key];
  // A re-fed failure row's latencies are not this attempt's (and must not reach the run status).
  delete copy[NG.stepLatencySecs];
  const out = Object.assign(copy, {
    reward: 0,
    response: placeholderResponse(),
    error,
    [NG.failureClass]: failureClass,
  });
  if (code !== undefined) out[NG.failureCode] = code;
  if (terminal) out[NG.failureTerminal] = true;
  return out;
}

/** The row's `_ng_failure_class` (a failure row's class: config, retryable, terminal kinds), if it has one. */
export function failureClassOf(row: Row): string | undefined {
  const failureClass = row[NG.failureClass];
  return typeof failureClass === 'string' ? failureClass : undefined;
}

/**
 * What spans, json log events and metrics call a finished rollout: its failure class, else `completed` when it went
 * to the rollouts file and `not_persisted` when it went anywhere else (`route` as src/collect/routing.ts names it).
 */
export function outcomeClassOf(row: Row, route: string): string {
  return failureClassOf(row) ?? (route === 'rollouts' ? 'completed' : 'not_persisted');
}
