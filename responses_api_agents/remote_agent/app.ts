import { MODEL_BASE_URL_HEADER, STEP_LATENCY_HEADER } from '../../src/contract/gym-wire.js';
import { validateCreateParams } from '../../src/contract/index.js';
import { resolveRef } from '../../src/config/index.js';
import { RetryableRolloutError } from '../../src/errors.js';
import { CookieJar } from '../../src/http/cookies.js';
import { HttpError, type App, type GymReply, type GymRequest } from '../../src/http/server.js';
import { createAgentServer, FifoSemaphore, type RolloutPath } from '../../src/server/agent-server.js';
import { isMainModule, serveInstance } from '../../src/server/serve.js';
import { withRunBudget } from '../../src/rollout/budget.js';
import { parseRemoteAgentConfig } from './config.js';
import type { RemoteAgentConfig } from '../../src/rollout/settings.js';
import { ResourcesClient, ResourcesJar, VerifiedRow } from '../../src/rollout/resources-client.js';
import { AgentLog, type LogSink } from '../../src/rollout/log.js';
import { rejectRunBody, runRollout, runServiceLoop, type RolloutContext } from '../../src/rollout/rollout.js';
import { ServiceClient } from '../../src/rollout/service-client.js';
import { rolloutModelBaseUrl, type ModelServerTarget } from '../../src/rollout/model-capture.js';
import { encodeResponse } from '../../src/rollout/step-body.js';
import { RolloutRegistry } from '../../src/rollout/status.js';
import { Trajectory } from '../../src/rollout/trajectory.js';

/**
 * `remote_agent`: drives an agent that runs as its own HTTP service (`POST {agent_base_url}/v1/responses`)
 * through Gym's seed → loop → verify, holding the environment session and converting every failure into a
 * reward-0 row. The contract the service implements is in docs/services.md ("The contract"). The engine is
 * src/rollout/ (runRollout in rollout.ts); this module serves it as a NeMo Gym-compatible agent server.
 */

export interface RemoteAgentOptions {
  config: RemoteAgentConfig;
  /** The resolved `resources_server` reference. */
  resourcesServer: { name: string; url: string };
  /** Instance name, for logs. */
  name?: string;
  /** Where warnings and failure lines go (stdout by default). */
  log?: LogSink;
  /** Print full error bodies and validation messages of service-hop failures (`global_aiohttp_client_request_debug`). */
  debug?: boolean;
  /** Bound on the `/aggregate_metrics` proxy (600 s). */
  aggregateTimeoutSecs?: number;
  /** Pause between connection attempts to the service (~0.5 s). */
  connectRetryDelayMs?: number;
  /** The resources server's client; defaults to one for `resourcesServer`. */
  resourcesClient?: ResourcesClient;
  /** The resolved `model_server` reference, when the config names one. */
  modelServer?: ModelServerTarget;
}

export interface RemoteAgent {
  app: App;
  /** The concurrency cap shared by `/run` and `/v1/responses`. */
  limiter: FifoSemaphore;
  config: RemoteAgentConfig;
}

const AGGREGATE_TIMEOUT_SECS = 600;

export function createRemoteAgent(options: RemoteAgentOptions): RemoteAgent {
  const { config } = options;
  const registry = new RolloutRegistry();
  const ctx = rolloutContext(options, registry);

  const app = createAgentServer({
    name: options.name ?? 'remote_agent',

    async run(req) {
      let body: unknown;
      try {
        body = req.json();
      } catch (err) {
        // Accepted loosely and never answered non-2xx: a bad row must not abort the whole collection (D11).
        return { body: rejectRunBody(`/run body rejected: ${(err as Error).message}`, ctx) };
      }
      const result = await runRollout(body, ctx, {
        callerSignal: req.signal,
        stepLatency: req.headers[STEP_LATENCY_HEADER] === '1',
        trace: { traceparent: req.headers.traceparent, tracestate: req.headers.tracestate },
      });
      // A verified row is the environment's JSON bytes, sent on as they came (C4); a failure row is encoded here.
      return result instanceof VerifiedRow
        ? { raw: result.toParts(), contentType: 'application/json' }
        : { body: result };
    },

    responses: (req, rollout) => liveResponses(req, ctx, rollout),

    async aggregateMetrics(req) {
      const resources = ctx.resources;
      const timeoutSecs = options.aggregateTimeoutSecs ?? AGGREGATE_TIMEOUT_SECS;
      const res = await resources.aggregateMetrics(req.body.length > 0 ? req.body : '{}', timeoutSecs * 1000);
      if (res.status < 200 || res.status >= 300) {
        throw new RetryableRolloutError(
          'RESOURCES_SERVER_HTTP_STATUS',
          `/aggregate_metrics on the resources server '${resources.name}' failed: HTTP ${res.status}: ` +
            res.body.subarray(0, 500).toString('utf8'),
        );
      }
      return { raw: res.body, contentType: 'application/json' };
    },
  });

  // The collector polls this about once a second while a run is in flight (see src/rollout/status.ts).
  app.get('/status', () => ({ body: registry.snapshot() }));

  return { app, limiter: ctx.limiter, config };
}

