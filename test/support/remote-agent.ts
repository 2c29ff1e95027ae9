/**
 * Wiring for the remote agent's tests: a real agent on a loopback port, a scripted service (src/testing), and a
 * real resources server — either the counter environment or a recording one built with `createResourcesServer`
 * that remembers every request it got (path, body, cookies). Nothing is mocked; every hop is HTTP.
 */
import { registerLocalServer, unregisterLocalServer } from '../../src/http/in-process.js';
import { z } from 'zod';
import { COUNTER_TOOLS } from '../../src/counter/tools.js';
import { request } from '../../src/http/client.js';
import type { App, Listening } from '../../src/http/server.js';
import {
  createResourcesServer,
  tool,
  type SessionContext,
  type Tool,
  type VerifyRequest,
  type VerifyResult,
} from '../../src/server/resources-server.js';
import type { Row } from '../../src/runfiles/row.js';
import { normalizeInput, serve, type ConversationItem, type Decide } from '../../src/service/index.js';
import {
  startScriptedService,
  type ScriptedService,
  type ServiceCall,
  type ServiceScript,
} from '../../src/testing/index.js';
import {
  createRemoteAgent,
  type RemoteAgent,
  type RemoteAgentOptions,
} from '../../responses_api_agents/remote_agent/app.js';
import { parseRemoteAgentConfig } from '../../responses_api_agents/remote_agent/config.js';
import { gate, type Gate } from './wait.js';

// ---------------------------------------------------------------------------------------------------
// Rows

/** The Responses object in a `/run` result: the trajectory, and what the tests compare of the rest. */
export interface ResultResponse extends Row {
  id: string;
  model: string;
  output: ConversationItem[];
  usage?: unknown;
}

/**
 * What `/run` answers, as the tests read it: the row's own fields plus the reward and the trajectory, and on a
 * failure the reason, the partial trajectory and the failure stamps.
 */
export interface RunResult extends Row {
  reward: number;
  response: ResultResponse;
  error?: string;
  _ng_failure_class?: string;
  _ng_failure_terminal?: boolean;
  _ng_partial_response?: ResultResponse;
  _ng_step_latency_secs?: number[];
}

/** What the agent answers when a `/v1/responses` or `/aggregate_metrics` call fails. */
export interface AgentErrorBody {
  error: string;
  /** `retryable` or `terminal` (on `/v1/responses`). */
  error_class?: string;
}

/** A dataset row: the create-params of its rollout (a conversation and the tools), and whatever else it carries. */
export interface DatasetRow extends Row {
  responses_create_params: { input: ConversationItem[]; tools: readonly unknown[] };
}

/** A row in the dataset's shape: create-params, an answer key, and dataset extras. */
export function basicRow(text = 'what is 6 x 7?', extra: Row = {}): DatasetRow {
  return {
    responses_create_params: { input: [{ role: 'user', content: text }], tools: COUNTER_TOOLS },
    verifier_metadata: { expected_answer: '42' },
    initial_count: 3,
    expected_count: 6,
    ...extra,
  };
}

// ---------------------------------------------------------------------------------------------------
// A recording resources server

export interface EnvRequest {
  path: string;
  /** The parsed JSON body (its text when it is not JSON). */
  body: unknown;
  cookies: Record<string, string>;
}

export interface RecordingEnvOptions {
  /** Reward (and extras) for a verify call; 1.0 by default. Throw an HttpError to fail it. */
  verify?: (body: VerifyRequest, ctx: SessionContext) => VerifyResult | Promise<VerifyResult>;
  /** Called on seed; throw an HttpError to fail it. */
  seed?: (row: Row) => void;
  /** Extra tools besides increment_counter / get_counter_value. */
  tools?: Record<string, Tool>;
  /** Extra `Set-Cookie` values to add to the reply of a path, e.g. `{'/increment_counter': ['tool_session=t1']}`. */
  setCookies?: Record<string, string[]>;
}

