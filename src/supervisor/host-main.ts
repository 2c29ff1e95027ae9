/**
 * The process of a co-located pair (decision D23; `colocate.ts` decides who pairs): it imports the environment's
 * module, then the remote agent's, each as if it were the process's entry script and with its own config, so their
 * unchanged `serveInstance` / `runEnvironment` calls reach this host instead of serving alone. Each server listens on
 * its own host and port and prints its own `listening on` line; the environment is registered for in-process calls,
 * so the agent's seed, tool and verify calls skip the network (`src/http/in-process.ts`).
 *
 * One process, one fate: an uncaught exception anywhere (environment code included) exits it with code 70, a
 * failure to build or listen either server exits it with code 1, and the supervisor restarts the pair as one unit.
 * SIGINT/SIGTERM stop the agent's listener first, then the environment's, run each server's shutdown hook (the
 * environment disposes its sessions), and exit 0.
 */
import { pathToFileURL } from 'node:url';
import { CONFIG_DICT_ENV, CONFIG_PATH_ENV, readServerEnv } from '../config/index.js';
import { GymError } from '../errors.js';
import { registerLocalServer, unregisterLocalServer, type LocalServer } from '../http/in-process.js';
import { guardProcess, type App, type Listening } from '../http/server.js';
import {
  COLOCATION_HOST,
  listenInstance,
  type ColocationHost,
  type ServeContext,
  type ServeInstanceOptions,
} from '../server/serve.js';
import { didNotStartLine, HOST_MEMBERS_ENV, type HostMember } from './colocate.js';
import { flushTracing } from '../tracing/spans.js';
import { logFormatFromEnv } from '../logging/log.js';

interface Served {
  name: string;
  url: string;
  listening: Listening;
  options: ServeInstanceOptions;
  inProcess: boolean;
}

/** How long a member's module may take, once imported, to call `serveInstance` / `runEnvironment`. */
const REGISTER_WAIT_MS = 30_000;

async function main(): Promise<void> {
  const members = JSON.parse(process.env[HOST_MEMBERS_ENV] ?? '[]') as HostMember[];
  // Each member's config is read once and taken out of the environment: the agent's config (masked for any other
  // server, D16) is not left where the environment's code would find it.
  const configs = new Map(members.map((m) => [m.name, process.env[m.configVar] ?? '']));
  for (const m of members) delete process.env[m.configVar];
  delete process.env[HOST_MEMBERS_ENV];
  logFormatFromEnv(members.map((m) => m.name).join('+'));
  guardProcess(members.map((m) => m.name).join('+'));
  const served: Served[] = [];
  let current: { member: HostMember; resolve: (started: { done: Promise<void> }) => void } | undefined;
  const host: ColocationHost = {
    serve(build, options) {
      const claim = current;
      current = undefined;
      if (!claim) {
        return Promise.reject(new Error('a co-located module started a second server; only one per module is run'));
      }
      const done = start(claim.member, build, options).then((entry) => void served.push(entry));
      claim.resolve({ done });
      // The module's own `void serveInstance(…)` must not see the failure as an unhandled rejection: main reports it.
      return done.catch(() => undefined);
    },
  };
  (globalThis as Record<symbol, unknown>)[COLOCATION_HOST] = host;

  for (const member of members) {
    await startMember(member, configs.get(member.name)!, (resolve) => (current = { member, resolve })).catch(
      (err: unknown) => {
        process.stderr.write(`${didNotStartLine(member.name)}\n`);
        throw err;
      },
    );
  }
  // What the environment (the first member) reads from here on is its own config, as in a process of its own.
  const [first] = members;
  if (first) {
    process.env[CONFIG_DICT_ENV] = configs.get(first.name)!;
    process.env[CONFIG_PATH_ENV] = first.name;
  }

  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    void (async () => {
      for (const entry of [...served].reverse()) {
        if (entry.inProcess) unregisterLocalServer(entry.url);
        await entry.listening.close();
        await entry.options.onShutdown?.();
      }
      await flushTracing();
    })()
      .catch((err: unknown) => process.stderr.write(`Error while stopping: ${describe(err)}\n`))
      .finally(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

/** Import one member's module and wait until the server it starts listens. */
async function startMember(
  member: HostMember,
  config: string,
  claim: (resolve: (started: { done: Promise<void> }) => void) => void,
): Promise<void> {
  const registered = new Promise<{ done: Promise<void> }>((resolve) => claim(resolve));
  // The module sees what a process of its own would: its config in the usual variables, itself as the entry.
  process.env[CONFIG_DICT_ENV] = config;
  process.env[CONFIG_PATH_ENV] = member.name;
  process.argv[1] = member.script;
  await import(pathToFileURL(member.script).href);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), REGISTER_WAIT_MS)));
  const outcome = await Promise.race([registered, late]);
  clearTimeout(timer);
  if (outcome === 'late') {
    throw new GymError(
      'GYM_COLOCATED_NO_SERVER',
      'config',
      `${member.script} (server '${member.name}') was imported but started no server within ${REGISTER_WAIT_MS / 1000}s ` +
        '(its entry calls neither serveInstance nor runEnvironment). Set colocate: false on that server to run it on its own.',
    );
  }
  await outcome.done;
}

async function start(
  member: HostMember,
  build: (ctx: ServeContext) => App | Promise<App>,
  options: ServeInstanceOptions,
): Promise<Served> {
  // Read while the member's module is being started: its config is in the usual variables then.
  const ctx = readServerEnv();
  const app = await build(ctx);
  const { instance } = ctx;
  const listening = await listenInstance(app, instance);
  // An App of an older tsgym copy (an environment with its own install) cannot be called in-process: HTTP it is.
  const local = member.inProcess && typeof (app as Partial<LocalServer>).inject === 'function';
  if (local) registerLocalServer(instance.url, app);
  process.stdout.write(`${instance.name} listening on ${listening.url}\n`);
  if (local) process.stdout.write(`${instance.name} co-located: its agent calls it in-process\n`);
  return { name: instance.name, url: instance.url, listening, options, inProcess: local };
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

main().catch((err: unknown) => {
  process.stderr.write(`Error: ${describe(err)}\n`);
  process.exit(1);
});
