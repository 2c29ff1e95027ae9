import { finalAnswer, functionCall, toolAsk, toolOutputsIn, type ServiceCall } from './index.js';

/**
 * A deterministic agent brain for the counter tasks ("add 1 then add 2 then get the count"): one increment per
 * addend, then a read of the counter, then the count as the final answer. Stateless — every step is decided from
 * the conversation in the request — so it serves any number of rollouts at once.
 */
export function counterTaskReply(call: ServiceCall): Record<string, unknown> {
  const input = call.body?.input;
  const addends = [...taskText(call).matchAll(/add (-?\d+)/g)].map((m) => Number(m[1]));
  const outputs = toolOutputsIn(input).map((o) => JSON.parse(o.output) as { count?: number });
  const turn = outputs.length;
  if (turn < addends.length) return toolAsk(functionCall('increment_counter', { count: addends[turn] }, `c_${turn}`));
  const count = [...outputs].reverse().find((o) => typeof o.count === 'number')?.count;
  if (count === undefined) return toolAsk(functionCall('get_counter_value', {}, `c_${turn}`));
  return finalAnswer(`The count is ${count}.`);
}

/** The first addend of a counter task, to script per-task behaviour. */
export function firstAddend(call: ServiceCall): number | undefined {
  const match = /add (-?\d+)/.exec(taskText(call));
  return match ? Number(match[1]) : undefined;
}

/** The counter task: the request's string input, or the text content of its first item (the user's message). */
function taskText(call: ServiceCall): string {
  const input = call.body?.input;
  if (typeof input === 'string') return input;
  const content = input?.[0]?.content;
  return typeof content === 'string' ? content : '';
}
