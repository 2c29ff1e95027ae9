import { z } from 'zod';
import type { ResponseObject, CreateParams } from '../contract/index.js';
import { instanceKeyParagraph, integerAtLeast, parseBlock, positiveSeconds } from '../config/fields.js';
import { HttpError, parseBody, type App, type Listening } from '../http/server.js';
import {
  createResourcesServer,
  tool as baseTool,
  type SessionContext,
  type Tool,
  type VerifyResult,
} from '../server/resources-server.js';
import { serveInstance, type ServeContext } from '../server/serve.js';
import { ToolError, type Environment, type ToolSpec, type VerifyOutcome } from './define.js';
import { SessionStore, type DisposeReason, type SessionOptions } from './sessions.js';

/**
 * A defined environment as a running resources server, on the shared base (`createResourcesServer`): the kit adds
 * the session store (state created at seed, dropped and disposed at verify, on idle expiry and at shutdown), the
 * state lookup in front of every tool, the verify outcome's checks, and the verify response (C4: the request
 * body echoed minus `dropFields`, plus `reward` and the extras).
 */

export interface EnvironmentServerOptions {
  /** The config's instance name (the cookie's second half). Default: the environment's name. */
  instanceName?: string;
  /** Overrides the definition's `sessions` (idle expiry, cap). */
  sessions?: SessionOptions;
  /** Where one-line failure reports go (a failing dispose, a verify outcome that breaks the rules). Default stderr. */
  log?: (line: string) => void;
  /** How long `close()` waits for pending disposals. Default 1 500 ms: inside the 2 s `gym env start` allows a stopping server. */
  shutdownWaitMs?: number;
}

/** Fields of the verify response that the environment's outcome may not set. */
const RESERVED_OUTCOME_FIELDS = new Set(['responses_create_params', 'response']);

export class EnvironmentServer {
  readonly app: App;
  readonly sessions: SessionStore<unknown>;
  private readonly pendingDisposals = new Set<Promise<void>>();
  private readonly log: (line: string) => void;
  private readonly instanceName: string;
  private readonly shutdownWaitMs: number;

  constructor(
    readonly environment: Environment,
    options: EnvironmentServerOptions = {},
  ) {
    const spec = environment.spec;
    this.instanceName = options.instanceName ?? environment.name;
    this.log = options.log ?? ((line) => process.stderr.write(`${line}\n`));
    this.shutdownWaitMs = options.shutdownWaitMs ?? 1_500;
    this.sessions = new SessionStore(options.sessions ?? spec.sessions ?? {}, (state, reason) =>
      this.dispose(state, reason),
    );
    const stateful = spec.createState !== undefined;
    const tools: Record<string, Tool> = {};
    for (const [name, definition] of environment.tools) tools[name] = this.route(name, definition, stateful);

    this.app = createResourcesServer({
      className: environment.className,
      instanceName: this.instanceName,
      ...(stateful || spec.seedRow ? { seed: this.seedTool() } : {}),
      tools,
      verify: async (body, ctx) => this.verify(body, ctx, stateful),
      ...(spec.aggregateMetrics ? { computeMetrics: spec.aggregateMetrics } : {}),
      reverifyMode: spec.reverifyMode ?? (stateful ? 'unsupported' : 'stateless'),
    });
  }

  /** Listen on `host:port`; the returned `close` also disposes every live session. */
  async listen(port = 0, host = '127.0.0.1'): Promise<Listening> {
    const listening = await this.app.listen(port, host);
    return { ...listening, close: () => listening.close().then(() => this.close()) };
  }

