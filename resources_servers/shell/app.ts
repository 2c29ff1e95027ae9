import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  defineEnvironment,
  EnvironmentServer,
  isMainModule,
  ToolError,
  z,
  type Environment,
} from '../../src/environment/index.js';
import { ConfigError } from '../../src/errors.js';
import { HttpError } from '../../src/http/server.js';
import { serveInstance } from '../../src/server/serve.js';
import { countSandboxes } from './sandbox-metrics.js';
import { SandboxError } from './sandbox/errors.js';
import { openSandboxHost, type SandboxHost } from './sandbox/host.js';
import { DEFAULT_LIMITS, type SandboxLimits } from './sandbox/limits.js';
import type { Sandbox } from './sandbox/sandbox.js';
import { scoreCheck, TaskError, taskFromRow, TaskRow, type ShellTask, type TaskRowValue } from './tasks.js';
import { seedHarborTask } from './harbor/seed.js';
import { loadHarborTask, type HarborTask } from './harbor/task.js';
import { verifyHarborTask } from './harbor/verify.js';

/**
 * The shell environment: an agent works in a real, isolated system. Each session gets a bubblewrap sandbox
 * (`sandbox/sandbox.ts`) at `/seed_session`, with the task's setup files in its work dir; the agent uses
 * `run_command`, `read_file`, `write_file` and `list_dir` (paths confined to the work dir); `/verify` runs the
 * task's hidden check inside the same sandbox (its files bound read-only at /check for that run only), scores its
 * `PASS`/`FAIL` lines by the task's rule, and destroys the sandbox. A session that is never verified is destroyed
 * when it expires, and every sandbox when the server stops; sandboxes a killed server left are removed when the
 * next one starts. The verify response leaves the inline `task` out (decision C4: the check stays hidden).
 */

const HERE = path.dirname(fileURLToPath(import.meta.url));
/** The tasks shipped with the source tree (this file runs from dist/resources_servers/shell/). */
export const DEFAULT_TASKS_DIR = path.resolve(HERE, '..', '..', '..', 'resources_servers', 'shell', 'data', 'tasks');
/** The example Harbor-format tasks shipped with the source tree. */
export const DEFAULT_HARBOR_TASKS_DIR = path.resolve(DEFAULT_TASKS_DIR, '..', 'harbor-example');

export interface ShellState {
  /** The task: the environment's own shape, or a Harbor-format task (`harbor_task` rows). */
  task: ShellTask | HarborTask;
  sandbox: Sandbox;
}

export interface ShellEnvironmentOptions {
  /** Where sessions' sandboxes come from (a `SandboxHost`). */
  sandboxes: Pick<SandboxHost, 'create'>;
  /** The per-command wall-time cap, shown in `run_command`'s schema. Default: the default limits'. */
  commandWallSecs?: number;
  tasksDir?: string;
  /** Where `harbor_task` names are looked up: a directory of Harbor tasks, or one task. */
  harborTasksDir?: string;
  /** Wall-clock bound of the hidden check (and of a Harbor task's verifier when its task.toml names none). Default 60 s. */
  checkTimeoutSecs?: number;
  /** Idle sessions (and their sandboxes) are dropped after this long. Default 600 s. */
  idleTimeoutSecs?: number;
  maxSessions?: number;
}

const MAX_READ_BYTES = 1024 * 1024;
const MAX_LIST_ENTRIES = 1000;

