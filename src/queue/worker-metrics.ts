/**
 * `gym worker`'s Prometheus metrics: the jobs it runs in flight and finished by outcome class, counted around its
 * executor, and the listener that serves `GET /metrics` when `--metrics-port` is given (the worker has no server
 * of its own otherwise).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RolloutExecutor } from '../collect/executor.js';
import { isUndelivered } from '../collect/reachability.js';
import { exposition, workerMetrics } from '../prometheus/metrics.js';
import { failureClassOf } from '../runfiles/row.js';

export function countedExecutor(execute: RolloutExecutor): RolloutExecutor {
  return async (job) => {
    workerMetrics.inFlight.inc();
    try {
      const row = await execute(job);
      workerMetrics.finished.inc({
        outcome_class: isUndelivered(row) ? 'handed_back' : (failureClassOf(row) ?? 'completed'),
      });
      return row;
    } finally {
      workerMetrics.inFlight.dec();
    }
  };
}

/** Serves `GET /metrics` (anything else 404) on host:port; resolves with the address once listening. */
export async function serveWorkerMetrics(host: string, port: number): Promise<{ url: string; close(): void }> {
  const server = http.createServer((req, res) => {
    if (req.method !== 'GET' || req.url?.split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Not Found\n');
      return;
    }
    exposition().then(
      ({ text, contentType }) => res.writeHead(200, { 'content-type': contentType }).end(text),
      (err: unknown) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`${String(err)}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  server.unref();
  const address = server.address() as AddressInfo;
  return { url: `http://${host}:${address.port}/metrics`, close: () => server.close() };
}
