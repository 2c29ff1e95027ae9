/**
 * A producer without an environment learns which agents exist from the workers' roster in Redis: the agents of
 * every connected `gym worker`. It waits, saying so, until the workers serve every agent the rows name, and past
 * `queue_worker_wait_secs` fails with the input check's own error, naming the agents that are served.
 */
import type { Redis } from 'ioredis';
import type { AgentDirectory } from '../collect/agents.js';
import { ConfigError, GymError } from '../errors.js';
import { readWorkers } from './protocol.js';

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms).unref());

/** Resolves once the connection is up; a Redis unreachable for `ms` fails the run before anything is written. */
export async function reachRedis(client: Redis, queueUrl: string, ms: number): Promise<void> {
  if (client.status === 'ready') return;
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      new Promise<void>((resolve) => client.once('ready', () => resolve())),
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () =>
            reject(
              new GymError(
                'GYM_QUEUE_UNREACHABLE',
                'config',
                `Redis at ${queueUrl} could not be reached (waited ${Math.round(ms / 1000)} s, +queue_outage_secs); nothing was written or sent. Check the --queue URL and that Redis listens there.`,
              ),
            ),
          ms,
        );
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** The agents the connected workers serve, sorted. */
export async function servedAgents(client: Redis): Promise<string[]> {
  return [...new Set((await readWorkers(client)).flatMap((worker) => worker.agents))].sort();
}

function directoryOf(served: readonly string[], queueUrl: string, workers: number): AgentDirectory {
  const known = new Set(served);
  return {
    names: served,
    // Not an address the producer calls: jobs go through the queue, so any defined value means "served".
    urlOf: (name) => (known.has(name) ? queueUrl : undefined),
    source: `the gym workers on ${queueUrl} (${workers} connected)`,
  };
}

/**
 * Resolves once `check` (the input check) accepts the served agents; rechecks whenever they change. An error other
 * than an unknown agent, or the deadline, ends the wait.
 */
export async function waitForServedAgents(options: {
  client: Redis;
  queueUrl: string;
  waitMs: number;
  check: (agents: AgentDirectory) => Promise<void>;
  out: (line: string) => void;
}): Promise<AgentDirectory> {
  const { client, queueUrl, waitMs, out } = options;
  const deadline = Date.now() + waitMs;
  let last: string | undefined;
  for (;;) {
    const workers = await readWorkers(client);
    const served = [...new Set(workers.flatMap((worker) => worker.agents))].sort();
    const directory = directoryOf(served, queueUrl, workers.length);
    const key = served.join('\0');
    const expired = Date.now() >= deadline;
    if (key !== last || expired) {
      const first = last === undefined;
      last = key;
      try {
        await options.check(directory);
        return directory;
      } catch (error) {
        if (!(error instanceof ConfigError && error.code === 'GYM_CONFIG_UNKNOWN_AGENT')) throw error;
        if (expired) {
          throw new ConfigError(
            `No gym worker on ${queueUrl} served the rows' agents within ${Math.round(waitMs / 1000)} s (+queue_worker_wait_secs). ${error.message} Start gym worker --queue ${queueUrl} on a machine whose environment has them.`,
            'GYM_CONFIG_UNKNOWN_AGENT',
          );
        }
        const what =
          served.length > 0 ? `they serve ${served.map((name) => `'${name}'`).join(', ')}` : 'none serves an agent yet';
        out(
          `${first ? `Waiting up to ${Math.round(waitMs / 1000)} s for a gym worker on ${queueUrl} that serves the rows' agents` : 'Still waiting'}: ${workers.length} worker(s) connected, ${what}.`,
        );
      }
    }
    await pause(500);
  }
}
