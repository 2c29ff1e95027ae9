/**
 * One plain Redis connection (registry, roster, results, outage watch) with the settings every tsgym connection
 * uses, plus auto-pipelining: the commands of one event-loop turn (many workers' results) share one write.
 */
import { Redis } from 'ioredis';
import { connectionOptions, type QueueAddress } from './protocol.js';

export function connect(address: QueueAddress, name: string): Redis {
  const client = new Redis({ ...connectionOptions(address, name), enableAutoPipelining: true });
  // Connection errors are reported through the owners' status lines; an unhandled 'error' must not crash.
  client.on('error', () => undefined);
  return client;
}
