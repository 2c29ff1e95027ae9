/**
 * End-of-run metrics for a producer without an environment: each agent's metrics are computed by a `gym worker`
 * whose environment has that agent, through its local agent's `/aggregate_metrics`. The producer offers the job in
 * the `tsgym:aggregations` hash; one worker claims it (a key it keeps alive while it works); the producer streams
 * the stripped rows, already in (task, rollout) order, as chunks through a short list (at most a few chunks wait in
 * Redis at a time, so no Redis value ever holds every row), then an end marker; the worker answers on a result
 * list. A claim that lapses before the answer (the worker died) makes the producer offer the job again.
 *
 *   tsgym:aggregations         hash  jobId → AggregationOffer (JSON), refreshed by the producer while it waits
 *   tsgym:agg:<jobId>:claim    string  the claiming worker's id, kept alive by it (expires CLAIM_MS after its death)
 *   tsgym:agg:<jobId>:taken    string  set with the claim and never renewed: an offer is claimed once. A worker that
 *                                      found a lapsed claim and took the offer again would wait for rows the dead
 *                                      worker already popped, while the producer, seeing a live claim, waited for it
 *                                      (a deadlock); the producer offers again under a new id instead.
 *   tsgym:agg:<jobId>:rows     list  chunks of rows (JSON arrays) the worker pops, then END
 *   tsgym:agg:<jobId>:result   list  one AggregationReply (JSON)
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { AgentDirectory } from '../collect/agents.js';
import { agentMetricsSource, type MetricsSource } from '../collect/aggregate.js';
import type { AggregateMetrics } from '../metrics/metrics.js';
import type { Row } from '../runfiles/row.js';

export const AGGREGATIONS_KEY = 'tsgym:aggregations';
const END = 'end';
/** A claim not renewed for this long belongs to a dead worker. */
const CLAIM_MS = 5000;
/** An offer whose producer stopped refreshing it this long ago is ignored by workers. */
const OFFER_STALE_MS = 30_000;
const CHUNK_ROWS = 500;
const CHUNK_CHARS = 1024 * 1024;
/** Chunks waiting in Redis at once: the producer pauses while the worker has not popped them. */
const CHUNKS_QUEUED = 4;
/** Longest chunk or reply a worker or producer accepts from Redis. */
const MAX_TEXT_CHARS = 64 * 1024 * 1024;
const MAX_OFFERS = 3;
/** How long the taken mark outlives a producer that died without deleting it. */
const TAKEN_MS = 60 * 60 * 1000;
/** Claims an offer once: the claim and the taken mark together, only if the offer was never taken. */
const CLAIM_ONCE = `if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[3]) then
  redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0`;

interface AggregationOffer {
  id: string;
  agent: string;
  refreshedAt: number;
}

interface AggregationReply {
  worker: string;
  metrics?: AggregateMetrics;
  error?: string;
}

const keysOf = (id: string) => ({
  claim: `tsgym:agg:${id}:claim`,
  taken: `tsgym:agg:${id}:taken`,
  rows: `tsgym:agg:${id}:rows`,
  result: `tsgym:agg:${id}:result`,
});

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms).unref());

/** The claiming worker went away before answering. */
class ClaimLost extends Error {}

export interface RemoteMetricsOptions {
  client: Redis;
  queueUrl: string;
  /** How long an offer waits for a worker serving the agent to claim it. */
  waitMs: number;
  /** The agents served right now, for the message when nobody claims. */
  served: () => Promise<string[]>;
  log: (line: string) => void;
}

