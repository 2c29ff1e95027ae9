/**
 * Wiring for the remote agent's tests: a real agent on a loopback port, a scripted service (src/testing), and a
 * real resources server — either the counter environment or a recording one built with `createResourcesServer`
 * that remembers every request it got (path, body, cookies). Nothing is mocked; every hop is HTTP.
 */
import { z } from 'zod';
import { request } from '../../src/http/client.js';
import { HttpError, type App, type Listening } from '../../src/http/server.js';
import {
  createResourcesServer,
  tool,
  type SessionContext,
  type Tool,
  type VerifyRequest,
  type VerifyResult,
} from '../../src/server/resources-server.js';
import { startScriptedService, type ScriptedService, type ServiceCall, type ServiceScript } from '../../src/testing/index.js';
import { createRemoteAgent, type RemoteAgent, type RemoteAgentOptions } from '../../responses_api_agents/remote_agent/app.js';
import { parseRemoteAgentConfig } from '../../responses_api_agents/remote_agent/config.js';

export type Row = Record<string, any>;

// ---------------------------------------------------------------------------------------------------
// Rows

import { COUNTER_TOOLS } from '../../src/counter/tools.js';

export { COUNTER_TOOLS };

/** A row in the dataset's shape: create-params, an answer key, and dataset extras. */
export function basicRow(text = 'what is 6 x 7?', extra: Row = {}): Row {
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
  body: any;
  cookies: Record<string, string>;
}

export interface RecordingEnvOptions {
  /** Reward (and extras) for a verify call; 1.0 by default. Throw an HttpError to fail it. */
  verify?: (body: VerifyRequest, ctx: SessionContext) => VerifyResult | Promise<VerifyResult>;
  /** Called on seed; throw an HttpError to fail it. */
  seed?: (row: Row) => void;
  /** Extra tools besides increment_counter / get_counter_value. */
  tools?: Record<string, Tool<any>>;
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

/** Serve any `App` as the environment (for envs the recording server cannot express), on `port` if given. */
export async function listenEnv(app: App, name: string, requests: EnvRequest[] = [], port = 0): Promise<RecordingEnv> {
  const listening: Listening = await app.listen(port);
  return {
    name,
    url: listening.url,
    requests,
    to: (path) => requests.filter((r) => r.path === path),
    close: () => listening.close(),
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
  /** POST /run; asserts nothing about the status, returns it with the JSON body. */
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<{ status: number; body: any; setCookies: string[] }>;
  /** POST /run and return the row (fails the test when the status is not 200). */
  run(row: unknown): Promise<Row>;
  close(): Promise<void>;
}

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

  const post: Harness['post'] = async (path, body, headers = {}) => {
    const res = await request(`${listening.url}${path}`, {
      method: 'POST',
      jsonText: typeof body === 'string' ? body : JSON.stringify(body),
      headers,
      timeoutMs: 20_000,
    });
    let parsed: unknown;
    try {
      parsed = res.json();
    } catch {
      parsed = res.text();
    }
    return { status: res.status, body: parsed, setCookies: res.setCookies };
  };

  return {
    agent,
    url: listening.url,
    service,
    env,
    logs,
    post,
    async run(row) {
      const res = await post('/run', row);
      if (res.status !== 200) throw new Error(`/run answered ${res.status}: ${JSON.stringify(res.body)}`);
      return res.body as Row;
    },
    async close() {
      await Promise.all([listening.close(), service.close(), env.close()]);
    },
  };
}

function isScriptedService(value: unknown): value is ScriptedService {
  return typeof value === 'object' && value !== null && 'calls' in value && 'url' in value;
}

/** Fail a verify with a status (for /verify failure cases). */
export function failWith(status: number, detail: string): never {
  throw new HttpError(status, detail);
}

/** The `type`s of a list of items, for compact trajectory assertions. */
export function typesOf(items: readonly any[]): string[] {
  return items.map((item) => item.type ?? 'message');
}

/** A gate per service call: the call waits until the test opens it. */
export function gates() {
  const opens = new Map<number, () => void>();
  const waits = new Map<number, Promise<void>>();
  const gateOf = (index: number): Promise<void> => {
    if (!waits.has(index)) waits.set(index, new Promise<void>((resolve) => opens.set(index, resolve)));
    return waits.get(index)!;
  };
  return {
    wait: (call: ServiceCall) => gateOf(call.index),
    open: (index: number) => {
      void gateOf(index);
      opens.get(index)!();
    },
  };
}
