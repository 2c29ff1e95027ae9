import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { installRoot, listServerInstances, searchRoots, serverEnv, type GlobalConfig } from '../config/index.js';
import { ConfigError, GymError } from '../errors.js';
import type { Listening } from '../http/server.js';
import { createHeadServer, type InstanceRecord } from '../server/head-server.js';
import { describePlans, planServer, type Plan } from './plan.js';
import { waitUntilAnswering } from '../http/readiness.js';
import {
  assertDistinctAddresses,
  assertServerPortsFree,
  headAddress,
  headListenError,
  type HeadAddress,
} from './addresses.js';
import { Reaper } from './reaper.js';
import { describeExit, ServerProcess, type ExitInfo } from './server-process.js';
import { describeUnits, failedMember, groupIntoUnits, type Unit } from './colocate.js';
import { jsonLogs, LOG_FORMAT_ENV } from '../logging/log.js';
import { scrapeTargets } from './scrape-targets.js';

/**
 * Runs an environment: the head server in this process, every configured server in a child process — its own, or,
 * for tsgym's remote agent and its TypeScript resources server, one they share (a unit, `colocate.ts`, D23). Used by
 * `gym env start` and by `gym eval run` without `--no-serve`. Start-up, readiness, restarts and stops are per unit:
 * a co-located pair is started, restarted and stopped together, and each of its servers keeps its own record.
 *
 * Lifetime guarantees: a server that dies during start-up stops the rest and fails the start with its last log
 * lines. A server that dies later is restarted on the same host and port after a backoff (0.25 s, 1 s, 2 s, 4 s,
 * 8 s for the 1st…5th restart within the window), so an OOM kill at hour 9 costs the rollouts it had in flight, not
 * the run (decision D20); a crash loop — a 6th unexpected exit within 10 minutes — stops the whole environment with
 * that server's last log lines. The head server reports each server's restarts and last exit cause
 * (`gym env status`). `stop()` sends SIGINT, waits a grace period, then SIGKILLs and reaps. If this process dies
 * without stopping (even by SIGKILL), the reaper (`reaper-main.ts`) kills the servers' process groups.
 */

export interface StartOptions {
  /** Where `<instance>.log` files go. Default: the `nemo_gym_log_dir` key, else `<cwd>/logs/<timestamp>`. */
  logDir?: string;
  /** Receives the servers' output lines (prefixed `(<instance>) `) and progress notes. Default: stdout. */
  out?: NodeJS.WritableStream;
  cwd?: string;
  /** Environment for search roots and for the servers. Default: `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** Aborting during start-up stops everything started so far; the promise then rejects with `StartAborted`. */
  signal?: AbortSignal;
  /** How long every server together may take to answer. Default 120 s. */
  startupTimeoutMs?: number;
  /** How long a server may take to exit after SIGINT before it is SIGKILLed. Default 2 s. */
  graceMs?: number;
  /** When a server that dies after start-up is restarted. Default `DEFAULT_RESTART_POLICY`. */
  restartPolicy?: RestartPolicy;
}

export interface RestartPolicy {
  /** Restarts allowed within `windowMs`; one more unexpected exit is a crash loop and stops the environment. */
  maxRestarts: number;
  windowMs: number;
  /** Wait before the n-th restart within the window (the last entry repeats). */
  backoffMs: readonly number[];
}

/** More than 5 restarts within 10 minutes is a crash loop. */
export const DEFAULT_RESTART_POLICY: RestartPolicy = {
  maxRestarts: 5,
  windowMs: 10 * 60_000,
  backoffMs: [250, 1_000, 2_000, 4_000, 8_000],
};

export type StopReason =
  | { kind: 'stopped' }
  | { kind: 'shutdown_requested' }
  /** A crash loop: the server exited more often than the restart policy allows. */
  | { kind: 'server_exited'; name: string; exit: ExitInfo; tail: string[]; logFile: string; restarts: number };

