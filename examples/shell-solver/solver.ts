import { toolHistory, userMessages, type Decide, type ToolCall } from '../../src/service/index.js';
import { SCRIPTS, type TaskScript } from './scripts.js';

/**
 * The deterministic solver of the shell environment's example tasks. It recognises the task from the instruction,
 * replays its script over the conversation (each step's calls are matched with the results Gym sent back), and
 * asks for the next step's calls or, when the script is done, answers with its summary. Everything comes from the
 * conversation, so any call can land on any replica.
 */
export function createShellSolver(scripts: readonly TaskScript[] = SCRIPTS): Decide {
  return (conversation, tools) => {
    const instruction = userMessages(conversation).join('\n');
    const script = scripts.find((candidate) => candidate.recognise.test(instruction));
    if (!script) return { final: 'shell-solver: this is not one of the example tasks I have a script for.' };
    const declared = new Set(tools.map((tool) => tool.name));
    const history = toolHistory(conversation);
    const outputs = history.map((call) => parseOutput(call.output));
    let consumed = 0;
    for (const step of script.steps) {
      const calls: ToolCall[] = step(outputs.slice(0, consumed));
      if (consumed + calls.length > history.length) {
        const missing = calls.filter((call) => !declared.has(call.name)).map((call) => call.name);
        if (missing.length > 0)
          return { final: `shell-solver: the request does not declare ${[...new Set(missing)].join(', ')}.` };
        return { toolCalls: calls };
      }
      consumed += calls.length;
    }
    return { final: script.summary(outputs) };
  };
}

function parseOutput(output: string | undefined): unknown {
  if (output === undefined) return undefined;
  try {
    return JSON.parse(output);
  } catch {
    return output;
  }
}
