/**
 * A local stand-in for the counter environment (`example_session_state_mgmt`) and for the part of Gym that runs
 * tools, so `gym agent check` can drive a service through whole conversations without starting anything.
 * Tool results are the texts Gym would feed back: the environment's compact JSON bodies, its `Not Found` for an
 * unserved tool, and Gym's `Invalid tool call arguments` for arguments that are not a JSON object.
 */

export class CounterSimulation {
  constructor(private count: number) {}

  get value(): number {
    return this.count;
  }

  /** Run one asked-for tool and return the result text Gym would append as its `function_call_output`. */
  execute(name: string, argumentsText: unknown): string {
    let args: unknown;
    try {
      args = typeof argumentsText === 'string' ? JSON.parse(argumentsText) : argumentsText;
    } catch (err) {
      return JSON.stringify({
        error: `Invalid tool call arguments: ${(err as Error).name}: ${(err as Error).message}`,
      });
    }
    if (typeof args !== 'object' || args === null || Array.isArray(args)) {
      return JSON.stringify({ error: 'Invalid tool call arguments: expected a JSON object' });
    }
    if (name === 'increment_counter') {
      const count = (args as { count?: unknown }).count;
      if (typeof count !== 'number' || !Number.isInteger(count)) {
        return JSON.stringify({
          detail: [{ type: 'int_type', loc: ['body', 'count'], msg: 'count: expected an integer' }],
        });
      }
      this.count += count;
      return '{"success":true}';
    }
    if (name === 'get_counter_value') return `{"count":${this.count}}`;
    return '{"detail":"Not Found"}';
  }
}
