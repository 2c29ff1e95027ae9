/**
 * What tsgym's processes expose on `GET /metrics` (Prometheus text exposition, `prom-client`): one registry per
 * process with Node's default process metrics (`process_resident_memory_bytes`, `nodejs_eventloop_lag_seconds`, …)
 * and tsgym's own. Names carry their unit; label sets are bounded (outcome classes, route kinds, HTTP status codes,
 * retry kinds: never a task id, tool name or URL).
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { App } from '../http/server.js';

const registry = new Registry();
collectDefaultMetrics({ register: registry });

/** Seconds: from a millisecond tool call to a multi-minute model turn. */
const BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

export const agentMetrics = {
  inFlight: new Gauge({
    name: 'gym_agent_rollouts_in_flight',
    help: 'Rollouts the agent is running (seed to verify).',
    registers: [registry],
  }),
  finished: new Counter({
    name: 'gym_agent_rollouts_finished_total',
    help: 'Rollouts the agent finished, by outcome class (completed or the failure class).',
    labelNames: ['outcome_class'],
    registers: [registry],
  }),
  hopSeconds: new Histogram({
    name: 'gym_agent_hop_duration_seconds',
    help: 'Duration of one request of a rollout, by hop: seed, service_call, tool, verify.',
    labelNames: ['hop'],
    buckets: BUCKETS,
    registers: [registry],
  }),
  serviceResponses: new Counter({
    name: 'gym_agent_service_responses_total',
    help: "Responses of the agent service by HTTP status code ('error' when no response arrived).",
    labelNames: ['status_code'],
    registers: [registry],
  }),
  retries: new Counter({
    name: 'gym_agent_retries_total',
    help: 'Service calls sent again within a rollout, by kind (overload: a 429/503 with Retry-After).',
    labelNames: ['kind'],
    registers: [registry],
  }),
};

export const environmentMetrics = {
  requests: new Counter({
    name: 'gym_env_requests_total',
    help: 'Requests the environment answered, by route kind (seed, tool, verify, other) and status class (2xx …).',
    labelNames: ['route', 'status_class'],
    registers: [registry],
  }),
  seconds: new Histogram({
    name: 'gym_env_request_duration_seconds',
    help: 'Time the environment took to answer, by route kind.',
    labelNames: ['route'],
    buckets: BUCKETS,
    registers: [registry],
  }),
};

export const workerMetrics = {
  inFlight: new Gauge({
    name: 'gym_worker_jobs_in_flight',
    help: 'Rollout jobs this worker is running.',
    registers: [registry],
  }),
  finished: new Counter({
    name: 'gym_worker_jobs_finished_total',
    help: 'Rollout jobs this worker finished, by outcome class (completed, the failure class, or handed_back).',
    labelNames: ['outcome_class'],
    registers: [registry],
  }),
};

export const modelMetrics = {
  calls: new Counter({
    name: 'gym_model_calls_total',
    help: "Model calls the model server relayed, by dialect (responses, chat) and outcome ('ok' or the error category).",
    labelNames: ['dialect', 'outcome'],
    registers: [registry],
  }),
  seconds: new Histogram({
    name: 'gym_model_call_duration_seconds',
    help: 'Time from a model call arriving to its last byte relayed, by dialect.',
    labelNames: ['dialect'],
    buckets: BUCKETS,
    registers: [registry],
  }),
  firstTokenSeconds: new Histogram({
    name: 'gym_model_call_first_token_seconds',
    help: 'Streaming calls: time from the call arriving to the first event carrying content, by dialect.',
    labelNames: ['dialect'],
    buckets: BUCKETS,
    registers: [registry],
  }),
  tokens: new Counter({
    name: 'gym_model_tokens_total',
    help: 'Tokens the upstream reported, by kind (in, out, reasoning, cached); calls without usage add nothing.',
    labelNames: ['kind'],
    registers: [registry],
  }),
  rolloutsOpen: new Gauge({
    name: 'gym_model_rollouts_open',
    help: 'Rollouts open on the model server (opened, not yet closed or expired).',
    registers: [registry],
  }),
  rolloutsExpired: new Counter({
    name: 'gym_model_rollouts_expired_total',
    help: 'Open rollouts dropped after their idle timeout (a collector that never closed them).',
    registers: [registry],
  }),
};

const hopChildren = new Map<string, { observe(value: number): void }>();

/** One hop's duration; the labelled child is looked up once per kind (the kinds are four). */
export function observeHop(kind: string, seconds: number): void {
  let child = hopChildren.get(kind);
  if (!child) {
    child = agentMetrics.hopSeconds.labels(kind);
    hopChildren.set(kind, child);
  }
  child.observe(seconds);
}

/** A 3-digit status code as a label; anything else is 'error'. */
export function statusLabel(status: number | undefined): string {
  return status !== undefined && Number.isInteger(status) && status >= 100 && status <= 599 ? String(status) : 'error';
}

/**
 * A gauge whose value is read when Prometheus scrapes, for a count a component keeps anyway (the shell
 * environment's live sandboxes): nothing runs on the request path. Register a name once per process.
 */
export function gaugeReadAtScrape(name: string, help: string, read: () => number): void {
  new Gauge({
    name,
    help,
    registers: [registry],
    collect() {
      this.set(read());
    },
  });
}

/** The exposition, for a server route or the worker's own listener. */
export async function exposition(): Promise<{ text: string; contentType: string }> {
  return { text: await registry.metrics(), contentType: registry.contentType };
}

/** Adds `GET /metrics` to a server. */
export function serveMetrics(app: App): void {
  app.get('/metrics', async () => {
    const { text, contentType } = await exposition();
    return { raw: text, contentType };
  });
}
