/** A server's life on a port: listening with tsgym's timeouts and accept queue, and closing without waiting on hung requests. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Listening {
  server: http.Server;
  url: string;
  port: number;
  /** A function of its own (no `this`), so it can be handed on detached: `{ close: listening.close }`. */
  close: () => Promise<void>;
}

const LISTEN_BACKLOG = 4096;

export async function listenWith(listener: http.RequestListener, port: number, host: string): Promise<Listening> {
  const server = http.createServer(
    // A rollout's /run may legitimately last 35 minutes: no request deadline at this layer.
    { requestTimeout: 0, headersTimeout: 60_000, keepAliveTimeout: 30_000 },
    listener,
  );
  // Longer than any client's keep-alive so a client never writes into a socket the server is closing.
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    // Node's default accept queue is 511 connections: a collector opening 2,000 at once overflowed it (the kernel's
    // ListenOverflows counter), and a connection the queue had dropped was reset after its request was sent, failing
    // that rollout. The kernel caps this at net.core.somaxconn (4096 by default).
    server.listen({ port, host, backlog: LISTEN_BACKLOG }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  return {
    server,
    port: address.port,
    url: `http://${shownHost}:${address.port}`,
    close: () => closeServer(server),
  };
}

export function closeServer(server: http.Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
    // In-flight long requests (a hung handler) must not keep a shutdown waiting.
    setTimeout(() => server.closeAllConnections(), 500).unref();
  });
}
