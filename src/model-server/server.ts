/**
 * The model server (NeMo Gym's `responses_api_models/<impl>`): agents call their model through it, and every call is
 * recorded. It serves
 *
 * - `POST /v1/responses`, `POST /v1/chat/completions`: forwarded to the upstream with the configured model and key,
 *   whole or as a stream of server-sent events relayed as they arrive (./calls.ts);
 * - the same under `/ng-rollout/<rollout_id>/v1/…`: recorded against that rollout, which must be open (else 404,
 *   never recorded against another); under `/ng-rollout/<rollout_id>/training-token-capture/v1/…` (the reference's
 *   path when training capture is on) the record also gets the call's token ids and log-probs (./token-ids.ts);
 * - `POST /ng-rollout/<id>/open` and `POST /ng-rollout/<id>/close`: the remote agent's bookkeeping around a rollout;
 *   close answers the rollout's `ng_model_call_capture` and forgets it (./rollouts.ts bounds what is kept);
 * - `GET /` liveness and `GET /metrics`.
 */
import { App, type GymReply, type GymRequest } from '../http/server.js';
import { modelMetrics, serveMetrics } from '../prometheus/metrics.js';
import type { FifoSemaphore } from '../server/agent-server.js';
import { modelCall, type CallContext } from './calls.js';
import {
  captureMetrics,
  isRolloutId,
  TOKEN_CAPTURE_PATH_SEGMENT,
  type Dialect,
  type ModelCallCapture,
} from './records.js';
import { RolloutBook, type RolloutBookLimits } from './rollouts.js';
import type { Upstream } from './upstream.js';

export interface ModelServerOptions {
  /** Instance name: the records' `model_ref` and the log prefix. */
  name: string;
  upstream: Upstream;
  limits: RolloutBookLimits;
  maxResponseBytes: number;
  dropInputReasoningItems?: boolean;
  /** `/v1/responses` calls go upstream as chat completions (vllm_model; ./responses-chat.ts). */
  translateResponses?: boolean;
  /** Every whole chat answer carries its token ids on its message (the reference's `return_token_id_information`). */
  tokensOnAnswer?: boolean;
  limiter?: FifoSemaphore;
  /** Where failure lines go (stdout by default); never carries a secret. */
  log?: (line: string) => void;
}

export interface ModelServer {
  app: App;
  rollouts: RolloutBook;
  close(): void;
}

export const ROLLOUT_PATH_PREFIX = '/ng-rollout/';
const DIALECT_PATHS: Record<string, Dialect> = { '/v1/responses': 'responses', '/v1/chat/completions': 'chat' };
const ROLLOUT_PATH = /^\/ng-rollout\/([^/]+)(\/.*)$/;

export function createModelServer(options: ModelServerOptions): ModelServer {
  const log = options.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const ctx: CallContext = {
    name: options.name,
    upstream: options.upstream,
    maxResponseBytes: options.maxResponseBytes,
    log: (line) => log(`[${options.name}] ${options.upstream.redact(line)}`),
    ...(options.dropInputReasoningItems ? { dropInputReasoningItems: true } : {}),
    ...(options.limiter ? { limiter: options.limiter } : {}),
    ...(options.translateResponses ? { translateResponses: true } : {}),
    ...(options.tokensOnAnswer ? { tokensOnAnswer: true } : {}),
  };
  const rollouts = new RolloutBook(options.limits, () => {
    modelMetrics.rolloutsExpired.inc();
    modelMetrics.rolloutsOpen.set(rollouts.size);
  });
  const app = new App({ onError: (err) => ctx.log(`unexpected error: ${String(err)}`) });
  app.use((req, next) => (req.path.startsWith(ROLLOUT_PATH_PREFIX) ? rolloutRoute(req, rollouts, ctx) : next()));
  app.get('/', () => ({ body: { status: 'ok' } }));
  for (const [path, dialect] of Object.entries(DIALECT_PATHS)) {
    app.post(path, (req) => modelCall(req, dialect, undefined, ctx));
  }
  serveMetrics(app);
  return {
    app,
    rollouts,
    close: () => {
      rollouts.stop();
      modelMetrics.rolloutsOpen.set(0);
    },
  };
}

function notFound(message: string): GymReply {
  return {
    status: 404,
    body: { error: { message, type: 'rollout_not_open', code: 'rollout_not_open' }, detail: message },
  };
}

/** `/ng-rollout/<id>/…`: open, close, or a model call recorded against the open rollout `<id>`. */
async function rolloutRoute(req: GymRequest, rollouts: RolloutBook, ctx: CallContext): Promise<GymReply> {
  const match = ROLLOUT_PATH.exec(req.path);
  const segment = match ? decodeSegment(match[1]!) : '';
  const capturePrefix = `/${TOKEN_CAPTURE_PATH_SEGMENT}`;
  const captureTokens = match !== null && match[2]!.startsWith(`${capturePrefix}/v1/`);
  const rest = match ? (captureTokens ? match[2]!.slice(capturePrefix.length) : match[2]!) : '';
  const dialect = DIALECT_PATHS[rest];
  if (!match || (dialect === undefined && rest !== '/open' && rest !== '/close')) {
    return { status: 404, body: { detail: 'Not Found' } };
  }
  if (req.method !== 'POST') return { status: 405, body: { detail: 'Method Not Allowed' } };
  if (!isRolloutId(segment)) {
    return notFound(
      `'${segment.slice(0, 100)}' is not a rollout id: letters, digits, '.', '-' and '_', starting with a letter or digit`,
    );
  }
  const id = segment;
  if (rest === '/open') return openRollout(id, rollouts);
  if (rest === '/close') return await closeRollout(id, rollouts);
  const rollout = rollouts.get(id);
  if (!rollout) {
    return notFound(
      `rollout '${id}' is not open on this model server: it was never opened, was closed, or expired after ` +
        'rollout_idle_timeout_secs without calls. Call the model through the base URL of a running rollout.',
    );
  }
  return modelCall(req, dialect!, rollout, ctx, captureTokens);
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

function openRollout(id: string, rollouts: RolloutBook): GymReply {
  const opened = rollouts.openRollout(id);
  modelMetrics.rolloutsOpen.set(rollouts.size);
  if (!opened.ok) {
    return {
      status: 503,
      body: { error: { message: opened.reason, type: 'too_many_rollouts' }, detail: opened.reason },
    };
  }
  return { body: { rollout_id: id, opened: true, replaced: opened.replaced } };
}

async function closeRollout(id: string, rollouts: RolloutBook): Promise<GymReply> {
  const rollout = await rollouts.close(id);
  modelMetrics.rolloutsOpen.set(rollouts.size);
  if (!rollout) return notFound(`rollout '${id}' is not open on this model server (never opened, closed, or expired)`);
  const capture: ModelCallCapture = {
    rollout_id: id,
    metrics: captureMetrics(rollout.calls),
    calls: rollout.calls,
  };
  const gaps = rollout.allGaps();
  if (gaps.length > 0) capture.gaps = gaps;
  return { body: capture };
}
