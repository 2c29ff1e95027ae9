/**
 * The one place `gym eval run` picks its dispatch backend: without `queue_url` the in-process pool, with it the
 * Redis backend, whose connections are released however the collection ends. A producer given no agents (no
 * head server named) learns them from the workers' roster and has its end-of-run metrics computed by a worker.
 */
import type { GlobalConfig } from '../config/types.js';
import type { AgentDirectory } from '../collect/agents.js';
import { collectRollouts, resolveInputPath, type CollectOptions } from '../collect/collect.js';
import { scanInput } from '../collect/materialize.js';
import { ConfigError } from '../errors.js';
import { artifactPaths } from '../runfiles/paths.js';
import { collectorQueueSettings, queueAddressOf, type CollectorQueueSettings } from './config.js';
import { fileDigest, runIdOf } from './protocol.js';

export type ProducerOptions = Omit<CollectOptions, 'agents'> & {
  /** The agents by URL (a head server's); undefined = learn them from the workers in Redis. */
  agents: AgentDirectory | undefined;
};

export async function collectWithBackend(global: GlobalConfig, options: ProducerOptions): Promise<number> {
  const address = queueAddressOf(global);
  if (!address) {
    if (!options.agents) throw new ConfigError('collectWithBackend: no agents and no queue_url', 'GYM_CONFIG_VALUE');
    return collectRollouts({ ...options, agents: options.agents });
  }
  const settings = collectorQueueSettings(global, address);
  if (options.agents) return collectThroughQueue(settings, { ...options, agents: options.agents });
  const { connect } = await import('./connection.js');
  const { reachRedis, waitForServedAgents, servedAgents } = await import('./worker-registry.js');
  const { remoteMetricsSource } = await import('./remote-aggregate.js');
  const client = connect(address, 'tsgym-producer');
  try {
    const { config, io } = options;
    await reachRedis(client, address.url, settings.outageMs);
    const agents = await waitForServedAgents({
      client,
      queueUrl: address.url,
      waitMs: settings.workerWaitMs,
      check: async (directory) => {
        await scanInput(resolveInputPath(config.inputPath), config, directory, () => undefined);
      },
      out: io.out,
    });
    return await collectThroughQueue(settings, {
      ...options,
      agents,
      // No agent is reachable from here: stages come from nowhere, metrics from a worker serving the agent.
      stageSource: options.stageSource ?? { poll: () => Promise.resolve([]) },
      metricsSource: remoteMetricsSource({
        client,
        queueUrl: address.url,
        waitMs: settings.workerWaitMs,
        served: () => servedAgents(client),
        log: io.out,
      }),
    });
  } finally {
    client.disconnect();
  }
}

async function collectThroughQueue(settings: CollectorQueueSettings, options: CollectOptions): Promise<number> {
  const { config, io } = options;
  const { address } = settings;
  // The queue backend is loaded only by runs that use it.
  const { createRedisBackend } = await import('./redis-queue.js');
  const backend = createRedisBackend({
    address,
    stallMs: settings.stallMs,
    outageMs: settings.outageMs,
    runId: async () =>
      runIdOf(config.outputPath, await fileDigest(artifactPaths(config.outputPath).materializedInputs)),
    output: config.outputPath,
    resume: config.resume,
    runTimeoutMs: config.runTimeoutMs,
    resumeCommand: options.resumeCommand ?? 'the same command plus --resume (+resume_from_cache=true)',
    warn: io.warn,
  });
  io.out(
    `Distributing rollouts through Redis at ${address.url}: start gym worker --queue ${address.url} on each machine with an environment.`,
  );
  try {
    return await collectRollouts({ ...options, createQueue: backend.create, progressDetail: backend.describe });
  } finally {
    await backend.close();
  }
}