export function createShellEnvironment(
  options: ShellEnvironmentOptions,
): Environment<z.infer<typeof TaskRow>, ShellState> {
  const { sandboxes } = options;
  const tasksDir = options.tasksDir ?? DEFAULT_TASKS_DIR;
  const checkTimeoutSecs = options.checkTimeoutSecs ?? 60;
  const maxWallSecs = options.commandWallSecs ?? DEFAULT_LIMITS.commandWallSecs;

  return defineEnvironment({
    name: 'shell',
    className: 'ShellResourcesServer',
    seedRow: TaskRow,
    createState: async (row) => {
      try {
        if (row.harbor_task !== undefined) return await seedHarbor(row.harbor_task, options);
        const task = taskFromRow(row, tasksDir);
        return { task, sandbox: await sandboxes.create(task.setupFiles) };
      } catch (err) {
        if (err instanceof TaskError)
          throw new HttpError(422, [{ type: 'value_error', loc: ['body', rowTaskField(row)], msg: err.message }]);
        throw err;
      }
    },
    tools: (tool) => ({
      run_command: tool({
        description:
          'Run a shell command (/bin/sh -c) in the work dir /work of your sandbox (no network; python3, coreutils, grep, sed, awk). ' +
          'Returns exit_code, stdout, stderr, stdout_truncated, stderr_truncated, duration_ms, and limit_exceeded naming the limit when one stopped it.',
        input: z.object({
          command: z
            .string()
            .min(1)
            .max(64 * 1024)
            .describe('the shell command'),
          timeout_secs: z
            .number()
            .positive()
            .max(maxWallSecs)
            .optional()
            .describe(`wall-clock limit in seconds (at most ${maxWallSecs})`),
        }),
        run: async ({ command, timeout_secs }, { state }) => {
          const result = await state.sandbox.runCommand(
            command,
            timeout_secs === undefined ? {} : { timeoutSecs: timeout_secs },
          );
          const { cpu_ms: _cpu, ...shown } = result;
          return shown;
        },
      }),
      read_file: tool({
        description: 'Read a text file of the work dir (path relative to /work). Returns content, size and truncated.',
        input: z.object({
          path: z.string().min(1).max(4096).describe('path relative to the work dir'),
          max_bytes: z
            .int()
            .positive()
            .max(MAX_READ_BYTES)
            .optional()
            .describe(`read at most this many bytes (default and cap ${MAX_READ_BYTES})`),
        }),
        run: async ({ path: file, max_bytes }, { state }) =>
          answerOf(await state.sandbox.readFile(file, max_bytes ?? MAX_READ_BYTES)),
      }),
      write_file: tool({
        description:
          'Create or replace a file of the work dir (path relative to /work; parent dirs are created). Returns bytes_written.',
        input: z.object({
          path: z.string().min(1).max(4096).describe('path relative to the work dir'),
          content: z
            .string()
            .max(8 * 1024 * 1024)
            .describe('the whole new content (UTF-8)'),
        }),
        run: async ({ path: file, content }, { state }) => answerOf(await state.sandbox.writeFile(file, content)),
      }),
      list_dir: tool({
        description:
          'List a directory of the work dir (path relative to /work; default the work dir). Returns entries {name, type, size}.',
        input: z.object({
          path: z.string().max(4096).optional().describe('directory relative to the work dir (default .)'),
        }),
        run: async ({ path: dir }, { state }) => answerOf(await state.sandbox.listDir(dir ?? '.', MAX_LIST_ENTRIES)),
      }),
    }),
    verify: async ({ state }) => {
      if (!state) {
        throw new HttpError(
          409,
          '/verify: this session has no sandbox — it was never seeded, was already verified, or expired; nothing can be checked',
        );
      }
      const { task, sandbox } = state;
      if ('kind' in task) return verifyHarborTask(sandbox, task, task.verifierTimeoutSecs ?? checkTimeoutSecs);
      const usage = { ...sandbox.usage };
      const check = await sandbox.runCheck(task.checkFiles, task.checkCommand, checkTimeoutSecs);
      const score = scoreCheck(check.stdout, task.rewardRule);
      return {
        reward: score.reward,
        task_id: task.id,
        checks_passed: score.passed,
        checks_total: score.total,
        commands_run: usage.commandsRun,
        sandbox_seconds: Math.round(usage.wallMs) / 1000,
        ...(score.total === 0
          ? {
              check_error: check.limit_exceeded
                ? `the check was stopped by the ${check.limit_exceeded} limit`
                : `the check reported no PASS/FAIL line (exit ${check.exit_code})`,
            }
          : {}),
      };
    },
    dropFields: ['task'],
    dispose: (state) => state.sandbox.destroy(),
    sessions: {
      idleTimeoutSecs: options.idleTimeoutSecs ?? 600,
      ...(options.maxSessions ? { maxSessions: options.maxSessions } : {}),
    },
  });
}

/** The row field that names the task, for a 422's `loc`. */
function rowTaskField(row: TaskRowValue): string {
  return row.harbor_task !== undefined ? 'harbor_task' : row.task ? 'task' : 'task_dir';
}

/** Tasks whose notes (the unused base image, the ignored instructions) this process has logged: once per task. */
const notedTasks = new Set<string>();

/** A Harbor task's session: its Dockerfile applied in a new sandbox (harbor/seed.ts). */
async function seedHarbor(name: string, options: ShellEnvironmentOptions): Promise<ShellState> {
  if (!options.harborTasksDir)
    throw new TaskError(
      `harbor_task '${name}': this environment has no harbor_tasks_dir; set it in the instance's config to the directory of Harbor tasks (or one task)`,
    );
  const task = loadHarborTask(options.harborTasksDir, name);
  if (task.plan.notes.length > 0 && !notedTasks.has(task.dir)) {
    notedTasks.add(task.dir);
    process.stderr.write(`shell: harbor task '${name}': ${task.plan.notes.join('; ')}\n`);
  }
  const { sandbox } = await seedHarborTask(options.sandboxes, task);
  return { task, sandbox };
}

/** A file operation's answer, or its refusal as a ToolError the agent reads (400 with the reason). */
function answerOf(result: Record<string, unknown>): Record<string, unknown> {
  if (typeof result.error === 'string') throw new ToolError(result.error);
  return result;
}

// ---------------------------------------------------------------------------------------------------------------
// Configuration (the instance's block in the YAML) and the server process.