  /**
   * Dispose every live session and wait for the disposals (the server's shutdown) — at most `shutdownWaitMs`, so a
   * hanging `dispose` cannot keep a stopping server alive; what is still pending then is logged.
   */
  async close(): Promise<void> {
    this.sessions.clear();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), this.shutdownWaitMs);
    });
    try {
      while (this.pendingDisposals.size > 0) {
        if ((await Promise.race([Promise.all(this.pendingDisposals), deadline])) === 'late') {
          this.log(
            `[${this.instanceName}] ${this.pendingDisposals.size} dispose(state) calls still pending after ${this.shutdownWaitMs} ms; stopping anyway`,
          );
          return;
        }
      }
    } finally {
      clearTimeout(timer);
    }
  }

  private seedTool(): Tool<unknown> {
    const spec = this.environment.spec;
    const seedRow = spec.seedRow ?? AnyRow;
    return baseTool(seedRow, async (row, { sessionId }) => {
      if (!spec.createState) return {}; // a stateless environment only validates the row
      if (this.sessions.has(sessionId)) {
        if (spec.reseed === 'keep') return {};
      } else {
        this.refuseWhenFull('/seed_session');
      }
      this.sessions.set(sessionId, await spec.createState(row, { sessionId }));
      return {};
    });
  }

  private refuseWhenFull(path: string): void {
    if (!this.sessions.isFull()) return;
    throw new HttpError(
      503,
      `${path}: environment '${this.instanceName}' already holds ${this.sessions.maxSessions} live sessions ` +
        '(sessions.maxSessions). Verify finished rollouts, wait for idle ones to expire, or raise the cap.',
    );
  }

  private route(name: string, definition: ToolSpec<unknown, unknown>, stateful: boolean): Tool<unknown> {
    const initialState = this.environment.spec.initialState;
    return baseTool(definition.input, async (args, { sessionId }) => {
      let state: unknown;
      if (stateful) {
        state = this.sessions.get(sessionId);
        if (state === undefined) {
          if (!initialState) throw this.noSession(`/${name}`);
          this.refuseWhenFull(`/${name}`);
          state = initialState();
          this.sessions.set(sessionId, state);
        }
      }
      try {
        return await definition.run(args, { state, sessionId });
      } catch (err) {
        if (err instanceof ToolError) throw new HttpError(400, err.message);
        throw err;
      }
    });
  }

  private async verify(body: Record<string, unknown>, ctx: SessionContext, stateful: boolean): Promise<VerifyResult> {
    const spec = this.environment.spec;
    const row = spec.verifyRow ? parseBody(spec.verifyRow, ctx.req) : body;
    const state = stateful ? this.sessions.get(ctx.sessionId) : undefined;
    let outcome: VerifyOutcome;
    try {
      outcome = await spec.verify({
        row,
        response: body.response as ResponseObject,
        params: body.responses_create_params as CreateParams,
        state,
        body,
        sessionId: ctx.sessionId,
      });
    } finally {
      // Dropped whether verify succeeded or threw: a verified session is finished either way.
      if (stateful) {
        const taken = this.sessions.take(ctx.sessionId);
        if (taken !== undefined) this.dispose(taken, 'verified');
      }
    }
    return this.verifyResponse(body, outcome);
  }

  /** The request body minus `dropFields`, then `reward`, the flattened reward components and the extras. */
  private verifyResponse(body: Record<string, unknown>, outcome: VerifyOutcome): VerifyResult {
    const problem = outcomeProblem(outcome);
    if (problem) {
      const message = `verify() of environment '${this.instanceName}' returned an invalid outcome: ${problem}`;
      this.log(`[${this.instanceName}] ${message}`);
      throw new HttpError(500, message);
    }
    const dropped = this.environment.spec.dropFields;
    const result: Record<string, unknown> = {};
    for (const key of Object.keys(body)) if (key !== 'reward' && !dropped?.includes(key)) result[key] = body[key];
    result.reward = outcome.reward;
    const components = outcome.reward_components;
    if (components) for (const [name, value] of Object.entries(components)) result[`reward_${name}`] = value;
    for (const [key, value] of Object.entries(outcome)) if (key !== 'reward') result[key] = value;
    return result as VerifyResult;
  }

  private noSession(path: string): HttpError {
    return new HttpError(
      409,
      `${path}: this session has no state in environment '${this.instanceName}' — it was never seeded (POST ` +
        `/seed_session first), is already verified, or expired after ${this.sessions.idleTimeoutSecs} s idle`,
    );
  }

  private dispose(state: unknown, reason: DisposeReason): void {
    // The spec declares its hooks as methods (define.ts says why): call this one on its spec.
    const hook = this.environment.spec.dispose?.bind(this.environment.spec);
    if (!hook) return;
    const done: Promise<void> = Promise.resolve()
      .then(() => hook(state, reason))
      .catch((err: unknown) => {
        this.log(`[${this.instanceName}] dispose(state) failed: ${err instanceof Error ? err.message : String(err)}`);
      })
      .finally(() => this.pendingDisposals.delete(done));
    this.pendingDisposals.add(done);
  }
}

