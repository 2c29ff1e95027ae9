import { describeConfig, loadGlobalConfig, type GlobalConfig } from '../../config/index.js';
import { applyLogFormat } from '../../logging/log.js';
import { describeExit } from '../../supervisor/server-process.js';
import type { InstanceRecord } from '../../server/head-server.js';
import { headAddress } from '../../supervisor/addresses.js';
import { formatTail, StartAborted, startEnvironment, type RunningEnvironment } from '../../supervisor/supervisor.js';
import type { ParsedCommand } from '../argv.js';

// The head-server client (and with it undici) is loaded only by the commands that talk to a running environment:
// `gym env start` supervises for hours and should not hold it (see readiness.ts).
const headClient = () => import('../../supervisor/head-client.js');

/** How long `gym env stop` waits for the environment to finish stopping (grace + kill + reap, with room). */
const STOP_WAIT_MS = 15_000;
const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/**
 * `gym env start`: run every configured server until Ctrl-C, SIGTERM or `gym env stop`. Prints exactly one
 * `All N / N servers ready` line once every server answers, then a table of them and the log directory.
 */
export async function envStart(cmd: ParsedCommand): Promise<number> {
  const config = await loadGlobalConfig({ overrides: cmd.overrides });
  applyLogFormat(config, 'supervisor');
  const interrupted = new AbortController();
  let env: RunningEnvironment | undefined;
  let signals = 0;
  const onSignal = (): void => {
    signals += 1;
    if (!env) interrupted.abort();
    else if (signals === 1) {
      process.stdout.write(`Stopping ${env.instances.length} server(s)… (press Ctrl-C again to kill them at once)\n`);
      void env.stop();
    } else env.kill();
  };
  for (const signal of STOP_SIGNALS) process.on(signal, onSignal);
  try {
    try {
      env = await startEnvironment(config, { signal: interrupted.signal });
    } catch (err) {
      if (err instanceof StartAborted) {
        process.stdout.write(`${err.message}\n`);
        return 0;
      }
      throw err;
    }
    const n = env.instances.length;
    process.stdout.write(`All ${n} / ${n} servers ready\n${formatTable(env.instances)}\n`);
    process.stdout.write(`Head server: ${env.headUrl}\nLogs: ${env.logDir}\n`);
    const reason = await env.done;
    if (reason.kind === 'server_exited') {
      process.stderr.write(
        `Error: server '${reason.name}' kept exiting (${reason.restarts} restart(s) within the crash-loop window, then ` +
          `it ${describeExit(reason.exit)} again), so the environment was shut down. ` +
          `${formatTail(reason.tail, reason.logFile)}\n`,
      );
      return 1;
    }
    process.stdout.write(
      `Stopped ${n} server(s)${reason.kind === 'shutdown_requested' ? ' (asked by gym env stop)' : ''}.\n`,
    );
    return 0;
  } finally {
    for (const signal of STOP_SIGNALS) process.off(signal, onSignal);
  }
}