const LIMIT_KEYS: Record<string, keyof SandboxLimits> = {
  command_wall_secs: 'commandWallSecs',
  command_cpu_secs: 'commandCpuSecs',
  memory_bytes: 'memoryBytes',
  processes: 'processes',
  output_bytes: 'outputBytes',
  file_bytes: 'fileBytes',
  disk_bytes: 'diskBytes',
  session_wall_secs: 'sessionWallSecs',
  session_cpu_secs: 'sessionCpuSecs',
  session_output_bytes: 'sessionOutputBytes',
  session_memory_bytes: 'sessionMemoryBytes',
};

const ShellConfig = z.looseObject({
  tasks_dir: z.string().min(1).optional(),
  harbor_tasks_dir: z.string().min(1).optional(),
  sandbox_base_dir: z.string().min(1).optional(),
  check_timeout_secs: z.number().positive().optional(),
  session_idle_timeout_secs: z.number().positive().optional(),
  max_sessions: z.int().positive().optional(),
  limits: z
    .strictObject(Object.fromEntries(Object.keys(LIMIT_KEYS).map((key) => [key, z.int().positive().optional()])))
    .optional(),
});

export interface ShellServerSettings {
  tasksDir: string;
  harborTasksDir: string;
  baseDir: string;
  limits: Partial<SandboxLimits>;
  checkTimeoutSecs?: number;
  idleTimeoutSecs?: number;
  maxSessions?: number;
}

/** The instance's config block as settings; a bad key is a config error naming it. */
export function shellSettings(
  config: Record<string, unknown>,
  instanceName: string,
  configDir = process.cwd(),
): ShellServerSettings {
  const parsed = ShellConfig.safeParse(config);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ConfigError(
      `${instanceName}.${issue.path.join('.')}: ${issue.message}. Limits are positive integers (${Object.keys(LIMIT_KEYS).join(', ')}); ` +
        'timeouts are positive numbers of seconds.',
    );
  }
  const block = parsed.data;
  const limits: Partial<SandboxLimits> = {};
  for (const [key, value] of Object.entries(block.limits ?? {}))
    if (typeof value === 'number') limits[LIMIT_KEYS[key]!] = value;
  return {
    tasksDir: block.tasks_dir ? path.resolve(configDir, block.tasks_dir) : DEFAULT_TASKS_DIR,
    harborTasksDir: block.harbor_tasks_dir ? path.resolve(configDir, block.harbor_tasks_dir) : DEFAULT_HARBOR_TASKS_DIR,
    baseDir: block.sandbox_base_dir
      ? path.resolve(configDir, block.sandbox_base_dir)
      : path.join(os.tmpdir(), 'tsgym-shell', instanceName),
    limits,
    ...(block.check_timeout_secs ? { checkTimeoutSecs: block.check_timeout_secs } : {}),
    ...(block.session_idle_timeout_secs ? { idleTimeoutSecs: block.session_idle_timeout_secs } : {}),
    ...(block.max_sessions ? { maxSessions: block.max_sessions } : {}),
  };
}

/**
 * The environment's server: opens the sandbox host first (refusing to start without one), and reports live
 * sandboxes (on `GET /`, and as `gym_shell_sandboxes` on `GET /metrics`).
 */
export async function createShellServer(
  settings: ShellServerSettings,
  instanceName = 'shell',
): Promise<{ server: EnvironmentServer; host: SandboxHost; close(): Promise<void> }> {
  const host = await openSandboxHost({ baseDir: settings.baseDir, limits: settings.limits });
  const uncount = countSandboxes(host);
  const environment = createShellEnvironment({
    sandboxes: host,
    commandWallSecs: host.limits.commandWallSecs,
    tasksDir: settings.tasksDir,
    harborTasksDir: settings.harborTasksDir,
    ...(settings.checkTimeoutSecs ? { checkTimeoutSecs: settings.checkTimeoutSecs } : {}),
    ...(settings.idleTimeoutSecs ? { idleTimeoutSecs: settings.idleTimeoutSecs } : {}),
    ...(settings.maxSessions ? { maxSessions: settings.maxSessions } : {}),
  });
  const server = new EnvironmentServer(environment, { instanceName });
  server.app.get('/', () => ({
    body: {
      status: 'ok',
      sandboxes_live: host.live,
      sessions_live: server.sessions.size,
      stale_sandbox_dirs_removed_at_start: host.staleRemoved,
      sandbox_base_dir: host.baseDir,
      limits: host.limits,
      session_memory_limit: host.sessionMemoryMechanism,
      memory_cgroup: host.memory?.root ?? null,
    },
  }));
  return {
    server,
    host,
    close: async () => {
      await server.close();
      await host.close();
      uncount();
    },
  };
}

export { DEFAULT_LIMITS, SandboxError };

if (isMainModule(import.meta.url)) {
  let running: Awaited<ReturnType<typeof createShellServer>> | undefined;
  void serveInstance(
    async ({ instance }) => {
      running = await createShellServer(shellSettings(instance.config, instance.name), instance.name);
      return running.server.app;
    },
    { onShutdown: () => running?.close() ?? Promise.resolve() },
  );
}
