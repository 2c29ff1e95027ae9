/**
 * Writes `data/example.jsonl` from the task directories under `data/tasks/`: one row per task, sorted by name,
 * whose `responses_create_params` carries the instruction (a short preface about the sandbox, then the task's
 * `instruction.md`) and the four tools' schemas, and whose `task_dir` names the task. The hidden check stays in the
 * task directory: no row carries it. Run `node dist/resources_servers/shell/scripts/generate.js` after editing a task.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { isMainModule } from '../../../src/main-module.js';
import { createShellEnvironment, DEFAULT_TASKS_DIR } from '../app.js';

export const EXAMPLE_JSONL = path.resolve(DEFAULT_TASKS_DIR, '..', 'example.jsonl');

const PREFACE =
  'You work in a sandboxed Linux shell (no network). Your files are in the work dir /work; use the tools run_command, ' +
  'read_file, write_file and list_dir (paths relative to /work). When you are done, answer with a short summary.\n\nTask:\n';

export function exampleRows(tasksDir = DEFAULT_TASKS_DIR): Array<Record<string, unknown>> {
  const tools = createShellEnvironment({
    sandboxes: { create: () => Promise.reject(new Error('the generator only reads the tool schemas')) },
  }).toolSchemas;
  return readdirSync(tasksDir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort()
    .map((name) => ({
      responses_create_params: {
        input: [
          { role: 'user', content: PREFACE + readFileSync(path.join(tasksDir, name, 'instruction.md'), 'utf8').trim() },
        ],
        tools,
      },
      task_dir: name,
    }));
}

export function exampleJsonl(tasksDir = DEFAULT_TASKS_DIR): string {
  return (
    exampleRows(tasksDir)
      .map((row) => JSON.stringify(row))
      .join('\n') + '\n'
  );
}

if (isMainModule(import.meta.url)) {
  writeFileSync(EXAMPLE_JSONL, exampleJsonl());
  process.stdout.write(`wrote ${EXAMPLE_JSONL}\n`);
}
