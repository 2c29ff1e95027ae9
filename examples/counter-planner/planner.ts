import { toolHistory, userMessages, type Decide, type Decision } from '../../src/service/index.js';

/**
 * A deterministic planner for the counter tasks ("add A then add B then get the count"). It is not a model and
 * does no learning: it reads the numbers out of the task, asks Gym to run `increment_counter` for each, then
 * `get_counter_value`, and answers with the count the environment reported. It exists so the whole loop can be
 * seen working without any model, and as the shape every brain shares: read the conversation, decide.
 *
 * Everything it needs is in the conversation (no state between calls), so any call can land on any replica.
 */

export interface CounterTask {
  /** The amounts to add, in order. */
  adds: number[];
}

/** The numbers of every "add N" in the task text. */
export function parseCounterTask(text: string): CounterTask {
  return { adds: [...text.matchAll(/\badd\s+(-?\d+)/gi)].map((match) => Number(match[1])) };
}

export interface PlannerOptions {
  /** Ask for one increment per call instead of all of them at once. Default false (batched). */
  incremental?: boolean;
}

export function createCounterPlanner(options: PlannerOptions = {}): Decide {
  return (conversation, tools) => {
    const declared = new Set(tools.map((tool) => tool.name));
    const task = parseCounterTask(userMessages(conversation).join('\n'));
    const history = toolHistory(conversation);

    const incrementsAsked = history.filter((call) => call.name === 'increment_counter').length;
    if (declared.has('increment_counter') && incrementsAsked < task.adds.length) {
      const remaining = task.adds.slice(incrementsAsked);
      const batch = options.incremental ? remaining.slice(0, 1) : remaining;
      return { toolCalls: batch.map((count) => ({ name: 'increment_counter', arguments: { count } })) };
    }

    // Read the count only after the last increment, so the answer reflects every add.
    const lastIncrement = history.map((call) => call.name).lastIndexOf('increment_counter');
    const reading = history.slice(lastIncrement + 1).find((call) => call.name === 'get_counter_value');
    if (!reading) {
      if (declared.has('get_counter_value')) return { toolCalls: [{ name: 'get_counter_value', arguments: {} }] };
      return { final: 'The counter planner cannot read the count: this request does not declare get_counter_value.' };
    }
    return answerFrom(reading.output ?? '');
  };
}

function answerFrom(output: string): Decision {
  try {
    const count = (JSON.parse(output) as { count?: unknown }).count;
    if (typeof count === 'number') return { final: String(count) };
  } catch {
    // not JSON: report what the tool said
  }
  return { final: `get_counter_value returned ${output}` };
}
