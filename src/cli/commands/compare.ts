/**
 * `gym eval compare BASELINE CANDIDATE [--margin X] [--json FILE] [--fail-on worse]` (src/compare/): the verdict is
 * a report, so the exit code is 0 whatever it says unless `--fail-on worse` asks a CI job to stop on a regression.
 */
import { loadGlobalConfig } from '../../config/index.js';
import { readNumber, readText } from '../../config/switch.js';
import { ConfigError } from '../../errors.js';
import { writeFileAtomic } from '../../runfiles/jsonl.js';
import type { ParsedCommand } from '../argv.js';
import { stderrLine, stdoutLine } from '../output.js';

export async function evalCompare(cmd: ParsedCommand): Promise<number> {
  const [baselinePath, candidatePath] = cmd.positionals as [string, string];
  const config = await loadGlobalConfig({ overrides: cmd.overrides, allocatePorts: false });
  const margin = readNumber(config, 'margin', { min: 0, max: Number.MAX_VALUE }) ?? 0;
  const failOn = readText(config, 'fail_on');
  if (failOn !== undefined && failOn !== 'worse') {
    throw new ConfigError(
      `--fail-on takes 'worse' (exit 1 when the candidate is worse), got '${failOn}'.`,
      'GYM_CONFIG_VALUE',
    );
  }
  const jsonFile = readText(config, 'json_file');
  const { readRunRewards } = await import('../../compare/runs.js');
  const { compareRuns, describeComparison } = await import('../../compare/compare.js');
  const baseline = await readRunRewards(baselinePath, 'baseline', stderrLine);
  const candidate = await readRunRewards(candidatePath, 'candidate', stderrLine);
  const result = compareRuns(baseline, candidate, margin);
  for (const line of describeComparison(result)) stdoutLine(line);
  if (jsonFile !== undefined) {
    writeFileAtomic(jsonFile, `${JSON.stringify(result, null, 2)}\n`);
    stdoutLine(`Comparison: ${jsonFile}`);
  }
  return failOn === 'worse' && result.verdict === 'worse' ? 1 : 0;
}
