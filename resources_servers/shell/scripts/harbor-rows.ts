/**
 * Turns a directory of Harbor-format tasks (or one task) into shell-environment rows, one per task in name order:
 * `responses_create_params` carries the instruction (a short preface naming the task's work dir, then its
 * `instruction.md`) and the four tools' schemas; `harbor_task` names the task; `task.toml`'s timeouts and
 * `[metadata]` ride along (`agent_timeout_sec`, `verifier_timeout_sec`, `harbor_metadata`, and its `difficulty`
 * and `category` at the top level, where `gym eval profile --group-by` finds them). The environment itself reads
 * the timeouts from task.toml at seed; the row's copies are for the results.
 *
 *   node dist/resources_servers/shell/scripts/harbor-rows.js DIR [--out FILE]
 *
 * The environment looks the tasks up in its `harbor_tasks_dir`, which must be the same DIR.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { readGeneratorFlags } from '../../../src/generator-args.js';
import { isMainModule } from '../../../src/main-module.js';
import { createShellEnvironment, DEFAULT_HARBOR_TASKS_DIR } from '../app.js';
import { TaskError } from '../tasks.js';
import { harborTaskNames, loadHarborTask, type HarborTask } from '../harbor/task.js';

export const HARBOR_EXAMPLE_JSONL = path.resolve(DEFAULT_HARBOR_TASKS_DIR, '..', 'harbor-example.jsonl');

function preface(task: HarborTask): string {
  const { workMount, cwd } = task.plan;
  return (
    `You work in a sandboxed Linux shell (no network). Your files are in the work dir ${workMount}` +
    (cwd === workMount ? '' : `, and commands start in ${cwd}`) +
    `; use the tools run_command, read_file, write_file and list_dir (file paths relative to ${workMount}). ` +
    'When you are done, answer with a short summary.\n\nTask:\n'
  );
}

export function harborRows(tasksDir = DEFAULT_HARBOR_TASKS_DIR): Array<Record<string, unknown>> {
  const tools = createShellEnvironment({
    sandboxes: { create: () => Promise.reject(new Error('the generator only reads the tool schemas')) },
  }).toolSchemas;
  return harborTaskNames(tasksDir).map((name) => {
    const task = loadHarborTask(tasksDir, name);
    const { difficulty, category } = task.metadata;
    return {
      responses_create_params: {
        input: [{ role: 'user', content: preface(task) + task.instruction.trim() }],
        tools,
      },
      harbor_task: name,
      ...(task.agentTimeoutSecs !== undefined ? { agent_timeout_sec: task.agentTimeoutSecs } : {}),
      ...(task.verifierTimeoutSecs !== undefined ? { verifier_timeout_sec: task.verifierTimeoutSecs } : {}),
      ...(typeof difficulty === 'string' ? { difficulty } : {}),
      ...(typeof category === 'string' ? { category } : {}),
      harbor_metadata: task.metadata,
    };
  });
}

export function harborJsonl(tasksDir = DEFAULT_HARBOR_TASKS_DIR): string {
  return (
    harborRows(tasksDir)
      .map((row) => JSON.stringify(row))
      .join('\n') + '\n'
  );
}

if (isMainModule(import.meta.url)) {
  const argv = process.argv.slice(2);
  const dir = argv[0] && !argv[0].startsWith('--') ? argv.shift()! : undefined;
  try {
    const out = readGeneratorFlags(argv, ['--out']).values.get('--out');
    const text = harborJsonl(dir ? path.resolve(dir) : undefined);
    if (out) {
      writeFileSync(out, text);
      process.stdout.write(`wrote ${text.split('\n').length - 1} rows to ${out}\n`);
    } else process.stdout.write(text);
  } catch (err) {
    if (!(err instanceof TaskError) && !(err instanceof Error && /^(unknown argument|--out needs)/.test(err.message)))
      throw err;
    process.stderr.write(
      `harbor-rows: ${err.message}\nusage: node dist/resources_servers/shell/scripts/harbor-rows.js DIR [--out FILE]\n`,
    );
    process.exitCode = 2;
  }
}
