/**
 * A rollout row as an ATIF trajectory (Harbor's Agent Trajectory Interchange Format, `ATIF-v1.7`), for
 * `gym eval export --format atif`. Field names follow the ATIF RFC (harbor-framework/harbor,
 * rfcs/0001-trajectory-format.md) as its v1.7 implementations spell them (NVIDIA NeMo Relay's `AtifTrajectory`,
 * `AtifStep`, `AtifToolCall`, `AtifObservationResult`, `AtifMetrics`, `AtifFinalMetrics`; NeMo Agent Toolkit's
 * `nat.atif`): root `schema_version`, `session_id`, `agent`, `steps`, `final_metrics`, `extra`; a step's `step_id`
 * (from 1), `source` (system, user, agent), `message`, `model_name`, `reasoning_content`, `tool_calls`
 * (`tool_call_id`, `function_name`, `arguments`), `observation.results` (`source_call_id`, `content`) and `metrics`
 * (`prompt_tokens`, `completion_tokens`, `prompt_token_ids`, `completion_token_ids`, `logprobs`).
 *
 * Steps come from the request's `instructions` and `input`, then the response's `output`, in order. Consecutive model
 * items of one generation (reasoning, text, tool calls) make one agent step; the item `rebuild.ts` put a generation's
 * tokens on closes it and gives it its metrics. A tool's output becomes a result in the observation of the step that
 * called it.
 */
import { isRecord } from '../contract/records.js';
import { NG } from '../runfiles/ng-keys.js';
import { MASK_SAMPLE_KEY } from './rebuild.js';

export const ATIF_SCHEMA_VERSION = 'ATIF-v1.7';

interface AtifToolCall {
  tool_call_id: string;
  function_name: string;
  arguments: Record<string, unknown>;
  extra?: Record<string, unknown>;
}

interface AtifObservationResult {
  source_call_id?: string;
  content: string;
}

interface AtifMetrics {
  prompt_tokens: number;
  completion_tokens: number;
  prompt_token_ids: number[];
  completion_token_ids: number[];
  logprobs: number[];
}

export interface AtifStep {
  step_id: number;
  source: 'system' | 'user' | 'agent';
  message: string;
  model_name?: string;
  reasoning_content?: string;
  tool_calls?: AtifToolCall[];
  observation?: { results: AtifObservationResult[] };
  metrics?: AtifMetrics;
}

export interface AtifTrajectory {
  schema_version: typeof ATIF_SCHEMA_VERSION;
  session_id: string;
  agent: { name: string; version: string; model_name?: string };
  steps: AtifStep[];
  final_metrics: {
    total_prompt_tokens?: number;
    total_completion_tokens?: number;
    total_cached_tokens?: number;
    total_steps: number;
  };
  extra: Record<string, unknown>;
}

function text(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part) => (isRecord(part) && typeof part.text === 'string' ? part.text : '')).join('');
}

function sourceOf(role: unknown): AtifStep['source'] {
  if (role === 'system' || role === 'developer') return 'system';
  return role === 'assistant' ? 'agent' : 'user';
}

const textField = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

function toolCall(item: Record<string, unknown>): AtifToolCall {
  const raw = typeof item.arguments === 'string' ? item.arguments : JSON.stringify(item.arguments ?? {});
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    parsed = undefined;
  }
  const call: AtifToolCall = {
    tool_call_id: textField(item.call_id) ?? textField(item.id) ?? '',
    function_name: textField(item.name) ?? '',
    arguments: isRecord(parsed) ? parsed : {},
  };
  // Arguments that are not a JSON object are kept verbatim rather than lost.
  if (!isRecord(parsed)) call.extra = { raw_arguments: raw };
  return call;
}

function metricsOf(item: Record<string, unknown>): AtifMetrics | undefined {
  const { prompt_token_ids: prompt, generation_token_ids: ids, generation_log_probs: logProbs } = item;
  if (!Array.isArray(prompt) || !Array.isArray(ids) || !Array.isArray(logProbs)) return undefined;
  return {
    prompt_tokens: prompt.length,
    completion_tokens: ids.length,
    prompt_token_ids: prompt as number[],
    completion_token_ids: ids as number[],
    logprobs: logProbs as number[],
  };
}

/** Walks the items in order, building steps; `open` is the agent step the current generation is adding to. */
class StepBuilder {
  readonly steps: AtifStep[] = [];
  private open: AtifStep | undefined;
  private readonly callers = new Map<string, AtifStep>();

  constructor(
    private readonly model: string | undefined,
    private readonly withTokens: boolean,
  ) {}