export interface RunningEnvironment {
  headUrl: string;
  instances: InstanceRecord[];
  logDir: string;
  /** Resolves once everything has stopped, saying why (`stop()`, `POST /shutdown`, or a server that died). */
  done: Promise<StopReason>;
  /** Graceful stop of every server, then the head server. Idempotent. */
  stop(): Promise<void>;
  /** SIGKILL every server now (a second Ctrl-C); a running `stop()` then finishes at once. */
  kill(): void;
}

/** The start was interrupted through `StartOptions.signal`; everything started has been stopped. */
export class StartAborted extends GymError {
  constructor() {
    super('GYM_START_ABORTED', 'config', 'Start-up was interrupted; every server started so far has been stopped.');
  }
}

const DEFAULT_GRACE_MS = 2_000;
const DEFAULT_STARTUP_TIMEOUT_MS = 120_000;
const PROGRESS_EVERY_MS = 5_000;

const NO_SERVERS_MESSAGE =
  'No server instances are configured, so there is nothing to run. Pass one or more configs, e.g.:\n' +
  '  gym env start --config resources_servers/<env>/configs/<env>.yaml --config <agent config>.yaml';

export async function startEnvironment(config: GlobalConfig, options: StartOptions = {}): Promise<RunningEnvironment> {
  const cwd = options.cwd ?? process.cwd();
  const env = options.env ?? process.env;
  const out = options.out ?? process.stdout;

  if (options.signal?.aborted) throw new StartAborted();
  const instances = listServerInstances(config);
  if (instances.length === 0) {
    // A misspelt config_paths (`+config_path=[…]`) is taken as a plain key: name it, or the configs seem to vanish.
    const misspelt = Object.keys(config).find(
      (key) => key !== 'config_paths' && /^configs?(_?paths?|_files?)?$/.test(key),
    );
    const hint = misspelt
      ? `\nYou set '${misspelt}', which is not a key gym reads: the configs go in config_paths, e.g. "+config_paths=[a.yaml,b.yaml]".`
      : '';
    throw new ConfigError(NO_SERVERS_MESSAGE + hint, 'GYM_NO_SERVER_INSTANCES');
  }
  const head = headAddress(config);
  assertDistinctAddresses(head, instances);
  // Everything that can be wrong in the config is checked before the first process starts.
  const planContext = { config, roots: searchRoots(env, cwd), installRoot: installRoot(), cwd, env };
  const plans: Plan[] = instances.map((instance) => planServer(instance, planContext));
  const units = groupIntoUnits(plans, planContext.installRoot, (name) => serverEnv(config, name));
  await assertServerPortsFree(instances);
  const logDir = makeLogDir(config, options.logDir, cwd);
  out.write(describePlans(plans) + describeUnits(units));

  const supervisor = new Supervisor(
    config,
    units,
    logDir,
    out,
    env,
    options.graceMs ?? DEFAULT_GRACE_MS,
    options.restartPolicy ?? DEFAULT_RESTART_POLICY,
    options.startupTimeoutMs ?? DEFAULT_STARTUP_TIMEOUT_MS,
  );
  await supervisor.listenHead(head);
  supervisor.spawnAll();
  await supervisor.waitUntilReady(options.signal);
  return supervisor.running();
}

class Supervisor {
  /** Per unit (same index as `units`). */
  private readonly processes: ServerProcess[] = [];
  private readonly records: InstanceRecord[] = [];
  /** Per unit: the records of its servers. */
  private readonly unitRecords: InstanceRecord[][] = [];
  private readonly reaper = new Reaper();
  private head: Listening | undefined;
  private stopping: Promise<void> | undefined;
  private resolveDone!: (reason: StopReason) => void;
  readonly done = new Promise<StopReason>((resolve) => (this.resolveDone = resolve));
  private readonly killOnExit = (): void => this.kill();
  /** Per unit (same index as `processes`): when it was restarted, within the policy's window. */
  private readonly restartTimes: number[][] = [];
  /** Cuts a restart's backoff wait and readiness poll short when the environment stops. */
  private readonly stopSignal = new AbortController();

