/**
 * What the servers of an environment are advertised at when its head server listens beyond loopback: the head
 * server hands their URLs to processes on other hosts (a producer pointed at it), so a loopback URL would mean the
 * wrong machine there. With no host of their own and no `default_host`, servers listen on (and are advertised at)
 * the head server's interface, or `head_server.advertise_host` when the head server listens on every interface;
 * a head server on every interface without `advertise_host` is refused with the setting to add.
 */
import { ConfigError } from '../errors.js';
import type { PlainObject } from './types.js';

const isLoopback = (host: string): boolean => /^127\./.test(host) || host === 'localhost' || host === '::1';
export const isWildcard = (host: string): boolean => host === '0.0.0.0' || host === '::' || host === '*';

/**
 * The default host of the servers. `head` is the head_server block, `headHost` its host as configured (before any
 * default), `fallback` the default host otherwise; `starting` = an environment is being started from this config.
 */
export function serverDefaultHost(
  head: PlainObject,
  headHost: unknown,
  fallback: string,
  starting: boolean,
  where: (key: string) => string,
): string {
  const advertise = head.advertise_host;
  if (advertise !== undefined && advertise !== null && advertise !== '') {
    if (typeof advertise !== 'string' || isWildcard(advertise)) {
      throw new ConfigError(
        `Config value 'head_server.advertise_host'${where('advertise_host')} must be the address other hosts reach this machine at (e.g. 10.0.0.5), got ${JSON.stringify(advertise)}.`,
        'GYM_CONFIG_HOST',
      );
    }
    return advertise;
  }
  if (typeof headHost !== 'string' || headHost === '' || isLoopback(headHost)) return fallback;
  if (!isWildcard(headHost)) return headHost;
  if (!starting || !isLoopback(fallback)) return fallback;
  throw new ConfigError(
    `The head server would listen on ${headHost} (every interface, head_server.host${where('host')}) but hand out server addresses on ${fallback}, which other hosts cannot reach. Add ++head_server.advertise_host=<this machine's address as other hosts reach it> (the servers listen there), or name one interface with ++head_server.host=<address>, or set ++default_host=<address>.`,
    'GYM_CONFIG_HOST',
  );
}
