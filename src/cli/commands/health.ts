/**
 * `gym eval health RUN [--json]`: the rollout health checks (src/health/) over a run's files alone. It writes
 * `<stem>_quality_summary.json` beside the run and prints the one line and where the summary is (`--json`: the
 * summary itself). A report, not a gate: it exits 0 whatever it finds.
 */
import { statSync } from 'node:fs';
import { ConfigError, UsageError } from '../../errors.js';
import type { ParsedCommand } from '../argv.js';

function requireRolloutsFile(file: string): void {
  let isFile: boolean;
  try {
    isFile = statSync(file).isFile();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new ConfigError(
      code === 'ENOENT'
        ? `${file} does not exist. gym eval health checks a rollouts file written by gym eval run, e.g. gym eval health results/rollouts.jsonl (its <stem>_failures.jsonl and <stem>_materialized_inputs.jsonl are read too when present).`
        : `${file} cannot be read (${code ?? String(err)}); check the path and its permissions.`,
      'GYM_HEALTH_FILE',
    );
  }
  if (!isFile) {
    throw new ConfigError(
      `${file} is not a file; gym eval health takes the rollouts .jsonl file of a run, e.g. ${file.replace(/\/+$/, '')}/rollouts.jsonl.`,
      'GYM_HEALTH_FILE',
    );
  }
}

export async function evalHealth(cmd: ParsedCommand): Promise<number> {
  const [rollouts, ...extra] = cmd.positionals;
  if (rollouts === undefined)
    throw new UsageError('gym eval health needs the rollouts file, e.g. gym eval health results/rollouts.jsonl');
  if (extra.length > 0) throw new UsageError(`gym eval health takes one rollouts file; unexpected: ${extra.join(' ')}`);
  let json = false;
  for (const token of cmd.overrides) {
    if (token === '+json=true') json = true;
    else if (token !== '+verbose=true')
      throw new UsageError(`gym eval health does not understand '${token}'; it takes --json.`);
  }
  requireRolloutsFile(rollouts);
  const { reportRunHealth, healthLine, summaryPathLine } = await import('../../health/health.js');
  const report = await reportRunHealth(rollouts);
  if (json) {
    process.stdout.write(`${JSON.stringify(report.summary)}\n`);
    if (report.unwritten !== undefined) process.stderr.write(`${summaryPathLine(report)}\n`);
  } else process.stdout.write(`${healthLine(report.summary)}\n${summaryPathLine(report)}\n`);
  return 0;
}
