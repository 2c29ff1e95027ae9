/**
 * The agent service `gym quickstart` runs for the counter tasks (and `service.js` starts), with the chosen brain:
 * the deterministic planner (default; works offline), the Claude Code CLI, or an OpenAI-compatible model server.
 */
import { ConfigError } from '../../src/errors.js';
import type { Decide } from '../../src/service/index.js';
import { serveExample, type ExampleServiceOptions, type StartedService } from '../example-service.js';
import { claudeModel, createClaudeCliDecide, type ClaudeCliOptions } from '../claude-cli/brain.js';
import { createOpenAiDecide, type OpenAiBrainOptions } from '../openai-compatible/brain.js';
import { createCounterPlanner } from './planner.js';

export { createCounterPlanner, parseCounterTask, type CounterTask, type PlannerOptions } from './planner.js';
export type { StartedService } from '../example-service.js';

export type BrainKind = 'planner' | 'claude' | 'openai';
export const BRAINS: readonly BrainKind[] = ['planner', 'claude', 'openai'];

export interface CounterServiceOptions extends ExampleServiceOptions {
  /** Default 'planner': the deterministic counter planner, no model involved. */
  brain?: BrainKind;
  /** planner: one increment per call instead of all at once. */
  incremental?: boolean;
  /** brain 'claude': the CLI's model and executable. */
  claude?: ClaudeCliOptions;
  /** brain 'openai': required. */
  openai?: OpenAiBrainOptions;
}

export async function startCounterPlannerService(options: CounterServiceOptions = {}): Promise<StartedService> {
  const { decide, brainName } = chooseBrain(options);
  return serveExample(decide, brainName, options);
}

function chooseBrain(options: CounterServiceOptions): { decide: Decide; brainName: string } {
  const brain = options.brain ?? 'planner';
  switch (brain) {
    case 'planner':
      return {
        decide: createCounterPlanner({ incremental: options.incremental ?? false }),
        brainName: `counter-planner (deterministic, no model${options.incremental ? ', incremental' : ''})`,
      };
    case 'claude':
      return {
        decide: createClaudeCliDecide(options.claude),
        brainName: `claude-cli (${claudeModel(options.claude)})`,
      };
    case 'openai':
      if (!options.openai) {
        throw new ConfigError(
          "brain 'openai' needs the model server: pass openai: {modelUrl, model, apiKey?} " +
            '(on the command line: --model-url URL --model NAME, and the key in OPENAI_API_KEY).',
        );
      }
      return { decide: createOpenAiDecide(options.openai), brainName: options.openai.model };
    default:
      throw new ConfigError(`unknown brain '${String(brain)}': choose one of ${BRAINS.join(', ')}.`);
  }
}
