import { readServerEnv, type GlobalConfig, type ServerInstance } from '../config/index.js';
import { GymError } from '../errors.js';
import { guardProcess, type App, type Listening } from '../http/server.js';
import { flushTracing } from '../tracing/spans.js';
import { logFormatFromEnv } from '../logging/log.js';

export interface ServeContext {
  global: GlobalConfig;
  instance: ServerInstance;
}

export interface ServeInstanceOptions {
  /** Runs after the server stopped listening on SIGINT/SIGTERM, before the process exits (release resources). */
  onShutdown?: () => Promise<void>;
}

/**
 * Entry point of a server process started by `gym env start`: read this instance's config from the environment
 * (`NEMO_GYM_CONFIG_DICT` + `NEMO_GYM_CONFIG_PATH`), build the app, listen on the assigned host and port, and close
 * cleanly on SIGINT/SIGTERM. `guardProcess` logs whatever escapes every request's isolation; an uncaught exception
 * exits the process, which `gym env start` then restarts on the same address.
 */
export async function serveInstance(
  build: (ctx: ServeContext) => App | Promise<App>,
  options: ServeInstanceOptions = {},
): Promise<void> {
  // In a co-location host (D23) the host runs the server: it reads the config, listens and owns the signals.
  const host = (globalThis as Record<symbol, unknown>)[COLOCATION_HOST] as ColocationHost | undefined;
  if (host) return host.serve(build, options);
  try {
    const ctx = readServerEnv();
    // Before the app is built: a server's request events are wired in only in json mode (src/logging/log.ts).
    logFormatFromEnv(ctx.instance.name);
    guardProcess(ctx.instance.name);
    const app = await build(ctx);
    const { instance } = ctx;
    const listening = await listenInstance(app, instance);
    process.stdout.write(`${instance.name} listening on ${listening.url}\n`);
    const stop = (): void => {
      void listening
        .close()
        .then(() => options.onShutdown?.())
        .then(() => flushTracing())
        .catch((err: unknown) =>
          process.stderr.write(`Error while stopping: ${err instanceof Error ? err.message : String(err)}\n`),
        )
        .finally(() => process.exit(0));
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  } catch (err) {
    process.stderr.write(`Error: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  }
}

/** Listen on the instance's host and port; a port in use is a config error naming the key that moves it. */
export function listenInstance(app: App, instance: ServerInstance): Promise<Listening> {
  return app.listen(instance.port, instance.host).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'EADDRINUSE') {
      throw new GymError(
        'GYM_PORT_IN_USE',
        'config',
        `port ${instance.port} on ${instance.host} is already in use, so server '${instance.name}' cannot start. ` +
          `Stop whatever holds it, or set another port with ++${instance.name}.${instance.serverType}.${instance.impl}.port=<free port> ` +
          '(or leave the port unset to get a free one).',
      );
    }
    throw err;
  });
}

/**
 * The process-wide slot a co-location host fills before it imports its servers' modules. A global symbol, not a
 * module variable: an environment importing `tsgym/environment` from its own install loads another copy of this
 * module, and must still find the host.
 */
export const COLOCATION_HOST = Symbol.for('tsgym.colocation-host');

export interface ColocationHost {
  serve(build: (ctx: ServeContext) => App | Promise<App>, options: ServeInstanceOptions): Promise<void>;
}

export { isMainModule } from '../main-module.js';
