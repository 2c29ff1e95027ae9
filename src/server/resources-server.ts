import { z } from 'zod';
import { validateCreateParams, validateResponse, type CreateParams, type ResponseObject } from '../contract/index.js';
import { App, HttpError, parseBody, type GymRequest } from '../http/server.js';
import { computeAggregateMetrics, type TaskMetricsHook } from '../metrics/metrics.js';
import { sessionIdOf, sessionMiddleware } from './session.js';
import { traceMiddleware } from './trace-middleware.js';
import { environmentMetricsMiddleware } from './metrics-middleware.js';
import { serveMetrics } from '../prometheus/metrics.js';
import { jsonLogs } from '../logging/log.js';
import { logRequestFailure, requestLogMiddleware } from './request-log.js';
import { verifyReplyParts } from './verify-reply.js';

/**
 * The base every environment ("resources server") is written on: a signed session per rollout, `/seed_session`,
 * `/verify`, `/aggregate_metrics`, `GET /` liveness, and one `POST /<tool>` route per declared tool whose body is
 * validated by the tool's schema (a bad body answers 422 naming the field; an unknown route 404 `Not Found`).
 * State lives in the environment's own closure, keyed by `ctx.sessionId`.
 */

export interface SessionContext {
  sessionId: string;
  req: GymRequest;
}

export interface Tool<Args = unknown> {
  input: z.ZodType<Args>;
  run(args: Args, ctx: SessionContext): unknown;
}

/** Declare a tool with its argument schema (keeps `run`'s argument type inferred from the schema). */
export function tool<Args>(input: z.ZodType<Args>, run: (args: Args, ctx: SessionContext) => unknown): Tool<Args> {
  return { input, run };
}

export interface VerifyRequest extends Record<string, unknown> {
  responses_create_params: CreateParams;
  response: ResponseObject;
}

export interface VerifyResult extends Record<string, unknown> {
  reward: number;
}

export interface ResourcesServerSpec<Seed> {
  /** Class-like name used in the session cookie name `<className>___<instanceName>`. */
  className: string;
  instanceName: string;
  /** Validates and applies the seed row (the whole rollout row is sent; unknown keys are ignored). */
  seed?: Tool<Seed>;
  verify(body: VerifyRequest, ctx: SessionContext): VerifyResult | Promise<VerifyResult>;
  tools: Record<string, Tool>;
  /** Extra metrics over all rollouts, grouped by task (merged into `agent_metrics`). */
  computeMetrics?: TaskMetricsHook;
  reverifyMode?: 'stateless' | 'unsupported' | 'unknown';
}

/** Routes a resources server reserves: a tool can never be named like one of these (decision D5). */
export const RESERVED_ROUTES = new Set(['seed_session', 'verify', 'aggregate_metrics', 'reverify_mode']);

const AggregateBody = z.object({ verify_responses: z.array(z.record(z.string(), z.unknown())) });

export function createResourcesServer<Seed>(spec: ResourcesServerSpec<Seed>): App {
  const app = new App({ onError: (err, req) => logRequestFailure(spec.instanceName, req, err) });
  if (jsonLogs()) app.use(requestLogMiddleware(spec.instanceName));
  const traced = traceMiddleware(`tsgym-env-${spec.instanceName}`, spec.instanceName);
  if (traced) app.use(traced);
  app.use(environmentMetricsMiddleware());
  serveMetrics(app);
  app.use(sessionMiddleware(`${spec.className}___${spec.instanceName}`));
  const ctx = (req: GymRequest): SessionContext => ({ sessionId: sessionIdOf(req), req });

  app.get('/', () => ({ body: { status: 'ok' } }));
  app.get('/reverify_mode', () => ({ body: spec.reverifyMode ?? 'unknown' }));

  app.post('/seed_session', async (req) => {
    if (!spec.seed) return { body: {} };
    const body = parseBody(spec.seed.input, req);
    return { body: (await spec.seed.run(body, ctx(req))) ?? {} };
  });

  app.post('/verify', async (req) => {
    const body = req.json();
    if (body === null || typeof body !== 'object' || Array.isArray(body)) {
      throw new HttpError(422, [{ type: 'object_type', loc: ['body'], msg: 'body: expected a JSON object' }]);
    }
    const row = body as Record<string, unknown>;
    const params = validateCreateParams(row.responses_create_params);
    if (!params.ok) throw unprocessable('responses_create_params', params.message);
    const response = validateResponse(row.response);
    if (!response.ok) throw unprocessable('response', response.message);
    const result = await spec.verify(row as VerifyRequest, ctx(req));
    const reply = { responses_create_params: row.responses_create_params, response: row.response, ...result };
    const parts = verifyReplyParts(req.body, row, reply);
    return parts ? { raw: parts } : { body: reply };
  });

  app.post('/aggregate_metrics', (req) => {
    const body = parseBody(AggregateBody, req);
    return { body: computeAggregateMetrics(body.verify_responses, spec.computeMetrics) };
  });

  for (const [name, definition] of Object.entries(spec.tools)) {
    if (RESERVED_ROUTES.has(name)) throw new Error(`tool name '${name}' is reserved by the resources server`);
    app.post(`/${name}`, async (req) => {
      const args = parseBody(definition.input, req);
      return { body: (await definition.run(args, ctx(req))) ?? null };
    });
  }
  return app;
}

function unprocessable(field: string, message: string): HttpError {
  return new HttpError(422, [{ type: 'value_error', loc: ['body', field], msg: `${field}: ${message}` }]);
}
