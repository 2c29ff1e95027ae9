import type http from 'node:http';
import { serializeSetCookie } from '../http/cookies.js';
import { App, HttpError, type GymRequest, type GymReply } from '../http/server.js';
import { functionTools, normalizeInput, type ConversationItem, type FunctionTool } from './conversation.js';
import { isRecord } from '../contract/records.js';
import { MODEL_BASE_URL_HEADER } from '../contract/gym-wire.js';
import { checkDecision, DecisionError, type Decision } from './decision.js';
import { buildResponse } from './response.js';
import { RolloutStateStore, type RolloutStateOptions } from './rollout-state.js';

/** What `decide` gets besides the conversation and the tools. */
export interface DecideContext {
  /** An object kept for this rollout across its calls (the kit ties it to the rollout with a cookie). */
  state: Record<string, unknown>;
  /** This rollout's id (the cookie's value). */
  rolloutId: string;
  /** 1 on the first call of the rollout, 2 on the next, … */
  step: number;
  /** The whole request body (`responses_create_params` with the conversation so far in `input`). */
  request: Record<string, unknown>;
  /** Aborted when the caller hangs up (Gym timed out or gave up): stop spending on this call. */
  signal: AbortSignal;
  /**
   * Where this rollout's model calls should go, when Gym says (a remote agent with `model_server`): an
   * OpenAI-compatible base URL (`…/ng-rollout/<rollout id>.<random>/v1`; append `/chat/completions` or `/responses`). Calls
   * through it are recorded on the rollout's row. Undefined when Gym sent none: use your own model URL.
   */
  modelBaseUrl?: string;
}

/**
 * The brain of a service: look at the conversation so far and either ask for tools or finish.
 * Sync or async; throwing answers HTTP 500 with the error's message (Gym records a retryable failure).
 */
export type Decide = (
  conversation: ConversationItem[],
  tools: FunctionTool[],
  ctx: DecideContext,
) => Decision | Promise<Decision>;

export interface ServiceOptions {
  /** Reported as every response's `model`. Default `tsgym-service`. */
  brainName?: string;
  /** The per-rollout cookie. Default `tsgym_rollout`. */
  cookieName?: string;
  state?: RolloutStateOptions;
  /** Where one-line failure reports go. Default: stderr. */
  log?: (line: string) => void;
}

export interface ServeOptions extends ServiceOptions {
  /** Default 9000; 0 picks a free port. */
  port?: number;
  /** Default 127.0.0.1; use 0.0.0.0 to accept calls from other machines. */
  host?: string;
}

export interface RunningService {
  url: string;
  port: number;
  close(): Promise<void>;
}

export const RESPONSES_PATH = '/v1/responses';

/** The service as an `App` (POST /v1/responses), for callers that compose tsgym servers. */
export function createServiceApp(decide: Decide, options: ServiceOptions = {}): App {
  const brainName = options.brainName ?? 'tsgym-service';
  const cookieName = options.cookieName ?? 'tsgym_rollout';
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const rollouts = new RolloutStateStore(options.state);
  const app = new App();

  app.post(RESPONSES_PATH, async (req: GymRequest): Promise<GymReply> => {
    const request = readRequest(req);
    const conversation = normalizeInput(request.input as string | ConversationItem[]);
    const tools = functionTools(request.tools);
    const rollout = rollouts.enter(req.cookies[cookieName]);
    let decision;
    try {
      const raw = await decide(conversation, tools, {
        state: rollout.state,
        rolloutId: rollout.id,
        step: rollout.step,
        request,
        signal: req.signal,
        ...modelBaseUrlOf(req),
      });
      decision = checkDecision(raw, new Set(tools.map((tool) => tool.name)));
    } catch (err) {
      const reason = err instanceof DecisionError ? err.message : `decide() failed: ${errorText(err)}`;
      log(`[${brainName}] ${RESPONSES_PATH} → 500: ${reason}`);
      throw new HttpError(500, reason);
    }
    const body = buildResponse(decision, {
      brainName,
      tools,
      parallelToolCalls: typeof request.parallel_tool_calls === 'boolean' ? request.parallel_tool_calls : true,
    });
    return { body, setCookies: rollout.isNew ? [serializeSetCookie(cookieName, rollout.id)] : [] };
  });
  return app;
}

/** A `node:http` request listener serving POST /v1/responses: mount it in any node:http server. */
export function createHandler(
  decide: Decide,
  options: ServiceOptions = {},
): (req: http.IncomingMessage, res: http.ServerResponse) => void {
  return createServiceApp(decide, options).listener;
}

/** Start a service on `host:port` (default 127.0.0.1:9000). */
export async function serve(decide: Decide, options: ServeOptions = {}): Promise<RunningService> {
  const listening = await createServiceApp(decide, options).listen(options.port ?? 9000, options.host ?? '127.0.0.1');
  return { url: listening.url, port: listening.port, close: listening.close };
}

/**
 * The request checks a service needs before its brain runs. Deliberately loose beyond them: Gym may send any
 * create-param the dataset row holds, and a service should not reject a field it does not use.
 */
function readRequest(req: GymRequest): Record<string, unknown> {
  const body = req.json(); // malformed JSON answers 400 with the parser's reason
  if (!isRecord(body)) {
    const kind = body === undefined ? 'an empty body' : Array.isArray(body) ? 'a list' : typeof body;
    throw new HttpError(422, `request body must be a JSON object (the Responses create-params), got ${kind}`);
  }
  const input = body.input;
  if (input === undefined) throw new HttpError(422, 'input: required (a string or a list of items)');
  if (typeof input !== 'string') {
    if (!Array.isArray(input)) throw new HttpError(422, 'input: expected a string or a list of items');
    const bad = input.findIndex((item) => !isRecord(item));
    if (bad >= 0) throw new HttpError(422, `input[${bad}]: expected an object (a message or another item)`);
  }
  if (body.tools !== undefined && !Array.isArray(body.tools)) {
    throw new HttpError(422, 'tools: expected a list of tool schemas');
  }
  return body;
}

/** The rollout's model URL from Gym's header (`x-gym-model-base-url`), when it is an http(s) URL. */
function modelBaseUrlOf(req: GymRequest): { modelBaseUrl?: string } {
  const value = req.headers[MODEL_BASE_URL_HEADER];
  const url = Array.isArray(value) ? value[0] : value;
  return url !== undefined && /^https?:\/\/\S+$/.test(url) ? { modelBaseUrl: url.replace(/\/+$/, '') } : {};
}

function errorText(err: unknown): string {
  if (err instanceof Error) return err.message || err.name;
  return String(err);
}