  constructor(
    private readonly config: GlobalConfig,
    private readonly units: Unit[],
    private readonly logDir: string,
    private readonly out: NodeJS.WritableStream,
    private readonly env: NodeJS.ProcessEnv,
    private readonly graceMs: number,
    private readonly restartPolicy: RestartPolicy,
    private readonly startupTimeoutMs: number,
  ) {
    process.on('exit', this.killOnExit);
  }

  async listenHead(head: HeadAddress): Promise<void> {
    const app = createHeadServer({
      config: this.config,
      instances: () => this.records,
      onShutdown: () => void this.stop({ kind: 'shutdown_requested' }),
      // The units spawned so far, like the instance list.
      scrapeTargets: () => scrapeTargets(this.units.slice(0, this.processes.length), this.config),
    });
    try {
      this.head = await app.listen(head.port, head.host);
    } catch (err) {
      await this.stop({ kind: 'stopped' });
      throw await headListenError(err, head);
    }
  }

  spawnAll(): void {
    for (const unit of this.units) {
      const server = this.spawn(unit);
      this.processes.push(server);
      this.restartTimes.push([]);
      this.unitRecords.push(unit.plans.map((plan) => this.record(plan, server.pid)));
    }
    // Listed in the config's order, as when each server had its own process.
    const order = Object.keys(this.config);
    this.records.sort((a, b) => order.indexOf(a.process_name) - order.indexOf(b.process_name));
  }

  private record(plan: Plan, pid: number | undefined): InstanceRecord {
    const { instance } = plan;
    const record: InstanceRecord = {
      process_name: instance.name,
      server_type: instance.serverType,
      name: instance.impl,
      dir_path: plan.dirPath,
      entrypoint: plan.entrypoint,
      host: instance.host,
      port: instance.port,
      url: instance.url,
      pid: pid ?? null,
      config_path: instance.name,
      start_time: Date.now() / 1000,
      status: null,
      uptime_seconds: null,
      restarts: 0,
      last_exit: null,
    };
    this.records.push(record);
    return record;
  }

  /** The process of `unit`, its pid registered with the reaper until it exits. */
  private spawn(unit: Unit): ServerProcess {
    const [first, ...rest] = unit.plans.map((plan) => path.join(this.logDir, `${plan.instance.name}.log`));
    const server = new ServerProcess({
      name: unit.name,
      launch: unit.launch,
      env: { ...this.env, ...unit.launch.env, ...unit.env, [LOG_FORMAT_ENV]: jsonLogs() ? 'json' : 'text' },
      logFile: first!,
      alsoLogTo: rest,
      out: this.out,
    });
    const pid = server.pid;
    if (pid !== undefined) {
      this.reaper.register(pid);
      void server.exited.then(() => this.reaper.unregister(pid));
    }
    return server;
  }