/** What every rollout of this agent shares: its config, log, concurrency cap, registry and the two clients. */
function rolloutContext(options: RemoteAgentOptions, registry: RolloutRegistry): RolloutContext {
  const { config } = options;
  const log = new AgentLog(options.log);
  for (const warning of config.warnings) log.line(`WARNING: [remote_agent] ${warning}`);
  const debug = options.debug ? (line: string) => log.line(line) : undefined;
  return {
    config,
    log,
    limiter: new FifoSemaphore(config.concurrency),
    registry,
    ...(options.modelServer ? { modelServer: options.modelServer } : {}),
    agentName: options.name ?? 'remote_agent',
    resources:
      options.resourcesClient ?? new ResourcesClient(options.resourcesServer.name, options.resourcesServer.url),
    service: new ServiceClient({
      baseUrl: config.serviceBaseUrl,
      timeoutSecs: config.remoteResponsesTimeoutSecs,
      maxResponseBytes: config.maxResponseBytes,
      auth: config.auth,
      fillEchoFields: config.fillEchoFields,
      ...(options.connectRetryDelayMs !== undefined ? { connectRetryDelayMs: options.connectRetryDelayMs } : {}),
      ...(debug ? { debug } : {}),
    }),
  };
}

/**
 * `POST /v1/responses`: the loop run live on the caller's environment session, answered as one response. Under
 * `/ng-rollout/<id>[/training-token-capture]/v1/responses` (the reference's path) with `model_server` set, the service
 * is handed that rollout's model URL; the caller owns the rollout on the model server (opens it before, closes it
 * after, and reads its calls there), as the remote agent does for `/run`.
 */
async function liveResponses(req: GymRequest, ctx: RolloutContext, rollout?: RolloutPath): Promise<GymReply> {
  const { config } = ctx;
  const params = validateCreateParams(req.json());
  if (!params.ok) {
    throw new HttpError(422, [{ type: 'value_error', loc: ['body'], msg: params.message }]);
  }
  // The live route runs the loop on the caller's environment session: its cookies are the environment jar.
  const resourcesJar = jarFromRequest(req);
  const trajectory = new Trajectory();
  await withRunBudget(
    ctx.limiter,
    config.runTimeoutSecs,
    (budget) =>
      runServiceLoop(
        params.value,
        {
          service: ctx.service,
          resources: ctx.resources,
          serviceJar: new CookieJar(),
          resourcesJar,
          maxSteps: config.maxSteps,
          budget,
          ...(rollout && ctx.modelServer
            ? { serviceHeaders: { [MODEL_BASE_URL_HEADER]: rolloutModelBaseUrl(ctx.modelServer.url, rollout) } }
            : {}),
        },
        trajectory,
      ),
    { callerSignal: req.signal },
  );
  return {
    // The bytes of `JSON.stringify(trajectory.toResponse())`, written from the encoded items.
    raw: encodeResponse(trajectory.encoded()),
    contentType: 'application/json',
    setCookies: Object.entries(resourcesJar.toJSON()).map(([name, value]) => `${name}=${value}; Path=/`),
  };
}

/** The caller seeded this session, not the agent: no boot id is known, so a restart is not detected here. */
function jarFromRequest(req: GymRequest): ResourcesJar {
  const jar = new ResourcesJar();
  jar.absorb(Object.entries(req.cookies).map(([name, value]) => `${name}=${value}`));
  return jar;
}

if (isMainModule(import.meta.url)) {
  void serveInstance(({ global, instance }) => {
    const config = parseRemoteAgentConfig(instance.config, instance.name);
    const resources = resolveRef(
      global,
      config.resourcesServer,
      `${instance.name}.${instance.serverType}.${instance.impl}.resources_server`,
    );
    const model = config.modelServer
      ? resolveRef(global, config.modelServer, `${instance.name}.${instance.serverType}.${instance.impl}.model_server`)
      : undefined;
    return createRemoteAgent({
      config,
      resourcesServer: { name: resources.name, url: resources.url },
      ...(model ? { modelServer: { name: model.name, url: model.url, tokenIdCapture: config.tokenIdCapture } } : {}),
      name: instance.name,
      debug: global.global_aiohttp_client_request_debug === true,
    }).app;
  });
}
