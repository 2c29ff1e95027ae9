/**
 * Shell tasks: what a row names (`task_dir`, a directory under the environment's tasks dir) or carries inline
 * (`task`). A task is setup files copied into the sandbox's work dir, a hidden check (files the agent never sees,
 * bound read-only at /check only while the check runs, plus the command that runs it) and a reward rule. The
 * instruction itself travels in the row's `responses_create_params` (it is what the agent reads); a task directory
 * keeps it in `instruction.md`, from which `scripts/generate.ts` writes the rows.
 *
 * Task directory layout (Harbor-like): `instruction.md`, `task.json` (`{"reward_rule": "all" | "fraction",
 * "check_command"?: "..."}`), `setup/**` (copied into /work), `tests/**` (the hidden check; `tests/check.sh` runs by
 * default). The check prints one line per check, `PASS <name>` or `FAIL <name>`; anything else is ignored.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';

export type RewardRule = 'all' | 'fraction';

export interface ShellTask {
  id: string;
  setupFiles: Record<string, string>;
  checkFiles: Record<string, string>;
  checkCommand: string;
  rewardRule: RewardRule;
}

export const DEFAULT_CHECK_COMMAND = 'sh /check/check.sh';
export const MAX_FILES = 1000;
export const MAX_TASK_BYTES = 32 * 1024 * 1024;

/** A path inside the work dir (or the check dir) as a task may name it: relative, no `..`, no empty part, no NUL. */
function isTaskPath(p: string): boolean {
  return (
    p.length > 0 &&
    p.length <= 4096 &&
    !p.startsWith('/') &&
    !p.includes('\0') &&
    p.split('/').every((part) => part !== '' && part !== '..')
  );
}

const Files = z.record(z.string(), z.string()).superRefine((files, ctx) => {
  const names = Object.keys(files);
  if (names.length > MAX_FILES) ctx.addIssue({ code: 'custom', message: `at most ${MAX_FILES} files` });
  const bad = names.find((name) => !isTaskPath(name));
  if (bad !== undefined)
    ctx.addIssue({
      code: 'custom',
      message: `${JSON.stringify(bad)} must be a relative path without '..', empty parts or NUL`,
    });
});

const RewardRuleSchema = z.enum(['all', 'fraction']);

export const InlineTask = z.object({
  id: z.string().max(200).optional(),
  setup_files: Files.optional(),
  check_files: Files,
  check_command: z.string().min(1).max(4096).optional(),
  reward_rule: RewardRuleSchema.optional(),
});

const TaskJson = z.object({
  reward_rule: RewardRuleSchema.optional(),
  check_command: z.string().min(1).max(4096).optional(),
});

const TaskName = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/,
    'must be the plain name of a directory under the tasks dir (letters, digits, _ . -)',
  );

/** What /seed_session reads from the row: exactly one of `task_dir`, `task` and `harbor_task`. */
export const TaskRow = z
  .looseObject({
    task_dir: TaskName.optional(),
    task: InlineTask.optional(),
    /** A Harbor-format task's directory name under `harbor_tasks_dir` (harbor/task.ts). */
    harbor_task: TaskName.optional(),
  })
  .refine((row) => [row.task_dir, row.task, row.harbor_task].filter((given) => given !== undefined).length === 1, {
    message:
      "give exactly one of 'task_dir' (a task directory's name), 'task' (the task inline) and 'harbor_task' (a Harbor task's directory name)",
    path: ['task_dir'],
  });

export type TaskRowValue = z.infer<typeof TaskRow>;

export class TaskError extends Error {}

export function taskFromRow(row: TaskRowValue, tasksDir: string): ShellTask {
  if (row.task) {
    const inline = row.task;
    const task: ShellTask = {
      id: inline.id ?? 'inline',
      setupFiles: inline.setup_files ?? {},
      checkFiles: inline.check_files,
      checkCommand: inline.check_command ?? DEFAULT_CHECK_COMMAND,
      rewardRule: inline.reward_rule ?? 'all',
    };
    assertSize(task, 'the inline task');
    return task;
  }
  return loadTaskDir(tasksDir, row.task_dir!);
}

