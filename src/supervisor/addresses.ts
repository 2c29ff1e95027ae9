import { isPortFree, type GlobalConfig, type ServerInstance } from '../config/index.js';
import { ConfigError } from '../errors.js';
import { answers } from '../http/readiness.js';

/**
 * Where an environment's processes listen, checked before anything starts: the head server's address from the
 * config, no port given to two servers, every server port free, and what a failed listen of the head server means
 * (another `gym env start` already there, or an address this host does not have) in one paragraph naming the
 * override that fixes it.
 */

export interface HeadAddress {
  host: string;
  port: number;
  url: string;
}

/** Where the head server listens: `head_server.host/port`, default 127.0.0.1:11000 (decision C1). */
export function headAddress(config: GlobalConfig): HeadAddress {
  const block = config.head_server;
  const headServer = typeof block === 'object' && block !== null ? (block as Record<string, unknown>) : {};
  const host = typeof headServer.host === 'string' && headServer.host ? headServer.host : '127.0.0.1';
  const port = headServer.port === undefined || headServer.port === null ? 11000 : Number(headServer.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new ConfigError(
      `head_server.port must be a port number (0-65535), got ${JSON.stringify(headServer.port)}. ` +
        'Set it with ++head_server.port=<port>.',
      'GYM_HEAD_PORT',
    );
  }
  return { host, port, url: `http://${host.includes(':') ? `[${host}]` : host}:${port}` };
}

function portKey(instance: ServerInstance): string {
  return `++${instance.name}.${instance.serverType}.${instance.impl}.port`;
}

export function assertDistinctAddresses(head: HeadAddress, instances: readonly ServerInstance[]): void {
  const owners = new Map<number, string>([[head.port, 'head_server.port']]);
  for (const instance of instances) {
    const previous = owners.get(instance.port);
    if (previous !== undefined) {
      throw new ConfigError(
        `Port ${instance.port} is assigned twice: to ${previous} and to server '${instance.name}'. ` +
          `Give one of them another port (e.g. ${portKey(instance)}=<free port>), or leave the server's port unset to get a free one.`,
        'GYM_PORT_CONFLICT',
      );
    }
    owners.set(instance.port, `server '${instance.name}'`);
  }
}

export async function assertServerPortsFree(instances: readonly ServerInstance[]): Promise<void> {
  const free = await Promise.all(instances.map((i) => isPortFree(i.port, i.host)));
  const taken = instances.find((_, index) => !free[index]);
  if (taken) {
    throw new ConfigError(
      `Port ${taken.port} on ${taken.host} is already in use, so server '${taken.name}' cannot start there. ` +
        `Stop whatever holds it (a previous \`gym env start\`? \`gym env stop\` ends it), or choose another port with ` +
        `${portKey(taken)}=<free port> (or leave the port unset to get a free one).`,
      'GYM_PORT_IN_USE',
    );
  }
}

export async function headListenError(err: unknown, head: HeadAddress): Promise<Error> {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'EADDRINUSE') {
    const gymAlreadyThere = await answers(head.url, 1_000);
    return new ConfigError(
      `Port ${head.port} on ${head.host} is already in use, so the head server cannot start. ` +
        (gymAlreadyThere
          ? `Something answers HTTP there — probably another \`gym env start\` (\`gym env stop ++head_server.port=${head.port}\` ends it). `
          : '') +
        `Choose another port with ++head_server.port=<free port> (pass the same override to \`gym env status\`, ` +
        '`gym env stop` and `gym eval run --no-serve` so they find this environment).',
      'GYM_PORT_IN_USE',
    );
  }
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND' || code === 'EACCES') {
    return new ConfigError(
      `The head server cannot listen on ${head.host}:${head.port} (${code}). Set a local address with ` +
        '++head_server.host=<host> and a port you may bind with ++head_server.port=<port>.',
      'GYM_HEAD_LISTEN',
    );
  }
  return err instanceof Error ? err : new Error(String(err));
}
