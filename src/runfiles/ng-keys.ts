/**
 * The `_ng_*` keys of a row, in one table: each key's name in code, its text on the row, the type of its value as
 * tsgym writes it, and what it means. Code names a key `NG.taskIndex`, never the string, so a key is spelled once and
 * a reader finds every place that writes or reads it. The rows themselves stay plain JSON objects (the reference's
 * format, see docs/design.md); `NgValues` types their `_ng_*` fields for the row types in ./row.ts.
 *
 * A value read from a file is still `unknown` until checked: these are the types tsgym writes, not a promise about
 * what a file holds.
 */
import type { ResponseObject } from '../contract/body-schemas.js';
import type { USAGE_FILLED_KEY } from '../contract/echo-fill.js';
import { STEP_LATENCY_KEY } from '../contract/gym-wire.js';

/** What a key's value is, by name: the table says `value: 'seconds'` and `NgValues` turns it into `number`. */
interface ValueKinds {
  /** A whole number. */
  integer: number;
  /** A duration in seconds, to the millisecond. */
  seconds: number;
  /** One duration in seconds per loop step, in order. */
  secondsPerStep: number[];
  text: string;
  /** A flag: `true` when set, absent otherwise (never `false`). */
  flag: true;
  /** A Responses object (src/contract/body-schemas.ts). */
  response: ResponseObject;
}

interface KeyEntry {
  readonly key: `_ng_${string}`;
  readonly value: keyof ValueKinds;
  readonly meaning: string;
}

const NG_KEYS = {
  taskIndex: {
    key: '_ng_task_index',
    value: 'integer',
    meaning: 'the task a row runs: kept from the input, else numbered by distinct input line (collector stamp)',
  },
  rolloutIndex: {
    key: '_ng_rollout_index',
    value: 'integer',
    meaning: "which of the task's repeats the row is, counting from 0 per task (collector stamp)",
  },
  attemptIndex: {
    key: '_ng_attempt_index',
    value: 'integer',
    meaning: "the attempt's prior attempts at this rollout key: set on a retry, absent on a first attempt",
  },
  rolloutId: {
    key: '_ng_rollout_id',
    value: 'text',
    meaning: "the caller's own id for the rollout (NeMo Gym's capture key), copied onto the result when present",
  },
  failureClass: {
    key: '_ng_failure_class',
    value: 'text',
    meaning: 'what kind of failure a failure row records (e.g. remote_agent_error); its presence routes the row',
  },
  failureCode: {
    key: '_ng_failure_code',
    value: 'text',
    meaning:
      "the failure's stable error code (e.g. REMOTE_TIMEOUT, REMOTE_AGENT_RUN_TIMEOUT): what tools read to tell kinds of failure apart, never the message",
  },
  failureTerminal: {
    key: '_ng_failure_terminal',
    value: 'flag',
    meaning: 'retrying cannot help: resume never runs this rollout key again',
  },
  failureJudgeError: {
    key: '_ng_failure_judge_error',
    value: 'text',
    meaning: "the judge's error beside the class `judge_failed`, written by NeMo Gym environments that use a judge",
  },
  noPersist: {
    key: '_ng_no_persist',
    value: 'flag',
    meaning: 'the result is written nowhere (resume runs it again)',
  },
  partialResponse: {
    key: '_ng_partial_response',
    value: 'response',
    meaning: "a failure row's trajectory up to the failure, absent when no step returned (D2)",
  },
  stepLatencySecs: {
    key: STEP_LATENCY_KEY,
    value: 'secondsPerStep',
    meaning: "each loop step's service latency: on failure rows; on a success result only until the collector folds it",
  },
  usageFilled: {
    // Only the type is imported: echo-fill.ts loads zod, which a collection of ordinary rows never loads.
    key: '_ng_usage_filled' satisfies typeof USAGE_FILLED_KEY,
    value: 'flag',
    meaning: 'some usage detail objects were missing and filled with zeros (D24)',
  },
  queueWaitSecs: {
    key: '_ng_queue_wait_secs',
    value: 'seconds',
    meaning: 'how long the failed rollout waited for a concurrency slot in the agent (D2)',
  },
  rolloutDurationSecs: {
    key: '_ng_rollout_duration_secs',
    value: 'seconds',
    meaning: 'how long the failed rollout ran in the agent once admitted (D2)',
  },
  traceId: {
    key: '_ng_trace_id',
    value: 'text',
    meaning: "the W3C trace id of the failed attempt (D25); a success's is derived from the status file's salt",
  },
  worker: {
    key: '_ng_worker',
    value: 'text',
    meaning: 'the queue worker that ran a failed rollout (`<host>/<pid>` or its worker_id)',
  },
} as const satisfies Record<string, KeyEntry>;

type KeyTable = typeof NG_KEYS;

/** Each `_ng_*` key by its name in code: `row[NG.taskIndex]`. */
export const NG = Object.freeze(
  Object.fromEntries(Object.entries(NG_KEYS).map(([name, entry]) => [name, entry.key])),
) as { readonly [Name in keyof KeyTable]: KeyTable[Name]['key'] };

/** The text of any `_ng_*` key. */
export type NgKey = KeyTable[keyof KeyTable]['key'];

/** The type of each `_ng_*` key's value on a row as tsgym writes it, by the key's text. */
export type NgValues = {
  [Name in keyof KeyTable as KeyTable[Name]['key']]: ValueKinds[KeyTable[Name]['value']];
};
