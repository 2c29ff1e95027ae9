/**
 * Verifying a Harbor task, as Harbor does it after the agent: every command of the session is stopped, `tests/` is
 * bound read-only at /tests, a fresh empty /logs/verifier (the session's, writable) is bound for this run only, and
 * `bash /tests/test.sh` runs in the session's sandbox within the task's verifier timeout. The reward is what the
 * test wrote: `/logs/verifier/reward.json` (`{"reward": x, …}`; the other fields become the verify response's
 * extras, hence the row's) or else `reward.txt` (one number). No reward file, or one that is not a number, is reward
 * 0 with `check_error` saying why. The same runner, with `solution/` bound at /solution, runs the oracle for
 * `gym tasks check`.
 */
import { chownSync, closeSync, constants, fstatSync, mkdirSync, openSync, readSync, rmSync } from 'node:fs';
import path from 'node:path';
import { writeReadableTree, type CommandResult, type Sandbox } from '../sandbox/sandbox.js';
import type { HarborTask } from './task.js';

const MAX_REWARD_FILE = 64 * 1024;
/** Fields of the verify response a reward.json extra may not replace: it is renamed `reward_json_<name>` instead. */
const RESERVED = new Set([
  'reward',
  'task_id',
  'commands_run',
  'sandbox_seconds',
  'verifier_exit_code',
  'verifier_seconds',
  'check_error',
  'harbor_task',
  'responses_create_params',
  'response',
]);

export interface RewardFile {
  reward: number;
  extras: Record<string, unknown>;
  error?: string;
}

export async function verifyHarborTask(
  sandbox: Sandbox,
  task: HarborTask,
  timeoutSecs: number,
): Promise<{ reward: number } & Record<string, unknown>> {
  const usage = { ...sandbox.usage };
  await sandbox.stopCommands();
  const { result, reward } = await runVerifier(sandbox, task, timeoutSecs);
  const extras = Object.fromEntries(
    Object.entries(reward.extras).map(([key, value]) => [RESERVED.has(key) ? `reward_json_${key}` : key, value]),
  );
  return {
    reward: reward.reward,
    task_id: task.id,
    commands_run: usage.commandsRun,
    sandbox_seconds: Math.round(usage.wallMs) / 1000,
    verifier_exit_code: result.exit_code,
    verifier_seconds: result.duration_ms / 1000,
    ...extras,
    ...(reward.error ? { check_error: `${reward.error}${describeRun(result)}${outputTail(result)}` } : {}),
  };
}

/** Run tests/test.sh in `sandbox` and read the reward it wrote. */
export async function runVerifier(
  sandbox: Sandbox,
  task: HarborTask,
  timeoutSecs: number,
): Promise<{ result: CommandResult; reward: RewardFile }> {
  const testsDir = path.join(sandbox.dir, 'harbor-tests');
  const logsDir = path.join(sandbox.dir, 'harbor-verifier-logs');
  rmSync(testsDir, { recursive: true, force: true });
  rmSync(logsDir, { recursive: true, force: true });
  try {
    writeReadableTree(testsDir, task.tests);
    mkdirSync(logsDir, { mode: 0o700 });
    // As root the verifier runs as the session's uid, which must own its logs dir; without root it already does.
    if (!sandbox.holder) chownSync(logsDir, sandbox.uid, sandbox.uid);
    const result = await sandbox.runUncounted('bash /tests/test.sh', {
      timeoutSecs,
      roBinds: [[testsDir, '/tests']],
      rwBinds: [[logsDir, '/logs/verifier']],
      env: task.verifierEnv,
    });
    // A verifier stopped half-way may have written a reward it would have taken back: it scores nothing.
    if (result.limit_exceeded)
      return {
        result,
        reward: {
          reward: 0,
          extras: {},
          error: `tests/test.sh did not finish: ${stopReason(result, timeoutSecs)}; its reward file is not used`,
        },
      };
    return { result, reward: readReward(logsDir) };
  } finally {
    rmSync(testsDir, { recursive: true, force: true });
    rmSync(logsDir, { recursive: true, force: true });
  }
}

/** Run solution/solve.sh as the agent would (its own timeout: the task's agent timeout), solution/ at /solution. */
export async function runOracle(sandbox: Sandbox, task: HarborTask, timeoutSecs: number): Promise<CommandResult> {
  const solutionDir = path.join(sandbox.dir, 'harbor-solution');
  rmSync(solutionDir, { recursive: true, force: true });
  try {
    writeReadableTree(solutionDir, task.solution);
    return await sandbox.runUncounted('bash /solution/solve.sh', {
      timeoutSecs,
      roBinds: [[solutionDir, '/solution']],
      env: task.solutionEnv,
    });
  } finally {
    rmSync(solutionDir, { recursive: true, force: true });
  }
}

/** The reward the verifier left in `dir`: reward.json first, else reward.txt. Read without following a symlink. */
export function readReward(dir: string): RewardFile {
  const json = readSmallFile(path.join(dir, 'reward.json'));
  if (json.text !== undefined) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(json.text);
    } catch {
      return { reward: 0, extras: {}, error: '/logs/verifier/reward.json is not valid JSON' };
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
      return { reward: 0, extras: {}, error: '/logs/verifier/reward.json is not a JSON object' };
    const { reward, ...extras } = parsed as Record<string, unknown>;
    if (typeof reward !== 'number' || !Number.isFinite(reward))
      return {
        reward: 0,
        extras,
        error: `/logs/verifier/reward.json has no numeric "reward" (it has ${JSON.stringify(reward)})`,
      };
    return { reward, extras };
  }
  const txt = readSmallFile(path.join(dir, 'reward.txt'));
  if (txt.text !== undefined) {
    const value = Number(txt.text.trim());
    if (txt.text.trim() === '' || !Number.isFinite(value))
      return {
        reward: 0,
        extras: {},
        error: `/logs/verifier/reward.txt holds ${JSON.stringify(txt.text.trim().slice(0, 100))}, not a number`,
      };
    return { reward: value, extras: {} };
  }
  return {
    reward: 0,
    extras: {},
    error:
      json.problem ??
      txt.problem ??
      'tests/test.sh wrote neither /logs/verifier/reward.txt nor /logs/verifier/reward.json',
  };
}

/** A regular file's text (at most 64 KiB), never through a symlink; `problem` when it exists but cannot be used. */
function readSmallFile(file: string): { text?: string; problem?: string } {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return {};
    return {
      problem: `/logs/verifier/${path.basename(file)} could not be read (${code === 'ELOOP' ? 'a symlink' : code})`,
    };
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile()) return { problem: `/logs/verifier/${path.basename(file)} is not a regular file` };
    if (stats.size > MAX_REWARD_FILE)
      return { problem: `/logs/verifier/${path.basename(file)} is larger than ${MAX_REWARD_FILE} bytes` };
    const buffer = Buffer.alloc(stats.size);
    const read = readSync(fd, buffer, 0, stats.size, 0);
    return { text: buffer.subarray(0, read).toString('utf8') };
  } finally {
    closeSync(fd);
  }
}

function stopReason(result: CommandResult, timeoutSecs: number): string {
  return result.limit_exceeded === 'wall_time'
    ? `it ran past the verifier timeout, ${timeoutSecs} s`
    : `it was stopped by the ${result.limit_exceeded} limit`;
}

function describeRun(result: CommandResult): string {
  return result.limit_exceeded ? '' : ` (test.sh exited ${result.exit_code})`;
}

function outputTail(result: CommandResult): string {
  const output = `${result.stdout}${result.stderr}`.trim();
  return output === '' ? '' : `; its output ends: ${output.slice(-600)}`;
}