export interface RecordingEnv {
  name: string;
  url: string;
  requests: EnvRequest[];
  /** Requests to one path. */
  to(path: string): EnvRequest[];
  close(): Promise<void>;
}

export const ENV_NAME = 'recording_env';
export const ENV_COOKIE = `RecordingResourcesServer___${ENV_NAME}`;

export async function startRecordingEnv(options: RecordingEnvOptions = {}): Promise<RecordingEnv> {
  const counters = new Map<string, number>();
  const app = createResourcesServer({
    className: 'RecordingResourcesServer',
    instanceName: ENV_NAME,
    seed: tool(z.looseObject({}), (row, { sessionId }) => {
      options.seed?.(row);
      const initial = typeof row.initial_count === 'number' ? row.initial_count : 0;
      if (!counters.has(sessionId)) counters.set(sessionId, initial);
      return {};
    }),
    tools: {
      increment_counter: tool(z.looseObject({ count: z.int() }), ({ count }, { sessionId }) => {
        counters.set(sessionId, (counters.get(sessionId) ?? 0) + count);
        return { success: true };
      }),
      get_counter_value: tool(z.unknown(), (_args, { sessionId }) => ({ count: counters.get(sessionId) ?? 0 })),
      ...options.tools,
    },
    verify: options.verify ?? (() => ({ reward: 1.0 })),
  });
  const requests: EnvRequest[] = [];
  app.use(async (req, next) => {
    let body: unknown;
    try {
      body = req.json();
    } catch {
      body = req.body.toString('utf8');
    }
    requests.push({ path: req.path, body, cookies: { ...req.cookies } });
    const reply = await next();
    const extra = options.setCookies?.[req.path];
    if (extra) reply.setCookies = [...(reply.setCookies ?? []), ...extra];
    return reply;
  });
  return listenEnv(app, ENV_NAME, requests);
}

/**
 * Serve any `App` as the environment (for envs the recording server cannot express), on `port` if given. With
 * `TSGYM_TEST_ENV_IN_PROCESS=1` (test/run.sh's second pass over the agent's tests) it is also registered as a
 * co-located server, so the agent reaches it in-process (D23) and every assertion holds for that path too; closing
 * it unregisters it first, as a stopping co-location host does.
 */
export async function listenEnv(app: App, name: string, requests: EnvRequest[] = [], port = 0): Promise<RecordingEnv> {
  const listening: Listening = await app.listen(port);
  const inProcess = process.env.TSGYM_TEST_ENV_IN_PROCESS === '1';
  if (inProcess) registerLocalServer(listening.url, app);
  return {
    name,
    url: listening.url,
    requests,
    to: (path) => requests.filter((r) => r.path === path),
    close: () => {
      if (inProcess) unregisterLocalServer(listening.url);
      return listening.close();
    },
  };
}

// ---------------------------------------------------------------------------------------------------
// The harness

export interface HarnessOptions {
  /** The service script, or an already started service. */
  service: ServiceScript | ScriptedService;
  /** Recording env options, or an env already started. */
  env?: RecordingEnvOptions | RecordingEnv;
  /** Keys of the agent's config block; `agent_base_url` defaults to the service's URL. */
  config?: Row;
  agent?: Partial<Omit<RemoteAgentOptions, 'config' | 'resourcesServer'>>;
}

export interface Harness {
  agent: RemoteAgent;
  url: string;
  service: ScriptedService;
  env: RecordingEnv;
  /** Every line the agent logged. */
  logs: string[];
  /**
   * POST to the agent; asserts nothing about the status, returns it with the parsed body (its text when it is not
   * JSON). `Reply` names what the route answers: a `RunResult` from `/run`, a `ResultResponse` from `/v1/responses`,
   * an `AgentErrorBody` from a failure; it is not checked.
   */
  post<Reply = unknown>(
    path: string,
    body: unknown,
    headers?: Record<string, string>,
  ): Promise<{ status: number; body: Reply; setCookies: string[] }>;
  /** POST /run and return the row (fails the test when the status is not 200). */
  run(row: unknown): Promise<RunResult>;
  close(): Promise<void>;
}