/** `gym env status [--json]`: what the head server says runs, each server probed for health. */
export async function envStatus(cmd: ParsedCommand): Promise<number> {
  const config = await loadGlobalConfig({ overrides: cmd.overrides, allocatePorts: false });
  const head = headAddress(config);
  const asJson = wantsJson(config);
  const { fetchServerInstances, formatUptime, withHealth } = await headClient();
  const lookup = await fetchServerInstances(head.url);
  if (lookup.kind === 'unreachable') {
    // Exit 1 (the reference exits 0) so scripts can tell "nothing runs" from "all healthy".
    if (asJson) process.stdout.write('[]\n');
    const text =
      `No NeMo Gym servers found running. (Nothing answered at ${head.url}: ${lookup.reason}. ` +
      'If the environment runs elsewhere, pass ++head_server.host=<host> ++head_server.port=<port>.)\n';
    (asJson ? process.stderr : process.stdout).write(text);
    return 1;
  }
  const servers = await withHealth(lookup.instances);
  if (asJson) {
    process.stdout.write(`${JSON.stringify(servers, null, 2)}\n`);
    return 0;
  }
  const healthy = servers.filter((s) => s.status === 'success').length;
  const lines = ['NeMo Gym Server Status:'];
  servers.forEach((server, index) => {
    lines.push(
      `[${index + 1}] ${server.status === 'success' ? '✓' : '✗'} ${server.process_name} (${server.server_type}/${server.name})`,
      `    server_type: ${server.server_type}`,
      `    name: ${server.name}`,
      `    url: ${server.url}`,
      `    port: ${server.port}`,
      `    pid: ${server.pid ?? 'null'}`,
      `    uptime: ${server.uptime_seconds === null ? 'unknown' : formatUptime(server.uptime_seconds)}`,
      ...(server.status === 'success' ? [] : [`    status: ${server.status}`]),
      ...(server.restarts === undefined
        ? []
        : [`    restarts: ${server.restarts}${server.last_exit ? ` (last exit: ${server.last_exit})` : ''}`]),
    );
  });
  lines.push('', `${servers.length} servers found (${healthy} healthy, ${servers.length - healthy} unhealthy)`);
  process.stdout.write(`${lines.join('\n')}\n`);
  return 0;
}

/** `gym env stop`: ask the running `gym env start` (found through its head server) to stop, and wait until it has. */
export async function envStop(cmd: ParsedCommand): Promise<number> {
  const config = await loadGlobalConfig({ overrides: cmd.overrides, allocatePorts: false });
  const head = headAddress(config);
  const nothingRunning = (reason: string): number => {
    process.stderr.write(
      `No NeMo Gym environment is running at ${head.url} (${reason}), so there is nothing to stop. ` +
        'If it runs on another host or port, pass ++head_server.host=<host> ++head_server.port=<port>.\n',
    );
    return 1;
  };
  const { fetchServerInstances, requestShutdown, waitUntilGone } = await headClient();
  const lookup = await fetchServerInstances(head.url);
  if (lookup.kind === 'unreachable') return nothingRunning(lookup.reason);
  const outcome = await requestShutdown(head.url);
  if (outcome.kind === 'unreachable') return nothingRunning(outcome.reason);
  if (outcome.kind === 'unsupported') {
    process.stderr.write(
      `The head server at ${head.url} answered HTTP ${outcome.status} to /shutdown: it cannot be stopped remotely ` +
        '(a NeMo Gym reference head server?). Stop it with Ctrl-C in the terminal that runs it.\n',
    );
    return 1;
  }
  if (!(await waitUntilGone(head.url, STOP_WAIT_MS))) {
    process.stderr.write(
      `Asked the environment at ${head.url} to stop, but its head server still answers after ${STOP_WAIT_MS / 1000}s. ` +
        `Check the terminal that runs \`gym env start\`; its servers' pids: ${pidList(lookup.instances)}.\n`,
    );
    return 1;
  }
  const names = lookup.instances.map((i) => i.process_name);
  process.stdout.write(
    `Stopped the environment at ${head.url}: ${names.length} server(s)${names.length ? ` (${names.join(', ')})` : ''}.\n`,
  );
  return 0;
}

/** `gym env resolve`: the composed config as YAML, secret values masked. */
export async function envResolve(cmd: ParsedCommand): Promise<number> {
  const config = await loadGlobalConfig({ overrides: cmd.overrides });
  process.stdout.write(describeConfig(config));
  return 0;
}

function wantsJson(config: GlobalConfig): boolean {
  return config.json === true || config.json === 'true';
}

function pidList(instances: readonly InstanceRecord[]): string {
  return instances.map((i) => `${i.process_name}=${i.pid ?? '?'}`).join(', ') || 'none';
}

/** name, type, url, pid — aligned columns. */
export function formatTable(instances: readonly InstanceRecord[]): string {
  const rows = [
    ['NAME', 'TYPE', 'URL', 'PID'],
    ...instances.map((i) => [i.process_name, `${i.server_type}/${i.name}`, i.url, String(i.pid ?? '-')]),
  ];
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows
    .map((row) =>
      row
        .map((cell, column) => cell.padEnd(widths[column]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}
