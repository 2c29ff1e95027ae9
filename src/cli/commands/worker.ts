/**
 * `gym worker --queue redis://HOST:PORT [--concurrency N]`: serve the rollout jobs of every `gym eval run --queue`
 * on that Redis with this machine's environment, until Ctrl-C (drain) or a second Ctrl-C (leave at once).
 */
import { loadGlobalConfig } from '../../config/index.js';
import { ConfigError } from '../../errors.js';
import { applyLogFormat } from '../../logging/log.js';
import { headServerAddress } from '../../collect/config.js';
import type { ParsedCommand } from '../argv.js';

const STOP_SIGNALS = ['SIGINT', 'SIGTERM'] as const;

export async function worker(cmd: ParsedCommand): Promise<number> {
  const config = await loadGlobalConfig({ overrides: cmd.overrides, allocatePorts: false });
  applyLogFormat(config, 'worker');
  const { workerSettings } = await import('../../queue/config.js');
  const settings = workerSettings(config);
  const { agentDirectoryFromHead } = await import('../../collect/agents.js');
  const agents = await agentDirectoryFromHead(headServerAddress(config));
  const { startWorker } = await import('../../queue/worker.js');
  const log = (line: string): void => void process.stderr.write(`${line}\n`);
  const metrics = await workerMetricsListener(config, log);
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
  metrics?.close();
  return 0;
}

/** `--metrics-port N` (`+metrics_port`, with `+metrics_host`): the worker's `GET /metrics` listener. */
async function workerMetricsListener(
  config: Record<string, unknown>,
  log: (line: string) => void,
): Promise<{ close(): void } | undefined> {
  const port = config.metrics_port;
  if (port === undefined || port === null) return undefined;
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw new ConfigError(
      `metrics_port must be a port number from 0 to 65535, got ${JSON.stringify(port)}.`,
      'GYM_CONFIG_METRICS_PORT',
    );
  }
  const host =
    typeof config.metrics_host === 'string' && config.metrics_host !== '' ? config.metrics_host : '127.0.0.1';
  const { serveWorkerMetrics } = await import('../../queue/worker-metrics.js');
  const listener = await serveWorkerMetrics(host, port).catch((err: unknown) => {
    const code = (err as NodeJS.ErrnoException).code;
    const why =
      code === 'EADDRINUSE'
        ? `port ${port} on ${host} is already in use`
        : code === 'EACCES'
          ? `port ${port} needs privileges this user does not have`
          : `${host}:${port} cannot be listened on (${code ?? String(err)})`;
    throw new ConfigError(
      `gym worker cannot serve its metrics: ${why}. Pick another with --metrics-port N (+metrics_port; 0 for any free ` +
        'port) or another address with +metrics_host=<address of this machine>.',
      'GYM_CONFIG_METRICS_PORT',
    );
  });
  log(`worker metrics on ${listener.url}`);
  return listener;
}
