import { ConfigError, GymError, UsageError } from '../errors.js';
import { parseArgv, type ParsedCommand } from './argv.js';
import { usage } from './help.js';
import { logBlock } from '../logging/log.js';

/**
 * A command receives the parsed command line and answers with the process exit code: at once when it does nothing
 * asynchronous (`version`, `new`), else as a promise. `main` awaits either inside the one try that reports errors.
 */
export type CommandHandler = (cmd: ParsedCommand) => number | Promise<number>;

/** Each command lives in its own module, loaded on demand so `gym env status` does not pay for `eval run`. */
const COMMANDS: Record<string, () => Promise<CommandHandler>> = {
  'env start': async () => (await import('./commands/env.js')).envStart,
  'env status': async () => (await import('./commands/env.js')).envStatus,
  'env stop': async () => (await import('./commands/env.js')).envStop,
  'env resolve': async () => (await import('./commands/env.js')).envResolve,
  'eval run': async () => (await import('./commands/eval.js')).evalRun,
  'eval profile': async () => (await import('./commands/eval.js')).evalProfile,
  'eval aggregate': async () => (await import('./commands/eval.js')).evalAggregate,
  'eval explain': async () => (await import('./commands/explain.js')).evalExplain,
  'eval compare': async () => (await import('./commands/compare.js')).evalCompare,
  'eval export': async () => (await import('./commands/export.js')).evalExport,
  'eval health': async () => (await import('./commands/health.js')).evalHealth,
  quickstart: async () => (await import('./commands/quickstart.js')).quickstart,
  'agent check': async () => (await import('./commands/agent-check.js')).agentCheck,
  'new environment': async () => (await import('./commands/new.js')).newEnvironment,
  'new service': async () => (await import('./commands/new.js')).newService,
  view: async () => (await import('./commands/view.js')).view,
  worker: async () => (await import('./commands/worker.js')).worker,
  version: async () => (await import('./commands/version.js')).version,
  'tasks check': async () => (await import('./commands/tasks.js')).tasksCheck,
};

export async function main(argv: string[]): Promise<number> {
  ignoreClosedPipes();
  let cmd: ParsedCommand;
  try {
    cmd = parseArgv(argv);
  } catch (err) {
    return reportError(err);
  }
  if (cmd.command === 'help' || cmd.help) {
    process.stdout.write(usage(cmd.command === 'help' ? undefined : cmd.command));
    return cmd.command === 'help' && !cmd.help ? 1 : 0;
  }
  const load = COMMANDS[cmd.command];
  if (!load) {
    process.stderr.write(usage());
    return 2;
  }
  try {
    return await (
      await load()
    )(cmd);
  } catch (err) {
    return reportError(err, cmd);
  }
}

/**
 * A reader that closes the pipe early (`gym eval profile … | head`) ends only the output, never the command: a
 * collection keeps running and writing its files. Without a listener Node throws EPIPE with a stack trace.
 */
function ignoreClosedPipes(): void {
  for (const stream of [process.stdout, process.stderr]) {
    if (stream.listenerCount('error') > 0) continue;
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE' && err.code !== 'ERR_STREAM_DESTROYED') throw err;
    });
  }
}

/**
 * Bad input is the user's to fix: one paragraph, no stack trace. Anything else is our bug: say so, and show the
 * stack only when asked (`-v`).
 */
function reportError(err: unknown, cmd?: ParsedCommand): number {
  if (err instanceof UsageError) {
    process.stderr.write(`${cmd ? usage(cmd.command) : ''}gym: error: ${err.message}\n`);
    return 2;
  }
  if (err instanceof ConfigError || (err instanceof GymError && err.errorClass === 'config')) {
    // json logs: the paragraph (and any server's last lines it quotes) stays one event.
    if (!logBlock('error', `Error: ${err.message}`)) process.stderr.write(`Error: ${err.message}\n`);
    return 1;
  }
  const verbose = cmd?.overrides.includes('+verbose=true') ?? false;
  const text =
    err instanceof Error ? (verbose ? (err.stack ?? err.message) : `${err.name}: ${err.message}`) : String(err);
  const report = `Error: ${text}\n(This is unexpected; rerun with -v for details and report it.)\n`;
  if (!logBlock('error', report)) process.stderr.write(report);
  return 1;
}
