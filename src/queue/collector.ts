/**
 * The one place `gym eval run` picks its dispatch backend: without `queue_url` the in-process pool, with it the
 * BullMQ backend, whose connections are released however the collection ends.
 */
import type { GlobalConfig } from '../config/types.js';
import { collectRollouts, type CollectOptions } from '../collect/collect.js';
import { artifactPaths } from '../runfiles/paths.js';
import { collectorQueueSettings, queueAddressOf } from './config.js';
import { fileDigest, runIdOf } from './protocol.js';

export async function collectWithBackend(global: GlobalConfig, options: CollectOptions): Promise<number> {
  const address = queueAddressOf(global);
  if (!address) return collectRollouts(options);
  const settings = collectorQueueSettings(global, address);
  const { config, io } = options;
  // BullMQ is loaded only by runs that use it.
  const { createRedisBackend } = await import('./redis-queue.js');
  const backend = createRedisBackend({
    ...settings,
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
