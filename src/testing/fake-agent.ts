/**
 * Test doubles for the collector's side of the wire: a scripted agent (`POST /run`, `POST /aggregate_metrics`)
 * and a head server that serves a config naming those agents (`GET /global_config_dict_yaml`, a JSON string of
 * YAML, as the reference serves it). Both listen on loopback ephemeral ports.
 */
import { stringify } from 'yaml';
import { App, type Listening } from '../http/server.js';
import { computeAggregateMetrics, type TaskMetricsHook } from '../metrics/metrics.js';
import { NG } from '../runfiles/ng-keys.js';
import type { Row } from '../runfiles/row.js';

/** What the scripted agent answers to one `/run`. */
export type FakeRunReply =
  { kind: 'json'; status: number; body: unknown } | { kind: 'raw'; status: number; text: string } | { kind: 'hang' };

export const fakeReply = {
  /** 200 with a verify-response-like result: the row, a `response` with usage, and `reward`. */
  success(row: Row, reward = 1, extra: Row = {}): FakeRunReply {
    return { kind: 'json', status: 200, body: { ...row, response: fakeResponse(), reward, ...extra } };
  },
  /** 200 with a failure row, as the remote agent writes them. */
  failure(row: Row, error: string, options: { terminal?: boolean; failureClass?: string } = {}): FakeRunReply {
    return {
      kind: 'json',
      status: 200,
      body: {
        ...row,
        response: fakeResponse(),
        reward: 0,
        error,
        [NG.failureClass]: options.failureClass ?? 'remote_agent_error',
        ...(options.terminal ? { [NG.failureTerminal]: true } : {}),
      },
    };
  },
  /** 200 with a kill-shaped result, persisted nowhere. */
  noPersist(row: Row): FakeRunReply {
    return { kind: 'json', status: 200, body: { ...row, reward: 0, [NG.noPersist]: true } };
  },
  status(status: number, text: string): FakeRunReply {
    return { kind: 'raw', status, text };
  },
  /** Never answers (until the agent is closed). */
  hang(): FakeRunReply {
    return { kind: 'hang' };
  },
};

export function fakeResponse(usage = { input_tokens: 10, output_tokens: 5, total_tokens: 15 }): Row {
  return {
    id: 'resp_fake',
    created_at: 0,
    model: 'fake',
    object: 'response',
    output: [
      {
        id: 'msg_0',
        type: 'message',
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: 'ok', annotations: [] }],
      },
    ],
    parallel_tool_calls: false,
    tool_choice: 'auto',
    tools: [],
    usage: { ...usage, input_tokens_details: { cached_tokens: 0 }, output_tokens_details: { reasoning_tokens: 0 } },
  };
}

export type FakeRunHandler = (row: Row, call: number) => FakeRunReply | Promise<FakeRunReply>;

export interface FakeAgent {
  name: string;
  url: string;
  host: string;
  port: number;
  /** Every `/run` body received, in arrival order. */
  runs: Row[];
  /** Every `/aggregate_metrics` body's `verify_responses`. */
  aggregateCalls: Row[][];
  close(): Promise<void>;
}

export interface FakeAgentOptions {
  computeMetrics?: TaskMetricsHook;
  /** Listen on this port (default: an ephemeral one), e.g. to bring back an agent that was gone. */
  port?: number;
}

export async function startFakeAgent(
  name: string,
  handler: FakeRunHandler,
  options: FakeAgentOptions = {},
): Promise<FakeAgent> {
  const runs: Row[] = [];
  const aggregateCalls: Row[][] = [];
  const hung = new Set<() => void>();
  const app = new App();
  app.post('/run', async (req) => {
    const row = req.json() as Row;
    runs.push(row);
    const reply = await handler(row, runs.length - 1);
    if (reply.kind === 'hang') {
      await new Promise<void>((resolve) => {
        hung.add(resolve);
        req.signal.addEventListener('abort', () => resolve(), { once: true });
      });
      return { status: 503, body: { detail: 'fake agent closed' } };
    }
    if (reply.kind === 'raw') return { status: reply.status, raw: reply.text, contentType: 'text/plain' };
    return { status: reply.status, body: reply.body };
  });
  app.post('/aggregate_metrics', (req) => {
    const body = req.json() as { verify_responses: Row[] };
    aggregateCalls.push(body.verify_responses);
    return { body: computeAggregateMetrics(body.verify_responses, options.computeMetrics) };
  });
  const listening: Listening = await app.listen(options.port ?? 0, '127.0.0.1');
  return {
    name,
    url: listening.url,
    host: '127.0.0.1',
    port: listening.port,
    runs,
    aggregateCalls,
    async close() {
      for (const release of hung) release();
      hung.clear();
      await listening.close();
    },
  };
}

export interface FakeHead {
  url: string;
  host: string;
  port: number;
  close(): Promise<void>;
}

/** A head server whose config lists the given agents (plus any extra top-level config). */
export async function startFakeHead(
  agents: ReadonlyArray<Pick<FakeAgent, 'name' | 'host' | 'port'>>,
  extra: Row = {},
): Promise<FakeHead> {
  const app = new App();
  let port = 0;
  app.get('/global_config_dict_yaml', () => {
    const config: Row = { head_server: { host: '127.0.0.1', port }, ...extra };
    for (const agent of agents) {
      config[agent.name] = {
        responses_api_agents: { fake_agent: { entrypoint: 'app.py', host: agent.host, port: agent.port } },
      };
    }
    return { body: stringify(config) };
  });
  const listening = await app.listen(0, '127.0.0.1');
  port = listening.port;
  return { url: listening.url, host: '127.0.0.1', port, close: () => listening.close() };
}
