import { jsonLogs, logEvent } from '../logging/log.js';
import { stackOf } from './thrown.js';

let guarded = false;

/**
 * The process-level safety net of a server process, installed once by its entry point. Decision: an
 * `uncaughtException` means some code's state is unknown (Node's own guidance is not to resume), so it is logged
 * with its stack and context and the process exits with code 70; `gym env start` restarts it on the same address
 * (decision D20). An `unhandledRejection` is a promise nobody awaited: its request (if any) has already been
 * answered or contained, so it is logged with context and the process keeps serving.
 */
export function guardProcess(name: string): void {
  if (guarded) return;
  guarded = true;
  // One event in json mode, else the `[name] message: stack` line.
  const report = (message: string, thrown: unknown): void => {
    if (jsonLogs()) logEvent(name, 'error', message, { error: stackOf(thrown) });
    else process.stderr.write(`[${name}] ${message}: ${stackOf(thrown)}\n`);
  };
  process.on('uncaughtException', (err, origin) => {
    report(`fatal ${origin} (the process exits for the supervisor to restart it)`, err);
    process.exit(70);
  });
  process.on('unhandledRejection', (reason) =>
    report('unhandled promise rejection (logged; the server keeps serving)', reason),
  );
}
