/**
 * Host and port for the head server and every instance (reference `validate_and_populate_defaults`).
 * Explicit ports are reserved first, then each instance without one gets a random free port from
 * [port_range_low, port_range_high] that is not the head port, not listed in disallowed_ports and not
 * taken by another instance.
 */
import { lookup } from 'node:dns/promises';
import { hostname, networkInterfaces } from 'node:os';
import { ConfigError } from '../errors.js';
import { serverDefaultHost } from './advertise.js';
import { allocatePort } from './ports.js';
import { asPort, type InstanceShape } from './servers.js';
import type { ConfigSources } from './sources.js';
import {
  DEFAULT_HEAD_PORT,
  DEFAULT_HOST,
  DEFAULT_PORT_RANGE_HIGH,
  DEFAULT_PORT_RANGE_LOW,
  isPlainObject,
  type PlainObject,
} from './types.js';

export interface AddressOptions {
  allocatePorts: boolean;
  sources: ConfigSources;
}

/** The machine's own address, as `gethostbyname(gethostname())` would give it. */
async function machineAddress(): Promise<string> {
  try {
    return (await lookup(hostname(), { family: 4 })).address;
  } catch {
    for (const addresses of Object.values(networkInterfaces())) {
      const external = addresses?.find((address) => address.family === 'IPv4' && !address.internal);
      if (external) return external.address;
    }
    throw new ConfigError(
      `use_absolute_ip is true, but this machine's IP address could not be found (hostname '${hostname()}' does not resolve and no external IPv4 interface exists). Set default_host to the address other machines should use, e.g. ++default_host=10.0.0.5.`,
      'GYM_CONFIG_HOST',
    );
  }
}

/** An optional port setting at `path`, or `fallback` when it is unset (null, absent, 0). */
function portSetting(config: PlainObject, path: string[], fallback: number, sources: ConfigSources): number {
  let value: unknown = config;
  for (const segment of path) value = isPlainObject(value) ? value[segment] : undefined;
  if (!value) return fallback;
  const port = asPort(value);
  if (port === undefined) {
    throw new ConfigError(
      `Config value '${path.join('.')}'${sources.at(path)} must be an integer port between 1 and 65535, got ${JSON.stringify(value)}. Fix it, or remove it to use the default ${fallback}.`,
      'GYM_CONFIG_PORT',
    );
  }
  return port;
}

export async function assignAddresses(
  config: PlainObject,
  instances: readonly InstanceShape[],
  options: AddressOptions,
): Promise<void> {
  const { sources } = options;
  config.use_absolute_ip ??= false;
  const namedDefault =
    config.use_absolute_ip === true || (typeof config.default_host === 'string' && config.default_host !== '');
  const defaultHost =
    config.use_absolute_ip === true
      ? await machineAddress()
      : typeof config.default_host === 'string' && config.default_host !== ''
        ? config.default_host
        : DEFAULT_HOST;

  const head = config.head_server ?? {};
  if (!isPlainObject(head)) {
    throw new ConfigError(
      `Config value 'head_server'${sources.at(['head_server'])} must be a mapping {host, port}, got ${JSON.stringify(head)}. For example ++head_server.host=127.0.0.1 ++head_server.port=11000.`,
      'GYM_CONFIG_PORT',
    );
  }
  const headHost = head.host;
  if (!head.host) head.host = defaultHost;
  if (typeof head.host !== 'string') {
    throw new ConfigError(
      `Config value 'head_server.host'${sources.at(['head_server', 'host'])} must be a host name or address, got ${JSON.stringify(head.host)}.`,
      'GYM_CONFIG_HOST',
    );
  }
  // A head server beyond loopback hands out addresses other hosts must be able to use.
  const serverHost = namedDefault
    ? defaultHost
    : serverDefaultHost(head, headHost, defaultHost, options.allocatePorts, (key) => sources.at(['head_server', key]));
  config.head_server = head;
  const headPort = portSetting(config, ['head_server', 'port'], DEFAULT_HEAD_PORT, sources);
  head.port = headPort;

  const low = portSetting(config, ['port_range_low'], DEFAULT_PORT_RANGE_LOW, sources);
  const high = portSetting(config, ['port_range_high'], DEFAULT_PORT_RANGE_HIGH, sources);
  if (low > high) {
    throw new ConfigError(
      `port_range_low (${low}) is above port_range_high (${high}). Set port_range_low <= port_range_high.`,
      'GYM_CONFIG_PORT',
    );
  }
  config.port_range_low = low;
  config.port_range_high = high;

  const listed = config.disallowed_ports ?? [];
  if (!Array.isArray(listed) || listed.some((port) => asPort(port) === undefined)) {
    throw new ConfigError(
      `Config value 'disallowed_ports'${sources.at(['disallowed_ports'])} must be a list of ports (integers 1-65535), got ${JSON.stringify(listed)}.`,
      'GYM_CONFIG_PORT',
    );
  }
  const disallowed = new Set<number>([headPort, ...listed.map((port) => asPort(port)!)]);

  // Explicit addresses first, so a random pick can never land on a port a later instance asked for.
  const taken = new Map<string, string>([[`${head.host}:${headPort}`, 'head_server']]);
  for (const instance of instances) {
    const inner = instance.config;
    if (!inner.host) inner.host = serverHost;
    if (!inner.port) continue;
    const port = asPort(inner.port)!;
    inner.port = port;
    // The host was checked to be a string or unset when the instance was listed (servers.ts), and set above if unset.
    const address = `${String(inner.host)}:${port}`;
    const owner = taken.get(address);
    if (owner !== undefined) {
      const path = [instance.name, instance.serverType, instance.impl, 'port'];
      throw new ConfigError(
        `Server instance '${instance.name}'${sources.at(path)} asks for ${address}, which ${owner === 'head_server' ? 'is the head server address' : `server instance '${owner}' also asks for`}. Two servers cannot listen on the same address: change one port, or remove it to get a free one assigned.`,
        'GYM_CONFIG_PORT',
      );
    }
    taken.set(address, instance.name);
    disallowed.add(port);
  }
  if (options.allocatePorts) {
    for (const instance of instances) {
      if (instance.config.port) continue;
      const port = await allocatePort(low, high, disallowed);
      instance.config.port = port;
      disallowed.add(port);
    }
  }
  config.disallowed_ports = [...disallowed];
}
