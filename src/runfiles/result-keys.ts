/**
 * The keys a `/run` result adds to the dataset row it ran: the verdict, the trajectory and a failure's evidence.
 * One list for both readers of it: the remote agent removes them from a row fed back as input (a rollouts file or a
 * failures sidecar), so a stale value can neither collide with nor leak into a new result; `gym eval explain` removes
 * them (and the collector's stamps) from a failure row to give back the row as it was sent.
 */
import { NG } from './ng-keys.js';

export const RESULT_KEYS = [
  'reward',
  'response',
  'error',
  NG.failureClass,
  NG.failureCode,
  NG.noPersist,
  NG.failureTerminal,
  NG.failureJudgeError,
  NG.partialResponse,
  NG.rolloutDurationSecs,
  NG.queueWaitSecs,
  NG.stepLatencySecs,
  NG.traceId,
  NG.usageFilled,
  // The model server's records of the rollout's calls (src/model-server/records.ts, MODEL_CALL_CAPTURE_KEY).
  'ng_model_call_capture',
] as const;