/** How long `Harness.post` waits for the agent's answer before failing the test. */
export const POST_TIMEOUT_MS = 60_000;

export async function startHarness(options: HarnessOptions): Promise<Harness> {
  const service = isScriptedService(options.service) ? options.service : await startScriptedService(options.service);
  const env = options.env && 'requests' in options.env ? options.env : await startRecordingEnv(options.env);
  const logs: string[] = [];
  const config = parseRemoteAgentConfig(
    {
      agent_base_url: service.url,
      resources_server: { type: 'resources_servers', name: env.name },
      ...options.config,
    },
    'remote_agent',
  );
  const agent = createRemoteAgent({
    config,
    resourcesServer: { name: env.name, url: env.url },
    log: (line) => logs.push(line),
    ...options.agent,
  });
  const listening = await agent.app.listen(0);

  const post = async <Reply>(path: string, body: unknown, headers: Record<string, string> = {}) => {
    const res = await request(`${listening.url}${path}`, {
      method: 'POST',
      jsonText: typeof body === 'string' ? body : JSON.stringify(body),
      headers,
      // Only an upper bound (a rollout here takes milliseconds): generous, so a busy machine never trips it, and well
      // above every deadline a test provokes, so a test that contrasts its deadline with a hang can tell the two apart.
      timeoutMs: POST_TIMEOUT_MS,
    });
    let parsed: unknown;
    try {
      parsed = res.json();
    } catch {
      parsed = res.text();
    }
    return { status: res.status, body: parsed as Reply, setCookies: res.setCookies };
  };

  return {
    agent,
    url: listening.url,
    service,
    env,
    logs,
    post,
    async run(row) {
      const res = await post<RunResult>('/run', row);
      if (res.status !== 200) throw new Error(`/run answered ${res.status}: ${JSON.stringify(res.body)}`);
      return res.body;
    },
    async close() {
      await Promise.all([listening.close(), service.close(), env.close()]);
    },
  };
}

/**
 * What puts a model server behind the agent: every rollout is handed its URL on that server (`policy_model`), the
 * token-capture one when `tokenIdCapture`.
 */
export function withModelServer(url: string, tokenIdCapture = false): Pick<HarnessOptions, 'config' | 'agent'> {
  return {
    config: {
      model_server: { type: 'responses_api_models', name: 'policy_model' },
      ...(tokenIdCapture ? { token_id_capture: true } : {}),
    },
    agent: { modelServer: { name: 'policy_model', url, ...(tokenIdCapture ? { tokenIdCapture: true } : {}) } },
  };
}

/** A harness around a service built with the service kit: `decide` served on loopback. */
export async function startKitHarness(decide: Decide, options: Omit<HarnessOptions, 'service'> = {}): Promise<Harness> {
  const service = await serve(decide, { port: 0 });
  // The harness reads only the service's `url` and `close`; a kit service records no calls.
  const asScripted = { url: service.url, port: service.port, calls: [], close: () => service.close() };
  return startHarness({ ...options, service: asScripted as unknown as ScriptedService });
}

function isScriptedService(value: unknown): value is ScriptedService {
  return typeof value === 'object' && value !== null && 'calls' in value && 'url' in value;
}

/** The `type`s of a conversation's items (a string is one message), for compact trajectory assertions. */
export function typesOf(items: string | readonly ConversationItem[]): string[] {
  return normalizeInput(items).map((item) => item.type ?? 'message');
}

/** A gate per service call: the call waits until the test opens it (a gate may be opened before its call comes). */
export function gates(): { wait(call: ServiceCall): Promise<void>; open(index: number): void } {
  const byCall = new Map<number, Gate>();
  const gateOf = (index: number): Gate => {
    let held = byCall.get(index);
    if (!held) byCall.set(index, (held = gate()));
    return held;
  };
  return {
    wait: (call) => gateOf(call.index).opened,
    open: (index) => gateOf(index).open(),
  };
}