  async waitUntilReady(signal: AbortSignal | undefined): Promise<void> {
    const timeoutMs = this.startupTimeoutMs;
    const polls = new AbortController();
    const ready = new Set<string>();
    const n = this.processes.length;
    const allUp = Promise.all(
      this.processes.map(async (server, i) => {
        const urls = this.units[i]!.plans.map((plan) => plan.instance.url);
        const answers = await Promise.all(urls.map((url) => waitUntilAnswering(url, { signal: polls.signal })));
        if (answers.every(Boolean)) ready.add(server.name);
      }),
    ).then(() => ({ kind: 'ready' as const }));
    const firstExit = Promise.race(
      this.processes.map((server) => server.exited.then((exit) => ({ kind: 'exited' as const, server, exit }))),
    );
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<{ kind: 'timeout' }>((resolve) => {
      timer = setTimeout(() => resolve({ kind: 'timeout' }), timeoutMs);
    });
    const aborted = new Promise<{ kind: 'aborted' }>((resolve) => {
      if (signal?.aborted) resolve({ kind: 'aborted' });
      signal?.addEventListener('abort', () => resolve({ kind: 'aborted' }), { once: true });
    });
    const waiting = (): string[] => this.processes.filter((s) => !ready.has(s.name)).map((s) => s.name);
    const progress = setInterval(() => {
      this.out.write(`${ready.size} / ${n} servers ready, waiting for: ${waiting().join(', ')}\n`);
    }, PROGRESS_EVERY_MS);

    const outcome = await Promise.race([allUp, firstExit, timedOut, aborted]);
    clearInterval(progress);
    clearTimeout(timer);
    polls.abort();
    if (outcome.kind === 'ready') {
      this.watchForCrashes();
      return;
    }
    const stillWaiting = waiting();
    // A `POST /shutdown` during start-up makes servers exit; that is an interruption, not a crash.
    const shutDownMeanwhile = this.stopping !== undefined;
    await this.stop({ kind: 'stopped' });
    if (outcome.kind === 'aborted' || shutDownMeanwhile) throw new StartAborted();
    if (outcome.kind === 'exited') {
      const { server, exit } = outcome;
      // A co-located pair names the server that could not start, as when it had a process of its own.
      const name = failedMember(server.tail()) ?? server.name;
      throw new GymError(
        'GYM_SERVER_EXITED',
        'config',
        `Server '${name}' ${describeExit(exit)} during start-up, so the environment did not start ` +
          `(the other servers were stopped). ${formatTail(server.tail(), server.logFile)}`,
      );
    }
    const slowest = this.processes.find((s) => s.name === stillWaiting[0]);
    throw new GymError(
      'GYM_STARTUP_TIMEOUT',
      'config',
      `${stillWaiting.length} of ${n} server(s) did not answer within ${timeoutMs / 1000}s: ${stillWaiting.join(', ')} ` +
        `(all servers were stopped). ${slowest ? formatTail(slowest.tail(), slowest.logFile) : ''}`.trimEnd(),
    );
  }

  running(): RunningEnvironment {
    return {
      headUrl: this.head!.url,
      instances: this.records,
      logDir: this.logDir,
      done: this.done,
      stop: () => this.stop({ kind: 'stopped' }),
      kill: () => this.kill(),
    };
  }

  /** Stop everything once; every caller gets the same promise. */
  stop(reason: StopReason): Promise<void> {
    this.stopping ??= (async () => {
      this.stopSignal.abort();
      await Promise.all(this.processes.map((server) => server.stop(this.graceMs)));
      await this.head?.close();
      this.reaper.close();
      process.off('exit', this.killOnExit);
      this.resolveDone(reason);
    })();
    return this.stopping;
  }

  kill(): void {
    for (const server of this.processes) server.killNow();
  }

  private watchForCrashes(): void {
    this.processes.forEach((_, index) => this.watch(index));
  }

  private watch(index: number): void {
    const server = this.processes[index]!;
    void server.exited.then((exit) => {
      if (!this.stopping) void this.restart(index, server, exit);
    });
  }