export function loadTaskDir(tasksDir: string, name: string): ShellTask {
  const dir = path.join(tasksDir, name);
  let meta: z.infer<typeof TaskJson> = {};
  try {
    if (!statSync(dir).isDirectory()) throw new Error('not a directory');
  } catch {
    throw new TaskError(`task_dir '${name}': no such task directory under ${tasksDir}`);
  }
  try {
    meta = TaskJson.parse(JSON.parse(readFileSync(path.join(dir, 'task.json'), 'utf8')));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
      throw new TaskError(
        `task_dir '${name}': task.json is invalid: ${err instanceof Error ? err.message : String(err)}`,
      );
  }
  const task: ShellTask = {
    id: name,
    setupFiles: readTree(path.join(dir, 'setup')),
    checkFiles: readTree(path.join(dir, 'tests')),
    checkCommand: meta.check_command ?? DEFAULT_CHECK_COMMAND,
    rewardRule: meta.reward_rule ?? 'all',
  };
  if (Object.keys(task.checkFiles).length === 0) throw new TaskError(`task_dir '${name}': tests/ holds no check`);
  assertSize(task, `task_dir '${name}'`);
  return task;
}

/** Regular files under `root`, as text (a native task's setup and check). */
function readTree(root: string): Record<string, string> {
  const files: Record<string, string> = {};
  for (const [name, bytes] of Object.entries(readTreeBytes(root, (message) => new TaskError(message))))
    files[name] = bytes.toString('utf8');
  return files;
}

/**
 * Regular files under `root`, as bytes, keyed by their path relative to it: a missing root is an empty tree, symlinks
 * are skipped, and more than MAX_FILES files or 32 levels is refused with the error `fail` makes (each kind of task
 * says it its own way).
 */
export function readTreeBytes(root: string, fail: (message: string) => Error): Record<string, Buffer> {
  const files: Record<string, Buffer> = {};
  const walk = (dir: string, prefix: string, depth: number): void => {
    if (depth > 32) throw fail(`${dir}: nested deeper than 32 levels`);
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      const relative = prefix ? `${prefix}/${entry.name}` : entry.name;
      if (entry.isDirectory()) walk(path.join(dir, entry.name), relative, depth + 1);
      else if (entry.isFile()) {
        files[relative] = readFileSync(path.join(dir, entry.name));
        if (Object.keys(files).length > MAX_FILES) throw fail(`${root}: more than ${MAX_FILES} files`);
      }
    }
  };
  walk(root, '', 0);
  return files;
}

function assertSize(task: ShellTask, where: string): void {
  const bytes = [...Object.values(task.setupFiles), ...Object.values(task.checkFiles)].reduce(
    (sum, text) => sum + Buffer.byteLength(text),
    0,
  );
  if (bytes > MAX_TASK_BYTES)
    throw new TaskError(`${where}: its files total ${bytes} bytes, more than ${MAX_TASK_BYTES}`);
}

export interface CheckScore {
  reward: number;
  passed: number;
  total: number;
}

/** Count the check's `PASS`/`FAIL` lines and apply the rule. No result line at all is a failed check (reward 0). */
export function scoreCheck(stdout: string, rule: RewardRule): CheckScore {
  let passed = 0;
  let total = 0;
  for (const line of stdout.split('\n')) {
    const match = /^(PASS|FAIL)(\s|$)/.exec(line);
    if (!match) continue;
    total++;
    if (match[1] === 'PASS') passed++;
  }
  if (total === 0) return { reward: 0, passed, total };
  return { reward: rule === 'fraction' ? passed / total : passed === total ? 1 : 0, passed, total };
}
