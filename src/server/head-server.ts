import { describeConfig, type GlobalConfig } from '../config/index.js';
import { App } from '../http/server.js';

/**
 * The head server: runs inside the `gym env start` process and tells other processes (collectors, `gym env
 * status`, `gym env stop`) what is running. Its wire shapes match the reference's `HeadServer`, so a collector
 * written against either reads the other; unlike the reference it never serves secret values (decision D16) and
 * it can be asked to stop (`POST /shutdown`, used by `gym env stop`) and it lists the `/metrics` addresses of its
 * servers for Prometheus (`GET /scrape_targets`, src/supervisor/scrape-targets.ts).
 */

/** One spawned server, as the reference's `ServerInstanceDisplayConfig` serialises it. */
export interface InstanceRecord {
  /** The instance key in the config (the name agents and collectors use). */
  process_name: string;
  server_type: string;
  /** The impl directory name. */
  name: string;
  dir_path: string;
  entrypoint: string;
  host: string;
  port: number;
  url: string;
  pid: number | null;
  config_path: string;
  /** Epoch seconds. */
  start_time: number;
  /** Filled only by `gym env status` (the head server does not probe). */
  status: InstanceStatus | null;
  uptime_seconds: number | null;
  /** How often the supervisor restarted this server after it exited unexpectedly (decision D20; tsgym only). */
  restarts?: number;
  /** Why it last exited unexpectedly, and when (`was killed by SIGKILL at 2026-…Z`); null while it never did. */
  last_exit?: string | null;
}

export type InstanceStatus = 'success' | 'connection_error' | 'timeout' | 'unknown_error';

export interface HeadServerOptions {
  config: GlobalConfig;
  /** The servers spawned so far; read on every request, so the list grows during start-up. */
  instances: () => readonly InstanceRecord[];
  /** Called once, after the `/shutdown` reply has been sent. */
  onShutdown: () => void;
  /** The servers that answer `GET /metrics`, as `GET /scrape_targets` lists them; read on every request. */
  scrapeTargets?: () => readonly ScrapeTargetGroup[];
}

/** One entry of Prometheus's HTTP service discovery (`http_sd_configs`): one process's `/metrics` address. */
export interface ScrapeTargetGroup {
  targets: string[];
  labels: Record<string, string>;
}

export function createHeadServer(options: HeadServerOptions): App {
  const app = new App();
  // Rendered once: the config does not change while the environment runs, and collectors fetch it per run.
  const configYaml = describeConfig(options.config);
  let shuttingDown = false;

  const ok = () => ({ body: { status: 'ok' } });
  app.get('/', ok);
  app.get('/health', ok);
  // A JSON string whose content is YAML, exactly as the reference answers (collectors decode it twice, Q18).
  app.get('/global_config_dict_yaml', () => ({ body: configYaml }));
  app.get('/server_instances', () => ({
    body: options.instances().map((record) => ({ ...record, status: null, uptime_seconds: null })),
  }));
  // Prometheus's http_sd_configs format; tsgym only (the reference has no /metrics).
  app.get('/scrape_targets', () => ({ body: options.scrapeTargets?.() ?? [] }));
  app.post('/shutdown', () => {
    const already = shuttingDown;
    shuttingDown = true;
    // setImmediate: the reply is written when this handler returns, before the stop begins.
    if (!already) setImmediate(options.onShutdown);
    return { body: { status: already ? 'already shutting down' : 'shutting down' } };
  });
  return app;
}
