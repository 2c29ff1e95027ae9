/**
 * `gym eval explain RESULTS TASK[:ROLLOUT] [--full] [--input-row]`: why a rollout ended as it did, read from the run's
 * files alone (src/explain/).
 */
import { UsageError } from '../../errors.js';
import type { ParsedCommand } from '../argv.js';

export async function evalExplain(cmd: ParsedCommand): Promise<number> {
  const [results, key, ...extra] = cmd.positionals;
  if (results === undefined || key === undefined) {
    throw new UsageError(
      'gym eval explain needs the rollouts file and a task, e.g. gym eval explain results/rollouts.jsonl 812:1',
    );
  }
  if (extra.length > 0)
    throw new UsageError(`gym eval explain takes one file and one task; unexpected: ${extra.join(' ')}`);
  let full = false;
  let inputRow = false;
  for (const token of cmd.overrides) {
    if (token === '+full=true') full = true;
    else if (token === '+input_row=true') inputRow = true;
    else if (token !== '+verbose=true') {
      throw new UsageError(`gym eval explain does not understand '${token}'; it takes --full and --input-row.`);
    }
  }
  const { explain } = await import('../../explain/explain.js');
  const { parseSelection } = await import('../../explain/rows.js');
  return explain({ rolloutsArg: results, selection: parseSelection(key), full, inputRow }, process);
}
