/**
 * `gym tasks check DIR [--json]`: run every Harbor-format task's oracle (`solution/solve.sh`) in a sandbox seeded
 * as the shell environment seeds it, verify it, print one line per task (reward, time) and then the tasks that do
 * not reach reward 1. Exit 0 when every task does, 1 otherwise. It opens the same sandbox host as the environment,
 * so it needs the same prerequisites (Linux, bubblewrap, and root or user namespaces) and refuses in one paragraph
 * naming what is missing.
 */
import os from 'node:os';
import path from 'node:path';
import { loadGlobalConfig } from '../../config/index.js';
import { readNumber, readSwitch, readText } from '../../config/switch.js';
import { ConfigError } from '../../errors.js';
import type { ParsedCommand } from '../argv.js';
import { stdoutLine } from '../output.js';

export async function tasksCheck(cmd: ParsedCommand): Promise<number> {
  const [dir] = cmd.positionals as [string];
  const config = await loadGlobalConfig({ overrides: cmd.overrides, allocatePorts: false });
  const json = readSwitch(config, 'json');
  const checkTimeoutSecs = readNumber(config, 'check_timeout_secs', { min: 1, max: 86_400 }) ?? 60;
  const baseDir = path.resolve(
    readText(config, 'sandbox_base_dir') ?? path.join(os.tmpdir(), 'tsgym-shell', 'tasks-check'),
  );
  const { openSandboxHost } = await import('../../../resources_servers/shell/sandbox/host.js');
  const { checkHarborTasks } = await import('../../../resources_servers/shell/harbor/oracle.js');
  const { TaskError } = await import('../../../resources_servers/shell/tasks.js');
  const tasksDir = path.resolve(dir);
  const { SandboxUnavailableError } = await import('../../../resources_servers/shell/sandbox/errors.js');
  const host = await openSandboxHost({ baseDir }).catch((err: unknown) => {
    if (!(err instanceof SandboxUnavailableError)) throw err;
    throw new ConfigError(`gym tasks check runs each task in a shell environment sandbox, and ${err.message}`);
  });
  try {
    const results = await checkHarborTasks(tasksDir, {
      host,
      checkTimeoutSecs,
      onResult: (result) => {
        if (json) return;
        const verdict = result.reward >= 1 ? 'ok  ' : 'FAIL';
        stdoutLine(
          `${verdict} ${result.task.padEnd(32)} reward ${formatReward(result.reward)}  ${result.seconds.toFixed(1)} s`,
        );
        if (result.problem) stdoutLine(`     ${result.problem.replace(/\n/g, '\n     ')}`);
      },
    });
    const failing = results.filter((result) => result.reward < 1);
    if (json) {
      stdoutLine(JSON.stringify({ tasks_dir: tasksDir, tasks: results, failing: failing.map((r) => r.task) }, null, 2));
    } else {
      stdoutLine('');
      stdoutLine(
        failing.length === 0
          ? `All ${results.length} tasks reach reward 1 with their oracle.`
          : `${failing.length} of ${results.length} tasks do not reach reward 1 with their oracle: ${failing.map((r) => r.task).join(', ')}`,
      );
    }
    return failing.length === 0 ? 0 : 1;
  } catch (err) {
    if (err instanceof TaskError) throw new ConfigError(err.message, 'GYM_TASKS_DIR');
    throw err;
  } finally {
    await host.close();
  }
}

function formatReward(reward: number): string {
  return Number.isInteger(reward) ? reward.toFixed(1) : String(Math.round(reward * 1000) / 1000);
}
