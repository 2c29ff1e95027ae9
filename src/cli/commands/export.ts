/**
 * `gym eval export ROLLOUTS --format trainer|atif -o OUT [--advantages grpo]` (src/training/export-file.ts): a run's
 * rollouts as trainer samples (token ids, loss mask, log-probs, reward, GRPO group) or as ATIF trajectories.
 */
import { readFileSync } from 'node:fs';
import { loadGlobalConfig } from '../../config/index.js';
import { readText } from '../../config/switch.js';
import { UsageError } from '../../errors.js';
import type { ExportOptions } from '../../training/export-file.js';
import type { ParsedCommand } from '../argv.js';

const FORMATS = ['trainer', 'atif'] as const;

function tsgymVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  return pkg.version;
}

export async function evalExport(cmd: ParsedCommand): Promise<number> {
  const [rolloutsPath] = cmd.positionals as [string];
  const config = await loadGlobalConfig({ overrides: cmd.overrides, allocatePorts: false });
  const format = readText(config, 'format');
  if (format !== 'trainer' && format !== 'atif') {
    throw new UsageError(
      `--format takes ${FORMATS.join(' or ')}, got ${format === undefined ? 'nothing' : `'${format}'`}: trainer ` +
        'writes one token-level sample per trainable rollout, atif one ATIF-v1.7 trajectory per rollout.',
    );
  }
  const target = readText(config, 'output_jsonl_fpath');
  if (target === undefined) throw new UsageError('-o OUT is required: the JSONL file the export writes.');
  const advantages = readText(config, 'advantages');
  if (advantages !== undefined && advantages !== 'grpo') {
    throw new UsageError(`--advantages takes 'grpo' (group-normalized rewards per task), got '${advantages}'.`);
  }
  if (advantages !== undefined && format !== 'trainer') {
    throw new UsageError('--advantages applies to --format trainer only: an ATIF trajectory has no advantage field.');
  }
  const { exportRollouts, describeExport } = await import('../../training/export-file.js');
  const options: ExportOptions = { format, tsgymVersion: tsgymVersion() };
  if (advantages === 'grpo') options.advantages = advantages;
  const summary = await exportRollouts(rolloutsPath, target, options);
  for (const line of describeExport(summary, target, options)) process.stdout.write(`${line}\n`);
  return 0;
}
