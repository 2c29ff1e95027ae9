/**
 * The agent service `gym quickstart` runs for the counter tasks (and `service.js` starts), with the chosen brain:
 * the deterministic planner (default; works offline), the Claude Code CLI, an OpenAI-compatible model server, or a
 * GGUF model run in-process (`local`, with the optional node-llama-cpp).
 */
import { ConfigError } from '../../src/errors.js';
import type { Decide } from '../../src/service/index.js';
import { serveExample, type ExampleServiceOptions, type StartedService } from '../example-service.js';
import { claudeModel, createClaudeCliDecide, type ClaudeCliOptions } from '../claude-cli/brain.js';
import { createOpenAiDecide, type OpenAiBrainOptions } from '../openai-compatible/brain.js';
import { loadLocalBrain, type LocalBrainOptions } from '../local-llm/brain.js';
import { createCounterPlanner } from './planner.js';

export { createCounterPlanner, parseCounterTask, type CounterTask, type PlannerOptions } from './planner.js';
export type { StartedService } from '../example-service.js';

export type BrainKind = 'planner' | 'claude' | 'openai' | 'local';
export const BRAINS: readonly BrainKind[] = ['planner', 'claude', 'openai', 'local'];

export interface CounterServiceOptions extends ExampleServiceOptions {
  /** Default 'planner': the deterministic counter planner, no model involved. */
  brain?: BrainKind;
  /** planner: one increment per call instead of all at once. */
  incremental?: boolean;
  /** brain 'claude': the CLI's model and executable. */
  claude?: ClaudeCliOptions;
  /** brain 'openai': required. */
  openai?: OpenAiBrainOptions;
  /**
   * brain 'local': the GGUF file and the generation limits. Without a file, each call must carry the rollout's
   * model URL (a remote agent with `model_server`).
   */
  local?: LocalBrainOptions;
}

interface ChosenBrain {
  decide: Decide;
  brainName: string;
  /** Frees what the brain holds (the local model), after the service stops. */
  close?: () => Promise<void>;
}

export async function startCounterPlannerService(options: CounterServiceOptions = {}): Promise<StartedService> {
  const brain = await chooseBrain(options);
  let service: StartedService;
  try {
    service = await serveExample(brain.decide, brain.brainName, options);
  } catch (error) {
    await brain.close?.();
    throw error;
  }
  if (!brain.close) return service;
  const releaseBrain = brain.close;
  return { ...service, close: () => service.close().finally(releaseBrain) };
}

async function chooseBrain(options: CounterServiceOptions): Promise<ChosenBrain> {
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
    case 'local':
      // Without a model file it answers only calls that carry the rollout's model URL (local-llm/brain.ts).
      return loadLocalBrain(options.local ?? {});
    default:
      throw new ConfigError(`unknown brain '${String(brain)}': choose one of ${BRAINS.join(', ')}.`);
  }
}
