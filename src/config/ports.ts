/** Free-port discovery for server instances (reference `find_open_port`). */
import { createServer } from 'node:net';
import { ConfigError } from '../errors.js';

const MAX_ATTEMPTS = 50;

/** True when `port` can be bound on `host` right now (it is released at once, so a race remains). */
export function isPortFree(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/** A port the OS reports free on `host` (bind to port 0). */
export function findFreePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen({ port: 0, host, exclusive: true }, () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/**
 * A random port in [low, high] (inclusive) that is not disallowed and binds on 127.0.0.1; up to 50 tries.
 * The caller adds the result to its disallowed list.
 */
export async function allocatePort(
  low: number,
  high: number,
  disallowed: ReadonlySet<number>,
  random: () => number = Math.random,
): Promise<number> {
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const port = low + Math.floor(random() * (high - low + 1));
    if (disallowed.has(port)) continue;
    if (await isPortFree(port)) return port;
  }
  throw new ConfigError(
    `Unable to find an open port that doesn't conflict with disallowed ports [${[...disallowed].join(', ')}] after ${MAX_ATTEMPTS} attempts in the range ${low}-${high} (port_range_low / port_range_high). Widen the range, e.g. ++port_range_low=10001 ++port_range_high=20000, free some ports, or set each server's port explicitly.`,
    'GYM_CONFIG_NO_FREE_PORT',
  );
}
