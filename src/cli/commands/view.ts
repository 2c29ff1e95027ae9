/**
 * `gym view <rollouts.jsonl> [<other.jsonl>]`: serve a local, read-only viewer of a run's rollouts and failures
 * (live while the run writes), or of two runs compared task by task, until Ctrl-C.
 */
import { closeMatches } from '../../config/did-you-mean.js';
import { parseOverrideValue } from '../../config/override-grammar.js';
import { UsageError } from '../../errors.js';
import type { ParsedCommand } from '../argv.js';

/** The overrides `gym view` reads, with their defaults. */
const SETTINGS = {
  port: 0,
  host: '127.0.0.1',
  verbose: false,
};
type Settings = typeof SETTINGS;

export interface ViewIo {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
}

export async function view(cmd: ParsedCommand, io: ViewIo = process): Promise<number> {
  const [file, other, ...extra] = cmd.positionals;
  if (file === undefined)
    throw new UsageError('gym view needs the rollouts file, e.g. gym view results/rollouts.jsonl');
  if (extra.length > 0)
    throw new UsageError(`gym view takes one rollouts file, or two to compare; unexpected: ${extra.join(' ')}`);
  const settings = readSettings(cmd.overrides);

  const { startViewServer } = await import('../../view/server.js');
  const server = await startViewServer({
    rolloutsPath: file,
    ...(other !== undefined ? { comparePath: other } : {}),
    host: settings.host,
    port: settings.port,
    onError: (err) =>
      void io.stderr.write(
        `gym view: ${settings.verbose && err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
      ),
  });
  if (other !== undefined) io.stdout.write(`Comparing ${file} (A) with ${other} (B) at ${server.url}/compare\n`);
  else io.stdout.write(`Viewing ${file} at ${server.url}\n`);
  // The server answers while the first indexing runs; the counts follow once it is done.
  const index = await server.index();
  const { ok, failed, failedTerminal } = index.counts;
  io.stdout.write(
    `${ok + failed + failedTerminal} rollouts${index.failuresPresent ? ' (with the failures sidecar)' : ''}: ${ok} ok, ${failed} failed, ${failedTerminal} failed-terminal` +
      `${index.skippedCount > 0 ? `, ${index.skippedCount} unreadable lines skipped` : ''}. Press Ctrl-C to stop.\n`,
  );
  await new Promise<void>((resolve) => {
    const stop = (): void => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  await server.close();
  return 0;
}

function readSettings(overrides: readonly string[]): Settings {
  const settings = { ...SETTINGS };
  for (const token of overrides) {
    const match = /^\+{1,2}([A-Za-z_][\w.]*)=(.*)$/s.exec(token);
    if (!match) throw new UsageError(`gym view does not understand '${token}'; it takes +key=value overrides only.`);
    const [, key, text] = match as unknown as [string, string, string];
    if (!Object.hasOwn(SETTINGS, key)) {
      const hint = closeMatches(key, Object.keys(SETTINGS), 1)[0];
      throw new UsageError(
        `gym view has no setting '${key}'.${hint ? ` Did you mean +${hint}?` : ''} Settings: ${Object.keys(SETTINGS)
          .map((name) => `+${name}`)
          .join(', ')}.`,
      );
    }
    let value: unknown;
    try {
      value = parseOverrideValue(text);
    } catch {
      value = text;
    }
    if (key === 'port') {
      if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > 65535) {
        throw new UsageError(`+port must be a port number from 0 (any free port) to 65535, got '${text}'.`);
      }
      settings.port = value;
    } else if (key === 'host') {
      if (typeof value !== 'string' || value === '')
        throw new UsageError(`+host must be a host name or address such as 127.0.0.1, got '${text}'.`);
      settings.host = value;
    } else {
      if (typeof value !== 'boolean') throw new UsageError(`+${key} must be true or false, got '${text}'.`);
      settings.verbose = value;
    }
  }
  return settings;
}
