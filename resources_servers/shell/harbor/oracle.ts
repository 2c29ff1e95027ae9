/**
 * `gym tasks check DIR`'s engine: every Harbor task of a directory run with its own oracle, as an agent would run
 * it. Each task gets a sandbox seeded exactly as the environment seeds it (harbor/seed.ts), `bash
 * /solution/solve.sh` runs there (solution/ bound read-only at /solution for that run only, within the task's
 * agent timeout), and the verifier scores the result (harbor/verify.ts). A task that does not reach reward 1 says
 * why: its seed failed, it has no oracle, the oracle failed, or the verifier's reward and `check_error`.
 */
import type { SandboxHost } from '../sandbox/host.js';
import type { Sandbox } from '../sandbox/sandbox.js';
import { TaskError } from '../tasks.js';
import { seedHarborTask } from './seed.js';
import { harborTaskNames, loadHarborTask, type HarborTask } from './task.js';
import { runOracle, verifyHarborTask } from './verify.js';

export interface OracleResult {
  task: string;
  reward: number;
  seconds: number;
  /** Why the task did not reach reward 1, when it did not. */
  problem?: string;
  /** The seed's notes: the unused base image, the ignored instructions. */
  notes: string[];
  /** The verify response's fields besides the reward (reward.json's extras among them). */
  verify: Record<string, unknown>;
}

export interface OracleCheckOptions {
  host: Pick<SandboxHost, 'create' | 'limits'>;
  /** The verifier's timeout when a task.toml names none. */
  checkTimeoutSecs: number;
  /** Called as each task finishes (the CLI prints a line). */
  onResult?: (result: OracleResult) => void;
}

/** Run every task's oracle under `tasksDir` (a directory of tasks, or one task), one task at a time. */
export async function checkHarborTasks(tasksDir: string, options: OracleCheckOptions): Promise<OracleResult[]> {
  const names = harborTaskNames(tasksDir);
  if (names.length === 0)
    throw new TaskError(`${tasksDir}: no Harbor task here (a task is a directory holding task.toml)`);
  const results: OracleResult[] = [];
  for (const name of names) {
    const result = await checkOne(tasksDir, name, options);
    results.push(result);
    options.onResult?.(result);
  }
  return results;
}

async function checkOne(tasksDir: string, name: string, options: OracleCheckOptions): Promise<OracleResult> {
  const started = performance.now();
  const finish = (fields: Omit<OracleResult, 'task' | 'seconds'>): OracleResult => ({
    task: name,
    seconds: Math.round(performance.now() - started) / 1000,
    ...fields,
  });
  let task: HarborTask;
  let sandbox: Sandbox;
  try {
    task = loadHarborTask(tasksDir, name);
  } catch (err) {
    if (!(err instanceof TaskError)) throw err;
    return finish({ reward: 0, problem: `not loaded: ${err.message}`, notes: [], verify: {} });
  }
  const notes = task.plan.notes;
  if (!task.solution['solve.sh'])
    return finish({ reward: 0, problem: 'no solution/solve.sh (no oracle to run)', notes, verify: {} });
  try {
    ({ sandbox } = await seedHarborTask(options.host, task));
  } catch (err) {
    if (!(err instanceof TaskError)) throw err;
    return finish({ reward: 0, problem: `seed failed: ${err.message}`, notes, verify: {} });
  }
  try {
    const oracleSecs = task.agentTimeoutSecs ?? options.host.limits.sessionWallSecs;
    const oracle = await runOracle(sandbox, task, oracleSecs);
    const { reward, ...verify } = await verifyHarborTask(
      sandbox,
      task,
      task.verifierTimeoutSecs ?? options.checkTimeoutSecs,
    );
    const oracleFailed =
      oracle.exit_code !== 0 || oracle.limit_exceeded
        ? `solve.sh ${oracle.limit_exceeded ? `was stopped by the ${oracle.limit_exceeded} limit` : `exited ${oracle.exit_code}`}: ${`${oracle.stdout}${oracle.stderr}`.trim().slice(-400)}`
        : undefined;
    const problems = [oracleFailed, typeof verify.check_error === 'string' ? verify.check_error : undefined];
    const problem =
      reward >= 1
        ? undefined
        : problems.filter((text) => text !== undefined).join('; ') || `the verifier gave reward ${reward}`;
    return finish({ reward, notes, verify, ...(problem ? { problem } : {}) });
  } finally {
    await sandbox.destroy();
  }
}
