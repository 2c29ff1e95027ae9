/**
 * `gym worker --queue redis://HOST:PORT [--concurrency N]`: serve the rollout jobs of every `gym eval run --queue`
 * on that Redis with this machine's environment, until Ctrl-C (drain) or a second Ctrl-C (leave at once).
 */
import { loadGlobalConfig } from '../../config/index.js';
import { headServerAddress } from '../../collect/config.js';
import type { ParsedCommand } from '../argv.js';

const STOP_SIGNALS = ['SIGINT', 'SIGTERM'] as const;

export async function worker(cmd: ParsedCommand): Promise<number> {
  const config = await loadGlobalConfig({ overrides: cmd.overrides, allocatePorts: false });
  const { workerSettings } = await import('../../queue/config.js');
  const settings = workerSettings(config);
  const { agentDirectoryFromHead } = await import('../../collect/agents.js');
  const agents = await agentDirectoryFromHead(headServerAddress(config));
  const { startWorker } = await import('../../queue/worker.js');
  const log = (line: string): void => void process.stderr.write(`${line}\n`);
  const running = await startWorker({ ...settings, agents, log });
  let signals = 0;
  const onSignal = (): void => {
    signals++;
    if (signals > 1) {
      log(
        `worker ${settings.id}: second interrupt, leaving now; unfinished jobs go to another worker once their lock expires.`,
      );
      process.exit(130);
    }
    void running.stop();
  };
  for (const signal of STOP_SIGNALS) process.on(signal, onSignal);
  await running.stopped;
  for (const signal of STOP_SIGNALS) process.off(signal, onSignal);
  return 0;
}
