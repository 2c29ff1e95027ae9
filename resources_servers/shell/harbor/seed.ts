/**
 * Seeding a Harbor task: its Dockerfile's plan applied inside a fresh sandbox over the host's system. The files
 * copied before the first RUN go into the new work dir with it (nothing has run there yet); RUN steps then run in
 * order as commands of the sandbox (the session's uid, no network, the per-process limits, all of them within the
 * task's `build_timeout_sec`), and files copied after a RUN are written from inside the sandbox, like the agent's
 * writes, so no symlink a step left can lead them elsewhere. A step that fails fails the seed with its output: the
 * sandbox is destroyed and the error names the Dockerfile line. At the end the commands get the task's ENV and
 * start in its last WORKDIR.
 */
import type { SandboxHost, SandboxOptions } from '../sandbox/host.js';
import type { Sandbox } from '../sandbox/sandbox.js';
import type { SeedFile } from './copy.js';
import { HarborTaskError } from './dockerfile.js';
import type { PlanStep } from './plan.js';
import type { HarborTask } from './task.js';

/** How much of a failing step's output its error quotes (the end, where the error usually is). */
const OUTPUT_TAIL = 4000;

export interface HarborSeed {
  sandbox: Sandbox;
  /** Seconds the RUN steps took. */
  setupSeconds: number;
}

export async function seedHarborTask(host: Pick<SandboxHost, 'create'>, task: HarborTask): Promise<HarborSeed> {
  const steps = task.plan.steps;
  const firstRun = steps.findIndex((step) => step.kind === 'run');
  const initial = firstRun < 0 ? steps : steps.slice(0, firstRun);
  const files: Record<string, Buffer> = {};
  const modes: Record<string, number> = {};
  const dirs: string[] = [];
  for (const step of initial) {
    if (step.kind !== 'files') continue;
    dirs.push(...step.dirs);
    for (const [relative, file] of Object.entries(step.files)) {
      files[relative] = file.content;
      modes[relative] = file.mode;
    }
  }
  const options: SandboxOptions = { workMount: task.plan.workMount, modes, dirs };
  if (task.agentTimeoutSecs !== undefined) options.sessionWallSecs = Math.ceil(task.agentTimeoutSecs);
  const sandbox = await host.create(files, options);
  const started = performance.now();
  try {
    const deadline = started + task.buildTimeoutSecs * 1000;
    for (const step of firstRun < 0 ? [] : steps.slice(firstRun)) await applyStep(sandbox, task, step, deadline);
  } catch (err) {
    await sandbox.destroy();
    throw err;
  }
  sandbox.extendEnv(task.plan.env);
  sandbox.startIn(task.plan.cwd);
  return { sandbox, setupSeconds: Math.round(performance.now() - started) / 1000 };
}

async function applyStep(sandbox: Sandbox, task: HarborTask, step: PlanStep, deadline: number): Promise<void> {
  const at = `${task.id}/environment/Dockerfile:${step.line}`;
  if (step.kind === 'files') {
    await writeFiles(sandbox, at, step.dirs, step.files);
    return;
  }
  const leftSecs = Math.max(1, Math.floor((deadline - performance.now()) / 1000));
  const result = await sandbox.runUncounted(step.command, { timeoutSecs: leftSecs, cwd: step.cwd, env: step.env });
  if (result.exit_code === 0 && result.limit_exceeded === null) return;
  const why = result.limit_exceeded
    ? `was stopped by the ${result.limit_exceeded} limit${result.limit_exceeded === 'wall_time' ? ` (the task's build_timeout_sec, ${task.buildTimeoutSecs} s, for all RUN steps)` : ''}`
    : `failed with exit code ${result.exit_code}`;
  const output = `${result.stdout}${result.stderr}`;
  throw new HarborTaskError(
    `${at}: RUN ${firstLine(step.command)} ${why}, so the task cannot be seeded here (it runs over this host's system, as an unprivileged user, without network). ` +
      `Its output${output.length > OUTPUT_TAIL ? ` (the last ${OUTPUT_TAIL} characters)` : ''}:\n${output.slice(-OUTPUT_TAIL) || '(none)'}`,
  );
}

/** Files copied after a RUN step: made from inside the sandbox, where nothing a step left can redirect them. */
async function writeFiles(
  sandbox: Sandbox,
  at: string,
  dirs: string[],
  files: Record<string, SeedFile>,
): Promise<void> {
  if (dirs.length > 0) {
    const quoted = dirs.map((dir) => `'${dir.replace(/'/g, `'\\''`)}'`).join(' ');
    const made = await sandbox.runUncounted(`mkdir -p -- ${quoted}`, { timeoutSecs: 30, cwd: sandbox.workMount });
    if (made.exit_code !== 0) throw new HarborTaskError(`${at}: could not make its directories: ${made.stderr.trim()}`);
  }
  for (const [relative, file] of Object.entries(files)) {
    const written = await sandbox.writeBytes(relative, file.content, file.mode);
    if (typeof written.error === 'string')
      throw new HarborTaskError(`${at}: could not copy ${relative}: ${written.error}`);
  }
}

function firstLine(command: string): string {
  const line = command.trim().split('\n')[0]!;
  return line.length > 120 ? `${line.slice(0, 117)}…` : line;
}
