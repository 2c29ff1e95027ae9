/**
 * The counter planner as an agent service (a deterministic planner, not a model), or a local GGUF model as its brain:
 *
 *   node dist/examples/counter-planner/service.js --port 9000 [--host 0.0.0.0] [--incremental]
 *   node dist/examples/counter-planner/service.js --brain local [--model FILE.gguf] [--max-tokens N] [--threads N]
 *       [--max-tool-calls N]
 *
 * `--brain local` sends a call that carries the rollout's model URL (a remote agent with `model_server`) to that
 * URL's /chat/completions instead of the in-process model; without --model, every call must carry one.
 */
import { parseArgs } from 'node:util';
import type { StartedService } from '../example-service.js';
import { runExampleService } from '../service-main.js';
import { startCounterPlannerService } from './index.js';

const USAGE =
  'usage: node dist/examples/counter-planner/service.js [--port 9000] [--host 127.0.0.1] ' +
  '[--incremental | --brain local [--model FILE.gguf] [--max-tokens N] [--threads N] [--max-tool-calls N]]';

const { values } = parseArgs({
  strict: false,
  options: {
    brain: { type: 'string', default: 'planner' },
    model: { type: 'string' },
    'max-tokens': { type: 'string' },
    threads: { type: 'string' },
    'max-tool-calls': { type: 'string' },
  },
});
const fail = (message: string): never => {
  process.stderr.write(`Error: ${message}\n${USAGE}\n`);
  process.exit(2);
};
const count = (flag: 'max-tokens' | 'threads' | 'max-tool-calls'): number | undefined => {
  const text = values[flag];
  if (text === undefined) return undefined;
  const n = Number(text);
  return Number.isInteger(n) && n > 0 ? n : fail(`--${flag} must be a positive whole number, got '${String(text)}'`);
};

const LOCAL_FLAGS = ['model', 'max-tokens', 'threads', 'max-tool-calls'];
if (values.brain === 'planner') {
  // The shared command line (./service-main.ts) reads the rest: --port, --host, --incremental.
  process.argv = [...process.argv.slice(0, 2), ...withoutFlags(process.argv.slice(2), ['brain'])];
  await runExampleService(startCounterPlannerService, ['incremental']);
} else if (values.brain === 'local') {
  // Optional: without a model file, each call must carry the rollout's model URL (a remote agent with model_server).
  const modelPath = typeof values.model === 'string' ? values.model : undefined;
  const maxTokens = count('max-tokens');
  const threads = count('threads');
  const maxToolCalls = count('max-tool-calls');
  const start = (where: { port: number; host: string }): Promise<StartedService> =>
    startCounterPlannerService({
      ...where,
      brain: 'local',
      local: {
        ...(modelPath !== undefined ? { modelPath } : {}),
        ...(maxTokens ? { maxTokens } : {}),
        ...(threads ? { threads } : {}),
        ...(maxToolCalls ? { maxToolCalls } : {}),
      },
    });
  process.argv = [...process.argv.slice(0, 2), ...withoutFlags(process.argv.slice(2), ['brain', ...LOCAL_FLAGS])];
  await runExampleService(async (args) => {
    try {
      return await start(args);
    } catch (error) {
      // A missing runtime, a missing or unreadable model file: one line, no stack.
      process.stderr.write(`Error: ${(error as Error).message}\n`);
      process.exit(2);
    }
  });
} else {
  fail(
    `--brain must be planner or local, got '${String(values.brain)}' (the claude and openai brains have their own services)`,
  );
}

/** `args` without the given string flags and their values (as `--flag value` or `--flag=value`). */
function withoutFlags(args: string[], names: string[]): string[] {
  const kept: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const name = /^--([^=]+)/.exec(arg)?.[1];
    if (name === undefined || !names.includes(name)) kept.push(arg);
    else if (!arg.includes('=')) i++;
  }
  return kept;
}
