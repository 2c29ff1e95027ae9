/**
 * A Harbor-format task directory (Terminal-Bench 2, Harbor's registry): `instruction.md` (what the agent reads),
 * `task.toml` (its timeouts and metadata), `environment/Dockerfile` with the files it copies, `tests/test.sh` (the
 * verifier: it writes `/logs/verifier/reward.txt` or `reward.json`) and `solution/solve.sh` (the oracle). Read
 * whole at seed, so an edited task is picked up by the next session. `harbor_tasks_dir` names a directory of such
 * tasks, or one task itself.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { z } from 'zod';
import { COMMAND_ENV } from '../sandbox/sandbox.js';
import { MAX_FILES, MAX_TASK_BYTES, readTreeBytes } from '../tasks.js';
import { HarborTaskError } from './dockerfile.js';
import { planDockerfile, type DockerPlan } from './plan.js';

export interface HarborTask {
  kind: 'harbor';
  /** The task directory's name (what a row's `harbor_task` says). */
  id: string;
  dir: string;
  instruction: string;
  /** `[agent] timeout_sec`: the session's wall budget for commands, when given. */
  agentTimeoutSecs: number | undefined;
  /** `[verifier] timeout_sec`: how long `tests/test.sh` may run, when given. */
  verifierTimeoutSecs: number | undefined;
  /** `[environment] build_timeout_sec`: all RUN steps together (default 600 s). */
  buildTimeoutSecs: number;
  /** `[verifier] env`: added to the verifier's environment. */
  verifierEnv: Record<string, string>;
  /** `[solution] env`: added to the oracle's environment. */
  solutionEnv: Record<string, string>;
  /** `[metadata]`, as the task gives it. */
  metadata: Record<string, unknown>;
  plan: DockerPlan;
  tests: Record<string, Buffer>;
  solution: Record<string, Buffer>;
}

const StringMap = z.record(z.string(), z.string());
const Seconds = z.number().positive().max(86_400);

/** The task.toml keys read here; the rest (resources, `allow_internet`, …) does not apply to a sandbox and is kept out. */
const TaskToml = z.looseObject({
  metadata: z.record(z.string(), z.unknown()).optional(),
  verifier: z.looseObject({ timeout_sec: Seconds.optional(), env: StringMap.optional() }).optional(),
  agent: z.looseObject({ timeout_sec: Seconds.optional() }).optional(),
  environment: z.looseObject({ build_timeout_sec: Seconds.optional() }).optional(),
  solution: z.looseObject({ env: StringMap.optional() }).optional(),
});

const DEFAULT_BUILD_SECS = 600;

/** The task names under `tasksDir`, sorted; `tasksDir` itself when it is one task. */
export function harborTaskNames(tasksDir: string): string[] {
  if (existsSync(path.join(tasksDir, 'task.toml'))) return [path.basename(tasksDir)];
  let names: string[];
  try {
    names = readdirNames(tasksDir);
  } catch {
    throw new HarborTaskError(`${tasksDir}: no such directory of Harbor tasks`);
  }
  return names.filter((name) => existsSync(path.join(tasksDir, name, 'task.toml'))).sort();
}

/** Where the task `name` lives: under `tasksDir`, or `tasksDir` itself when it is that one task. */
export function harborTaskDir(tasksDir: string, name: string): string {
  if (existsSync(path.join(tasksDir, 'task.toml')) && path.basename(tasksDir) === name) return tasksDir;
  return path.join(tasksDir, name);
}

export function loadHarborTask(tasksDir: string, name: string): HarborTask {
  const dir = harborTaskDir(tasksDir, name);
  const where = `harbor_task '${name}'`;
  if (!existsSync(path.join(dir, 'task.toml')))
    throw new HarborTaskError(`${where}: no task.toml in ${dir} (harbor_tasks_dir is ${tasksDir})`);
  const config = readTaskToml(path.join(dir, 'task.toml'));
  const instruction = readText(path.join(dir, 'instruction.md'), `${where}: instruction.md`);
  const dockerfile = path.join(dir, 'environment', 'Dockerfile');
  const plan = existsSync(dockerfile)
    ? planDockerfile(readFileSync(dockerfile, 'utf8'), {
        where: `${name}/environment/Dockerfile`,
        contextDir: path.join(dir, 'environment'),
        baseEnv: COMMAND_ENV,
      })
    : { baseImage: undefined, workMount: '/work', cwd: '/work', env: {}, steps: [], notes: [] };
  const tests = readTreeBytes(path.join(dir, 'tests'), (message) => new HarborTaskError(message));
  if (!tests['test.sh']) throw new HarborTaskError(`${where}: tests/test.sh is missing (the verifier Harbor runs)`);
  const task: HarborTask = {
    kind: 'harbor',
    id: name,
    dir,
    instruction,
    agentTimeoutSecs: config.agent?.timeout_sec,
    verifierTimeoutSecs: config.verifier?.timeout_sec,
    buildTimeoutSecs: config.environment?.build_timeout_sec ?? DEFAULT_BUILD_SECS,
    verifierEnv: config.verifier?.env ?? {},
    solutionEnv: config.solution?.env ?? {},
    metadata: config.metadata ?? {},
    plan,
    tests,
    solution: readTreeBytes(path.join(dir, 'solution'), (message) => new HarborTaskError(message)),
  };
  assertHarborSize(task, where);
  return task;
}

function readTaskToml(file: string): z.infer<typeof TaskToml> {
  let parsed: unknown;
  try {
    parsed = parseToml(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new HarborTaskError(
      `${file}: not valid TOML: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`,
    );
  }
  const checked = TaskToml.safeParse(parsed);
  if (!checked.success) {
    const issue = checked.error.issues[0]!;
    throw new HarborTaskError(
      `${file}: ${issue.path.join('.')}: ${issue.message} (timeouts are positive numbers of seconds, env tables hold strings)`,
    );
  }
  return checked.data;
}

function readText(file: string, what: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    throw new HarborTaskError(`${what} is missing (${file})`);
  }
}

/** The subdirectories of `dir`. */
function readdirNames(dir: string): string[] {
  if (!statSync(dir).isDirectory()) throw new Error('not a directory');
  return readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name);
}

function assertHarborSize(task: HarborTask, where: string): void {
  const contents = [
    ...task.plan.steps.flatMap((step) =>
      step.kind === 'files' ? Object.values(step.files).map((f) => f.content) : [],
    ),
    ...Object.values(task.tests),
    ...Object.values(task.solution),
  ];
  if (contents.length > 3 * MAX_FILES) throw new HarborTaskError(`${where}: more than ${3 * MAX_FILES} files`);
  const bytes = contents.reduce((sum, content) => sum + content.length, 0);
  if (bytes > MAX_TASK_BYTES)
    throw new HarborTaskError(`${where}: its files total ${bytes} bytes, more than ${MAX_TASK_BYTES}`);
}