/** Why a verify outcome cannot be sent, or undefined when it is fine. */
function outcomeProblem(outcome: unknown): string | undefined {
  if (outcome === null || typeof outcome !== 'object' || Array.isArray(outcome))
    return 'expected an object { reward, … }';
  const record = outcome as Record<string, unknown>;
  if (typeof record.reward !== 'number' || !Number.isFinite(record.reward)) {
    return `reward must be a finite number, got ${JSON.stringify(record.reward) ?? 'undefined'}`;
  }
  for (const key of Object.keys(record)) {
    if (RESERVED_OUTCOME_FIELDS.has(key)) return `'${key}' is the request's own field; name the extra otherwise`;
  }
  const components = record.reward_components;
  if (components !== undefined) {
    if (components === null || typeof components !== 'object' || Array.isArray(components)) {
      return 'reward_components must be an object { name: number }';
    }
    for (const [name, value] of Object.entries(components)) {
      if (typeof value !== 'number' || !Number.isFinite(value))
        return `reward_components.${name} must be a finite number`;
      if (Object.hasOwn(record, `reward_${name}`))
        return `reward_components.${name} collides with the extra 'reward_${name}'`;
    }
  }
  return undefined;
}

const AnyRow = z.looseObject({});

/** Serve an environment on its own (tests, a quick try): default 127.0.0.1 and a free port. */
export interface RunningEnvironment {
  url: string;
  port: number;
  server: EnvironmentServer;
  close(): Promise<void>;
}

export async function serveEnvironment(
  environment: Environment,
  options: EnvironmentServerOptions & { port?: number; host?: string } = {},
): Promise<RunningEnvironment> {
  const server = new EnvironmentServer(environment, options);
  const listening = await server.listen(options.port ?? 0, options.host ?? '127.0.0.1');
  return { url: listening.url, port: listening.port, server, close: listening.close };
}

/**
 * The entry point of an environment's `app.ts` when `gym env start` launches it: read the instance's config
 * from the environment variables Gym sets, listen on its host and port, dispose every session on SIGINT/SIGTERM.
 * Pass a function to build the environment from the instance's config block (`ctx.instance.config`). The block's
 * `session_idle_timeout_secs` and `max_sessions` override the definition's `sessions`.
 */
export function runEnvironment(environment: Environment | ((ctx: ServeContext) => Environment)): Promise<void> {
  let server: EnvironmentServer | undefined;
  return serveInstance(
    (ctx) => {
      const definition = typeof environment === 'function' ? environment(ctx) : environment;
      const sessions = { ...definition.spec.sessions, ...sessionOptionsFromConfig(ctx) };
      server = new EnvironmentServer(definition, { instanceName: ctx.instance.name, sessions });
      return server.app;
    },
    { onShutdown: () => server?.close() ?? Promise.resolve() },
  );
}

const sessionKeys = z.object({
  session_idle_timeout_secs: positiveSeconds(undefined),
  max_sessions: integerAtLeast(1, undefined, { rule: 'an integer ≥ 1' }),
});

/** `session_idle_timeout_secs` / `max_sessions` from the instance's config block, checked (a bad value names its key). */
function sessionOptionsFromConfig({ instance }: ServeContext): SessionOptions {
  const where = `${instance.name}.${instance.serverType}.${instance.impl}`;
  const keys = parseBlock(sessionKeys, instance.config, instanceKeyParagraph(where));
  // Only the keys the block sets: an undefined one would hide the definition's own value when spread over it.
  const options: SessionOptions = {};
  if (keys.session_idle_timeout_secs !== undefined) options.idleTimeoutSecs = keys.session_idle_timeout_secs;
  if (keys.max_sessions !== undefined) options.maxSessions = keys.max_sessions;
  return options;
}