  private push(step: Omit<AtifStep, 'step_id'>): AtifStep {
    const made: AtifStep = { step_id: this.steps.length + 1, ...step };
    this.steps.push(made);
    return made;
  }

  private agentStep(): AtifStep {
    this.open ??= this.push({ source: 'agent', message: '', ...(this.model ? { model_name: this.model } : {}) });
    return this.open;
  }

  message(source: AtifStep['source'], message: string): void {
    this.open = undefined;
    this.push({ source, message });
  }

  item(item: Record<string, unknown>): void {
    if (item.type === 'function_call_output') return this.observation(item);
    if (item.type === 'reasoning') {
      const step = this.agentStep();
      const summary = Array.isArray(item.summary) ? text(item.summary) : text(item.content);
      step.reasoning_content = (step.reasoning_content ?? '') + summary;
    } else if (item.type === 'function_call') {
      const step = this.agentStep();
      const call = toolCall(item);
      (step.tool_calls ??= []).push(call);
      this.callers.set(call.tool_call_id, step);
    } else if (item.role === 'assistant') {
      const step = this.agentStep();
      step.message += text(item.content);
    } else if (item.type === 'message' || item.role !== undefined) {
      return this.message(sourceOf(item.role), text(item.content));
    }
    const metrics = this.withTokens ? metricsOf(item) : undefined;
    if (metrics) {
      this.agentStep().metrics = metrics;
      this.open = undefined; // the generation ends with the item carrying its tokens
    }
  }

  private observation(item: Record<string, unknown>): void {
    this.open = undefined;
    const callId = typeof item.call_id === 'string' ? item.call_id : undefined;
    const caller = callId === undefined ? undefined : this.callers.get(callId);
    const content = typeof item.output === 'string' ? item.output : JSON.stringify(item.output ?? null);
    const result: AtifObservationResult = caller ? { source_call_id: callId!, content } : { content };
    const step = caller ?? this.steps[this.steps.length - 1] ?? this.push({ source: 'user', message: '' });
    (step.observation ??= { results: [] }).results.push(result);
  }
}

function integer(value: unknown): number | undefined {
  return Number.isInteger(value) ? (value as number) : undefined;
}

/** One row of a rollouts file as one ATIF trajectory; token metrics only on a row a trainer may use. */
export function atifTrajectory(row: Record<string, unknown>, tsgymVersion: string): AtifTrajectory {
  const params = isRecord(row.responses_create_params) ? row.responses_create_params : {};
  const response = isRecord(row.response) ? row.response : {};
  const model = typeof response.model === 'string' ? response.model : undefined;
  const builder = new StepBuilder(model, row[MASK_SAMPLE_KEY] !== true);
  if (typeof params.instructions === 'string' && params.instructions !== '') {
    builder.message('system', params.instructions);
  }
  if (typeof params.input === 'string') builder.message('user', params.input);
  else if (Array.isArray(params.input)) for (const item of params.input) if (isRecord(item)) builder.item(item);
  if (Array.isArray(response.output)) for (const item of response.output) if (isRecord(item)) builder.item(item);

  const task = integer(row[NG.taskIndex]);
  const rollout = integer(row[NG.rolloutIndex]);
  const rolloutId = row[NG.rolloutId];
  const usage = isRecord(response.usage) ? response.usage : {};
  const details = isRecord(usage.input_tokens_details) ? usage.input_tokens_details : {};
  const agentRef = isRecord(row.agent_ref) && typeof row.agent_ref.name === 'string' ? row.agent_ref.name : 'tsgym';
  return {
    schema_version: ATIF_SCHEMA_VERSION,
    session_id: typeof rolloutId === 'string' ? rolloutId : `${task ?? 'task'}-${rollout ?? 0}`,
    agent: { name: agentRef, version: tsgymVersion, ...(model ? { model_name: model } : {}) },
    steps: builder.steps,
    final_metrics: {
      ...(integer(usage.input_tokens) === undefined ? {} : { total_prompt_tokens: usage.input_tokens as number }),
      ...(integer(usage.output_tokens) === undefined ? {} : { total_completion_tokens: usage.output_tokens as number }),
      ...(integer(details.cached_tokens) === undefined ? {} : { total_cached_tokens: details.cached_tokens as number }),
      total_steps: builder.steps.length,
    },
    extra: {
      task_index: task ?? null,
      rollout_index: rollout ?? null,
      reward: typeof row.reward === 'number' ? row.reward : null,
      ...(row[MASK_SAMPLE_KEY] === true ? { mask_sample: true } : {}),
    },
  };
}
