/**
 * `gym new environment NAME` and `gym new service NAME [--python]`: write a working skeleton into the working
 * directory (src/scaffold/), then list what was written, the commands that run it, and what to edit next.
 */
import { UsageError } from '../../errors.js';
import { scaffold, type ScaffoldRequest } from '../../scaffold/index.js';
import type { ParsedCommand } from '../argv.js';

export const newEnvironment = (cmd: ParsedCommand): number => create('environment', cmd);
export const newService = (cmd: ParsedCommand): number => create('service', cmd);

function create(kind: ScaffoldRequest['kind'], cmd: ParsedCommand): number {
  const [name] = cmd.positionals;
  if (name === undefined) throw new UsageError(`gym new ${kind} needs a NAME, e.g. gym new ${kind} trivia.`);
  const python = cmd.overrides.includes('+python=true');
  const unexpected = cmd.overrides.filter((token) => token !== '+python=true' && token !== '+verbose=true');
  if (unexpected.length > 0) {
    throw new UsageError(
      `gym new ${kind} takes one NAME${kind === 'service' ? ' and --python' : ''}; unexpected: ${unexpected.join(' ')}.`,
    );
  }
  const written = scaffold({ kind, name, python, cwd: process.cwd() });
  process.stdout.write(
    `Wrote ${written.folder}/: ${written.files.map((file) => file.slice(written.folder.length + 1)).join(', ')}\n\n`,
  );
  process.stdout.write(written.nextSteps);
  return 0;
}
