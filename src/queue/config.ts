/**
 * The configuration keys of distributed collection, checked up front: `queue_url` (--queue) for both sides,
 * `queue_stall_secs`, `queue_outage_secs` and `queue_worker_wait_secs` for the collector, `worker_concurrency` (--concurrency),
 * `worker_drain_secs`, `worker_id` and `agent_unreachable_wait_secs` for `gym worker`.
 */
import { z } from 'zod';
import { configValueParagraph, integerAtLeast, parseBlock, positiveSeconds, text } from '../config/fields.js';
import type { GlobalConfig } from '../config/types.js';
import { ConfigError } from '../errors.js';
import {
  DEFAULT_OUTAGE_SECS,
  DEFAULT_STALL_SECS,
  defaultWorkerId,
  parseQueueUrl,
  type QueueAddress,
} from './protocol.js';

export const DEFAULT_WORKER_CONCURRENCY = 16;
export const DEFAULT_DRAIN_SECS = 30;
/** A producer without an environment waits this long for a worker serving its rows' agents. */
export const DEFAULT_WORKER_WAIT_SECS = 60;
/** A worker hands a job back sooner than a lone collector gives up: another worker may have a live agent. */
export const DEFAULT_WORKER_AGENT_WAIT_SECS = 10;

/** The queue address, or undefined when the run is not distributed. */
export function queueAddressOf(config: GlobalConfig): QueueAddress | undefined {
  const raw = config.queue_url;
  if (raw === undefined || raw === null || raw === '') return undefined;
  return parseQueueUrl(raw);
}

export interface CollectorQueueSettings {
  address: QueueAddress;
  stallMs: number;
  outageMs: number;
  /** How long a producer without an environment waits for a worker serving the rows' agents. */
  workerWaitMs: number;
}

const collectorKeys = z.object({
  queue_stall_secs: positiveSeconds(DEFAULT_STALL_SECS, { allowInfinity: true }),
  queue_outage_secs: positiveSeconds(DEFAULT_OUTAGE_SECS, { allowInfinity: true }),
  queue_worker_wait_secs: positiveSeconds(DEFAULT_WORKER_WAIT_SECS, { allowInfinity: true }),
});

export function collectorQueueSettings(config: GlobalConfig, address: QueueAddress): CollectorQueueSettings {
  const keys = parseBlock(collectorKeys, config, configValueParagraph, 'GYM_CONFIG_VALUE');
  return {
    address,
    stallMs: keys.queue_stall_secs * 1000,
    outageMs: keys.queue_outage_secs * 1000,
    workerWaitMs: keys.queue_worker_wait_secs * 1000,
  };
}

export interface WorkerSettings {
  address: QueueAddress;
  concurrency: number;
  drainMs: number;
  agentWaitMs: number;
  id: string;
}

/** The worker's keys, in the order they are checked. */
const workerKeys = z.object({
  worker_concurrency: integerAtLeast(1, DEFAULT_WORKER_CONCURRENCY, { flag: '--concurrency' }),
  worker_id: text(defaultWorkerId, { maxLength: 200 }),
  worker_drain_secs: positiveSeconds(DEFAULT_DRAIN_SECS, { allowInfinity: true }),
  agent_unreachable_wait_secs: positiveSeconds(DEFAULT_WORKER_AGENT_WAIT_SECS, { allowInfinity: true }),
});

export function workerSettings(config: GlobalConfig): WorkerSettings {
  const address = queueAddressOf(config);
  if (!address) {
    throw new ConfigError(
      'gym worker needs the Redis to take jobs from: add --queue redis://HOST:PORT[/DB] (+queue_url=…), the same URL gym eval run --queue uses.',
      'GYM_CONFIG_VALUE',
    );
  }
  const keys = parseBlock(workerKeys, config, configValueParagraph, 'GYM_CONFIG_VALUE');
  return {
    address,
    concurrency: keys.worker_concurrency,
    drainMs: keys.worker_drain_secs * 1000,
    agentWaitMs: keys.agent_unreachable_wait_secs * 1000,
    id: keys.worker_id,
  };
}