/** The producer's side: a `MetricsSource` that hands the rows to a worker serving the agent. */
export function remoteMetricsSource(options: RemoteMetricsOptions): MetricsSource {
  const { client, log } = options;

  const offerOnce = async (agent: string, rows: Row[]): Promise<AggregateMetrics> => {
    const id = randomUUID();
    const keys = keysOf(id);
    const offer = (): string => JSON.stringify({ id, agent, refreshedAt: Date.now() } satisfies AggregationOffer);
    await client.hset(AGGREGATIONS_KEY, id, offer());
    const refresher = setInterval(() => void client.hset(AGGREGATIONS_KEY, id, offer()).catch(() => undefined), 2000);
    refresher.unref();
    try {
      const deadline = Date.now() + options.waitMs;
      while ((await client.get(keys.claim)) === null) {
        if (Date.now() >= deadline) {
          const served = await options.served();
          throw new Error(
            `no gym worker serving agent '${agent}' took its aggregate-metrics job within ${Math.round(options.waitMs / 1000)} s (+queue_worker_wait_secs); the workers on ${options.queueUrl} serve ${served.length > 0 ? served.map((name) => `'${name}'`).join(', ') : 'no agents (none is connected)'}. Start gym worker --queue ${options.queueUrl} where an environment has '${agent}'`,
          );
        }
        await pause(100);
      }
      const alive = async (): Promise<void> => {
        if ((await client.exists(keys.claim)) === 0 && (await client.llen(keys.result)) === 0) throw new ClaimLost();
      };
      let chunk: string[] = [];
      let chars = 0;
      const flush = async (): Promise<void> => {
        if (chunk.length === 0) return;
        while ((await client.llen(keys.rows)) >= CHUNKS_QUEUED) {
          await alive();
          await pause(20);
        }
        await client.rpush(keys.rows, `[${chunk.join(',')}]`);
        chunk = [];
        chars = 0;
      };
      for (const row of rows) {
        const text = JSON.stringify(row);
        chunk.push(text);
        chars += text.length;
        if (chunk.length >= CHUNK_ROWS || chars >= CHUNK_CHARS) await flush();
      }
      await flush();
      await client.rpush(keys.rows, END);
      for (;;) {
        const text = await client.lindex(keys.result, 0);
        if (text !== null) {
          const reply = text.length <= MAX_TEXT_CHARS ? (JSON.parse(text) as AggregationReply) : undefined;
          if (reply?.metrics) return reply.metrics;
          throw new Error(
            `worker ${reply?.worker ?? '?'} could not compute the metrics of agent '${agent}': ${reply?.error ?? 'its answer was unreadable'}`,
          );
        }
        await alive();
        await pause(50);
      }
    } catch (error) {
      if (error instanceof ClaimLost) log(`The worker computing the metrics of agent '${agent}' went away.`);
      throw error;
    } finally {
      clearInterval(refresher);
      await client.hdel(AGGREGATIONS_KEY, id).catch(() => undefined);
      await client.del(keys.claim, keys.taken, keys.rows, keys.result).catch(() => undefined);
    }
  };

  return async (agent, rows) => {
    log(`Computing the metrics of agent '${agent}' (${rows.length} rollouts) on a gym worker that serves it.`);
    for (let offer = 1; ; offer++) {
      try {
        return await offerOnce(agent, rows);
      } catch (error) {
        if (!(error instanceof ClaimLost) || offer >= MAX_OFFERS) {
          throw error instanceof ClaimLost
            ? new Error(`the workers computing the metrics of agent '${agent}' went away ${offer} times`)
            : error;
        }
        log(`Offering the metrics of agent '${agent}' to another worker (offer ${offer + 1} of ${MAX_OFFERS}).`);
      }
    }
  };
}

function parseOffer(text: string): AggregationOffer | undefined {
  if (text.length > 4096) return undefined;
  try {
    const value = JSON.parse(text) as AggregationOffer;
    return typeof value?.id === 'string' && typeof value.agent === 'string' && typeof value.refreshedAt === 'number'
      ? value
      : undefined;
  } catch {
    return undefined;
  }
}

export interface AggregationServer {
  /** Claims the offers this worker's environment can answer (called on every roster refresh). */
  poll(): Promise<void>;
}

/** The worker's side: claims offers for its agents and answers them through the local `/aggregate_metrics`. */
export function serveAggregations(options: {
  client: Redis;
  agents: AgentDirectory;
  id: string;
  stopping: () => boolean;
  log: (line: string) => void;
}): AggregationServer {
  const { client, agents, id, log } = options;
  const source = agentMetricsSource(agents);
  const active = new Set<string>();

  const answer = async (offer: AggregationOffer): Promise<void> => {
    const keys = keysOf(offer.id);
    const keep = setInterval(() => void client.pexpire(keys.claim, CLAIM_MS).catch(() => undefined), 1000);
    keep.unref();
    const reader = client.duplicate();
    reader.on('error', () => undefined);
    try {
      const rows: Row[] = [];
      for (;;) {
        const popped = await reader.blpop(keys.rows, 1);
        if (popped === null) {
          // The producer gave up (its offer is gone) or this worker is stopping: nobody waits for an answer.
          if (options.stopping() || (await client.hexists(AGGREGATIONS_KEY, offer.id)) === 0) return;
          continue;
        }
        const text = popped[1];
        if (text === END) break;
        if (text.length > MAX_TEXT_CHARS) throw new Error(`a chunk of ${keys.rows} is longer than allowed`);
        rows.push(...(JSON.parse(text) as Row[]));
      }
      log(`worker ${id}: computing the metrics of agent '${offer.agent}' (${rows.length} rollouts) for a collector.`);
      let reply: AggregationReply;
      try {
        reply = { worker: id, metrics: await source(offer.agent, rows) };
      } catch (error) {
        reply = { worker: id, error: error instanceof Error ? error.message : String(error) };
      }
      await client.rpush(keys.result, JSON.stringify(reply));
      await client.pexpire(keys.result, 10 * 60 * 1000);
    } finally {
      clearInterval(keep);
      reader.disconnect();
    }
  };

  return {
    async poll() {
      const entries = await client.hgetall(AGGREGATIONS_KEY);
      for (const text of Object.values(entries).slice(0, 1000)) {
        const offer = parseOffer(text);
        if (!offer || active.has(offer.id) || agents.urlOf(offer.agent) === undefined) continue;
        if (Date.now() - offer.refreshedAt > OFFER_STALE_MS || options.stopping()) continue;
        const keys = keysOf(offer.id);
        if ((await client.eval(CLAIM_ONCE, 2, keys.taken, keys.claim, id, CLAIM_MS, TAKEN_MS)) !== 1) continue;
        active.add(offer.id);
        answer(offer)
          .catch((error: unknown) =>
            log(
              `worker ${id}: the metrics job of agent '${offer.agent}' failed: ${error instanceof Error ? error.message : String(error)}`,
            ),
          )
          .finally(() => active.delete(offer.id));
      }
    },
  };
}
