import { isGymError, describeError } from '../errors.js';
import { App, HttpError, type GymReply, type GymRequest } from '../http/server.js';
import { serveMetrics } from '../prometheus/metrics.js';
import { logRequestFailure } from './request-log.js';

/**
 * The base every agent server is written on: the four routes the collector and other servers rely on, each
 * delegating to the agent's own function.
 *
 * - `POST /run`               one rollout row in, one result row out.
 * - `POST /v1/responses`      the agent as a Responses-speaking service (create-params in, trajectory out).
 * - `POST /aggregate_metrics` metrics over finished rollouts (agents usually proxy their resources server).
 * - `GET /`                   liveness.
 * - `GET /metrics`            Prometheus exposition (src/prometheus/metrics.ts).
 *
 * A handler that throws answers 500 with a JSON body naming the failure's class and code, so a caller learns
 * "terminal" structurally (decision D3) instead of by searching the text. `HttpError`s keep their own status.
 */

/** The agent's own functions, each mounted as a route handler on its own (never called on the spec). */
export interface AgentServerSpec {
  /** Instance name, used in logs. */
  name: string;
  run: (req: GymRequest) => Promise<GymReply>;
  /** `/v1/responses`; under `/ng-rollout/<id>[/training-token-capture]/v1/responses`, with that rollout. */
  responses: (req: GymRequest, rollout?: RolloutPath) => Promise<GymReply>;
  aggregateMetrics: (req: GymRequest) => Promise<GymReply>;
}

/** The rollout a call names in its path (the reference's `/ng-rollout/<id>/…`): its model calls go under that id. */
export interface RolloutPath {
  id: string;
  /** The path went through `training-token-capture`: the rollout's model calls record their token ids. */
  tokenCapture: boolean;
}

// The reference's rollout ids: a path segment of letters, digits, '.', '-', '_', starting with a letter or digit.
const ROLLOUT_RESPONSES =
  /^\/ng-rollout\/([A-Za-z0-9][A-Za-z0-9._-]{0,199})(\/training-token-capture)?\/v1\/responses$/;

/** The JSON body of a failed agent route. */
export interface AgentErrorBody {
  error: string;
  error_class: 'config' | 'retryable' | 'terminal' | 'unexpected';
  code: string;
}

export function createAgentServer(spec: AgentServerSpec): App {
  const app = new App({
    onError: (err, req) => logRequestFailure(spec.name, req, err),
  });
  const guarded =
    (handler: (req: GymRequest) => Promise<GymReply>) =>
    async (req: GymRequest): Promise<GymReply> => {
      try {
        return await handler(req);
      } catch (err) {
        if (err instanceof HttpError) throw err;
        if (!isGymError(err)) logRequestFailure(spec.name, req, err);
        return { status: 500, body: agentErrorBody(err) };
      }
    };
  app.get('/', () => ({ body: { status: 'ok' } }));
  app.post('/run', guarded(spec.run));
  app.post(
    '/v1/responses',
    guarded((req) => spec.responses(req)),
  );
  app.use((req, next) => {
    const match = req.method === 'POST' ? ROLLOUT_RESPONSES.exec(req.path) : null;
    if (!match) return next();
    const rollout = { id: match[1]!, tokenCapture: match[2] !== undefined };
    return guarded((r) => spec.responses(r, rollout))(req);
  });
  app.post('/aggregate_metrics', guarded(spec.aggregateMetrics));
  serveMetrics(app);
  return app;
}

export function agentErrorBody(err: unknown): AgentErrorBody {
  if (isGymError(err)) return { error: err.message, error_class: err.errorClass, code: err.code };
  return { error: describeError(err), error_class: 'unexpected', code: 'GYM_UNEXPECTED' };
}

/**
 * First-come-first-served admission with a fixed number of slots (decision D13). `acquire` resolves with a
 * release function that is safe to call more than once; a waiter whose signal fires leaves the queue.
 */
export class FifoSemaphore {
  private free: number;
  private readonly queue: Array<{ grant: (release: () => void) => void }> = [];

  constructor(readonly slots: number) {
    if (!Number.isInteger(slots) || slots < 1) throw new RangeError(`slots must be an integer ≥ 1, got ${slots}`);
    this.free = slots;
  }

  /** Slots not held right now. */
  get available(): number {
    return this.free;
  }

  /** Callers waiting for a slot. */
  get waiting(): number {
    return this.queue.length;
  }

  acquire(signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    if (this.free > 0 && this.queue.length === 0) {
      this.free--;
      return Promise.resolve(this.releaser());
    }
    return new Promise((resolve, reject) => {
      const waiter = {
        grant: (release: () => void) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(release);
        },
      };
      const onAbort = (): void => {
        const index = this.queue.indexOf(waiter);
        if (index >= 0) this.queue.splice(index, 1);
        if (signal) reject(abortReason(signal));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.queue.push(waiter);
    });
  }

  /** Run `work` while holding a slot; the slot is released however `work` ends. */
  async use<T>(work: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    const release = await this.acquire(signal);
    try {
      return await work();
    } finally {
      release();
    }
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.queue.shift();
      // Hand the slot straight to the next waiter, so a newcomer can never overtake the queue.
      if (next) next.grant(this.releaser());
      else this.free++;
    };
  }
}

/**
 * Why `signal` fired, to reject a waiter with. `abort()` without a reason gives an AbortError (an Error), and
 * tsgym's own callers abort with Errors; any other reason is wrapped, so a rejection is always an Error.
 */
function abortReason(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new Error(String(reason));
}