  /**
   * A unit's process exited on its own after start-up: restart it (every server of a co-located pair: they shared the
   * process) after the backoff, or stop everything on a crash loop.
   */
  private async restart(index: number, dead: ServerProcess, exit: ExitInfo): Promise<void> {
    const records = this.unitRecords[index]!;
    const record = records[0]!;
    const urls = records.map((r) => r.url).join(' and ');
    const { maxRestarts, windowMs, backoffMs } = this.restartPolicy;
    const now = Date.now();
    const recent = this.restartTimes[index]!.filter((at) => now - at < windowMs);
    this.restartTimes[index] = recent;
    for (const r of records) r.last_exit = `${describeExit(exit)} at ${new Date(now).toISOString()}`;
    if (recent.length >= maxRestarts) {
      this.out.write(
        `(${dead.name}) ${describeExit(exit)} unexpectedly after ${recent.length} restart(s) within ` +
          `${windowMs / 60_000} minutes: a crash loop, so the environment is stopped. ${formatTail(dead.tail(), dead.logFile)}\n`,
      );
      void this.stop({
        kind: 'server_exited',
        name: dead.name,
        exit,
        tail: dead.tail(),
        logFile: dead.logFile,
        restarts: record.restarts ?? 0,
      });
      return;
    }
    const waitMs = backoffMs[Math.min(recent.length, backoffMs.length - 1)] ?? 0;
    this.out.write(
      `(${dead.name}) ${describeExit(exit)} unexpectedly; restarting it on ${urls} in ${waitMs / 1000}s ` +
        `(restart ${recent.length + 1} of at most ${maxRestarts} within ${windowMs / 60_000} minutes).\n`,
    );
    // Kills whatever the dead server left in its process group (it could hold the port) and flushes its log.
    await dead.stop(0);
    // Not the HTTP client's delay(): this process never loads undici (see readiness.ts).
    await sleep(waitMs, undefined, { signal: this.stopSignal.signal }).catch(() => undefined);
    if (this.stopping) return;
    const server = this.spawn(this.units[index]!);
    recent.push(Date.now());
    this.processes[index] = server;
    for (const r of records) {
      r.pid = server.pid ?? null;
      r.start_time = Date.now() / 1000;
      r.restarts = (r.restarts ?? 0) + 1;
    }
    this.watch(index);
    // Polled until it answers, exits (its own restart takes over) or the environment stops; bounded like start-up.
    const polling = new AbortController();
    const stopPolling = (): void => polling.abort();
    const timer = setTimeout(stopPolling, this.startupTimeoutMs);
    void server.exited.then(stopPolling);
    this.stopSignal.signal.addEventListener('abort', stopPolling, { once: true });
    const answers = await Promise.all(records.map((r) => waitUntilAnswering(r.url, { signal: polling.signal })));
    clearTimeout(timer);
    this.stopSignal.signal.removeEventListener('abort', stopPolling);
    if (answers.every(Boolean)) {
      this.out.write(`(${server.name}) restarted (pid ${server.pid}) and answering on ${urls}.\n`);
    } else if (!server.hasExited && !this.stopping) {
      this.out.write(
        `(${server.name}) restarted (pid ${server.pid}) but not answering on ${urls} after ${this.startupTimeoutMs / 1000}s.\n`,
      );
    }
  }
}

/** `Its last N log lines (full log: …):` followed by the lines, indented. */
export function formatTail(lines: readonly string[], logFile: string): string {
  if (lines.length === 0) return `It wrote nothing (log: ${logFile}).`;
  return `Its last ${lines.length} log line(s) (full log: ${logFile}):\n${lines.map((l) => `    ${l}`).join('\n')}`;
}

/** The log directory, created: the explicit option, else `nemo_gym_log_dir`, else `<cwd>/logs/<timestamp>`. */
function makeLogDir(config: GlobalConfig, explicit: string | undefined, cwd: string): string {
  const configured =
    typeof config.nemo_gym_log_dir === 'string' && config.nemo_gym_log_dir ? config.nemo_gym_log_dir : undefined;
  const chosen = explicit ?? configured;
  const dir = chosen ? path.resolve(cwd, chosen) : path.join(cwd, 'logs', new Date().toISOString().replace(/:/g, '-'));
  try {
    mkdirSync(dir, { recursive: true });
  } catch (err) {
    throw new ConfigError(
      `The server log directory '${dir}' cannot be created (${(err as NodeJS.ErrnoException).code ?? String(err)}). ` +
        'Choose a writable one with ++nemo_gym_log_dir=<dir>.',
      'GYM_LOG_DIR',
    );
  }
  return dir;
}
