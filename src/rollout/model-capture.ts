/**
 * The remote agent's side of a model server (`model_server` in its config): each rollout opens its id on the model
 * server before the service is first called, hands the service the rollout's model base URL on every call, and after
 * verify (or a failure) closes the id and attaches the records to the row as `ng_model_call_capture`.
 *
 * Each dispatch opens a key of its own on the model server, the rollout id plus a random suffix, and the row's capture
 * names the rollout id. The id alone names an attempt only as far as the collector counts attempts: a collector
 * killed mid-rollout resumes it under the same index while the abandoned service may still be calling the model, and
 * those late calls must find their key closed (404) rather than land in the new attempt's capture.
 *
 * Capture never fails a rollout that otherwise succeeded: a close that fails leaves the row with an empty capture and
 * a gap saying why. An open that fails does fail it (retryable): the service would be handed a URL that answers 404.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { RetryableRolloutError } from '../errors.js';
import { callInternal } from '../http/client.js';
import {
  captureMetrics,
  MAX_ROLLOUT_ID_LENGTH,
  rolloutIdOfRow,
  TOKEN_CAPTURE_PATH_SEGMENT,
  type CaptureGap,
  type ModelCallCapture,
} from '../model-server/records.js';
import type { Row } from '../runfiles/row.js';

/** The model server a remote agent's rollouts call through: its instance name and its `http://host:port`. */
export interface ModelServerTarget {
  name: string;
  url: string;
  /** `token_id_capture`: calls go through the rollout's training-token-capture path (token ids recorded). */
  tokenIdCapture?: boolean;
}

/** The base URL a service is handed for a rollout's model calls (the reference's `/ng-rollout/<id>/…` shape). */
export function rolloutModelBaseUrl(modelServerUrl: string, rollout: { id: string; tokenCapture: boolean }): string {
  const capture = rollout.tokenCapture ? `/${TOKEN_CAPTURE_PATH_SEGMENT}` : '';
  return `${modelServerUrl}/ng-rollout/${rollout.id}${capture}/v1`;
}

const BOOKKEEPING_TIMEOUT_MS = 30_000;
const MAX_CAPTURE_BYTES = 64 * 1024 * 1024;
const KEY_SUFFIX_BYTES = 6;

export class RolloutModelCapture {
  readonly rolloutId: string;
  /** This dispatch's path segment on the model server: `<rollout id>.<12 hex>`, a valid rollout id itself. */
  private readonly key: string;
  private opened = false;

  constructor(
    private readonly target: ModelServerTarget,
    row: Row,
  ) {
    // A hand-made `/run` has no indices: a fresh id still keeps its calls apart from every other rollout's.
    this.rolloutId = rolloutIdOfRow(row) ?? `gym-${randomUUID()}`;
    const suffix = `.${randomBytes(KEY_SUFFIX_BYTES).toString('hex')}`;
    this.key = `${this.rolloutId.slice(0, MAX_ROLLOUT_ID_LENGTH - suffix.length)}${suffix}`;
  }

  /** What the service is told: where this rollout's model calls go. */
  get modelBaseUrl(): string {
    return rolloutModelBaseUrl(this.target.url, { id: this.key, tokenCapture: this.tokenIdCapture });
  }

  get tokenIdCapture(): boolean {
    return this.target.tokenIdCapture === true;
  }

  async open(signal: AbortSignal): Promise<void> {
    const where = `${this.target.url}/ng-rollout/${this.key}/open`;
    let status: number;
    let text: string;
    try {
      const res = await callInternal(where, {
        json: {},
        timeoutMs: BOOKKEEPING_TIMEOUT_MS,
        signal,
        maxBodyBytes: 65536,
      });
      status = res.status;
      text = res.text().slice(0, 300);
    } catch (err) {
      throw new RetryableRolloutError(
        'MODEL_SERVER_UNREACHABLE',
        `could not open the rollout on the model server '${this.target.name}' (${(err as Error).message}); is it running?`,
        { cause: err },
      );
    }
    if (status !== 200) {
      throw new RetryableRolloutError(
        'MODEL_SERVER_OPEN_FAILED',
        `the model server '${this.target.name}' refused to open rollout '${this.rolloutId}': HTTP ${status}: ${text}`,
      );
    }
    this.opened = true;
  }

  /** Close the rollout on the model server and give back its capture; never throws. */
  async close(): Promise<ModelCallCapture> {
    if (!this.opened)
      return this.empty({ code: 'model_call_capture_no_records', detail: 'the rollout ended before it was opened' });
    try {
      const res = await callInternal(`${this.target.url}/ng-rollout/${this.key}/close`, {
        json: {},
        timeoutMs: BOOKKEEPING_TIMEOUT_MS,
        maxBodyBytes: MAX_CAPTURE_BYTES,
      });
      if (res.status !== 200) {
        return this.empty({ code: 'model_call_capture_unreadable', detail: `close answered HTTP ${res.status}` });
      }
      const capture = res.json() as ModelCallCapture;
      if (!Array.isArray(capture.calls)) {
        return this.empty({ code: 'model_call_capture_unreadable', detail: 'close answered no calls' });
      }
      return { ...capture, rollout_id: this.rolloutId };
    } catch (err) {
      return this.empty({ code: 'model_call_capture_unreadable', detail: (err as Error).message.slice(0, 300) });
    }
  }

  private empty(gap: CaptureGap): ModelCallCapture {
    return { rollout_id: this.rolloutId, metrics: captureMetrics([]), calls: [], gaps: [gap] };
  }
}
