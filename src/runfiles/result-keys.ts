/**
 * The keys a `/run` result adds to the dataset row it ran: the verdict, the trajectory and a failure's evidence.
 * One list for both readers of it: the remote agent removes them from a row fed back as input (a rollouts file or a
 * failures sidecar), so a stale value can neither collide with nor leak into a new result; `gym eval explain` removes
 * them (and the collector's stamps) from a failure row to give back the row as it was sent.
 */
import { USAGE_FILLED_KEY } from '../contract/echo-fill.js';
import { STEP_LATENCY_KEY } from '../contract/gym-wire.js';
import { TRACE_ID_KEY } from './trace-context.js';

export const RESULT_KEYS = [
  'reward',
  'response',
  'error',
  '_ng_failure_class',
  '_ng_no_persist',
  '_ng_failure_terminal',
  '_ng_failure_judge_error',
  '_ng_partial_response',
  '_ng_rollout_duration_secs',
  '_ng_queue_wait_secs',
  STEP_LATENCY_KEY,
  TRACE_ID_KEY,
  USAGE_FILLED_KEY,
] as const;
