/**
 * What the head server lists at `GET /scrape_targets` for Prometheus's `http_sd_configs`: one target group per
 * process that serves `GET /metrics`, i.e. per unit (`colocate.ts`) holding an agent or resources server run by node
 * on tsgym's bases. A co-located pair shares one registry, so it is listed once (at its environment's port), or every
 * sample of the process would be counted twice; a Python server has no `/metrics` and is left out, as is any other
 * server type (model servers are not built on tsgym's bases).
 *
 * Addresses are ones a scraper on another host reaches: a server's own host, or, for a server bound to every
 * interface, `head_server.advertise_host` (src/config/advertise.ts), else `default_host`, else the head server's own
 * host, else loopback. Labels are bounded by the config: `server` (the
 * unit's name, `<environment>+<agent>` for a pair) and `server_kind` (`agent`, `resources` or `resources+agent`).
 * Neither clashes with a label tsgym's metrics carry (`kind` would: `gym_agent_retries_total` has one).
 */
import { isWildcard } from '../config/advertise.js';
import type { GlobalConfig } from '../config/index.js';
import type { ScrapeTargetGroup } from '../server/head-server.js';
import { runsOnNode, type Unit } from './colocate.js';

const KIND: Record<string, string> = { responses_api_agents: 'agent', resources_servers: 'resources' };

export function scrapeTargets(units: readonly Unit[], config: GlobalConfig): ScrapeTargetGroup[] {
  const groups: ScrapeTargetGroup[] = [];
  for (const unit of units) {
    const served = unit.plans.filter((plan) => KIND[plan.instance.serverType] !== undefined && runsOnNode(plan));
    if (served.length === 0) continue;
    const { host, port } = served[0]!.instance;
    groups.push({
      targets: [hostPort(reachableHost(host, config), port)],
      labels: {
        server: unit.name,
        server_kind: served.map((plan) => KIND[plan.instance.serverType]).join('+'),
      },
    });
  }
  return groups;
}

/** A listening host a scraper can connect to: a wildcard becomes the address the machine is advertised at. */
function reachableHost(host: string, config: GlobalConfig): string {
  if (!isWildcard(host)) return host;
  const head = typeof config.head_server === 'object' && config.head_server !== null ? config.head_server : {};
  const { advertise_host: advertise, host: headHost } = head as Record<string, unknown>;
  for (const candidate of [advertise, config.default_host, headHost])
    if (typeof candidate === 'string' && candidate !== '' && !isWildcard(candidate)) return candidate;
  return '127.0.0.1';
}

function hostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}
