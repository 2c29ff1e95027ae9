/**
 * A model server in process, listening on loopback, in front of an OpenAI-compatible upstream: the one way tests build
 * one. Every setting a test does not name takes a default that never gets in its way (no key, a generous timeout and
 * bounds, log lines dropped).
 */
import type { RolloutBookLimits } from '../../src/model-server/rollouts.js';
import { createModelServer, type ModelServer } from '../../src/model-server/server.js';
import type { TokenIdShape } from '../../src/model-server/token-ids.js';
import { OpenAiUpstream } from '../../src/model-server/upstream.js';

export interface TestModelServerOptions {
  /** The upstream's base URL, `/v1` included. */
  upstreamUrl: string;
  apiKey?: string;
  /** The name calls are sent with. Default `served`. */
  model?: string;
  extraBody?: Record<string, unknown>;
  /** Both the upstream's answer bound and the server's. Default 8 MiB. */
  maxResponseBytes?: number;
  tokenIdShape?: TokenIdShape;
  /** Default: 1,000 open rollouts, 100 calls each, 10 minutes idle. */
  limits?: RolloutBookLimits;
  translateResponses?: boolean;
  tokensOnAnswer?: boolean;
  /** Where the server's lines go. Default: dropped. */
  log?: (line: string) => void;
}

export interface TestModelServer {
  server: ModelServer;
  /** `http://127.0.0.1:<port>`. */
  url: string;
  close(): Promise<void>;
}

export async function startTestModelServer(options: TestModelServerOptions): Promise<TestModelServer> {
  const maxResponseBytes = options.maxResponseBytes ?? 8 * 1024 * 1024;
  const server = createModelServer({
    name: 'policy_model',
    upstream: new OpenAiUpstream({
      baseUrl: options.upstreamUrl,
      apiKey: options.apiKey,
      model: options.model ?? 'served',
      defaultHeaders: {},
      extraBody: options.extraBody ?? {},
      timeoutMs: 60_000,
      maxResponseBytes,
      tokenIdShape: options.tokenIdShape,
    }),
    limits: options.limits ?? { maxOpen: 1000, maxCallsPerRollout: 100, idleMs: 600_000 },
    maxResponseBytes,
    ...(options.translateResponses ? { translateResponses: true } : {}),
    ...(options.tokensOnAnswer ? { tokensOnAnswer: true } : {}),
    log: options.log ?? (() => {}),
  });
  const listening = await server.app.listen(0);
  return {
    server,
    url: listening.url,
    close: async () => {
      server.close();
      await listening.close();
    },
  };
}
