import { defineEnvironment, EnvironmentServer, isMainModule, runEnvironment, z } from '../../src/environment/index.js';

/**
 * The stateful counter environment, the smallest example of the environment kit. Each rollout's session holds
 * one integer: `/seed_session` stores the row's `initial_count` (only when the session has none yet, as the
 * reference does: Q16), `increment_counter` adds to it, `get_counter_value` reads it (a session never seeded
 * starts at 0), and `/verify` gives 1.0 exactly when it equals the row's `expected_count`.
 */
export const counterEnvironment = defineEnvironment({
  name: 'example_session_state_mgmt',
  className: 'StatefulCounterResourcesServer',
  seedRow: z.looseObject({ initial_count: z.int() }),
  createState: (row) => ({ count: row.initial_count }),
  initialState: () => ({ count: 0 }),
  reseed: 'keep',
  tools: (tool) => ({
    increment_counter: tool({
      description: 'Add `count` to the counter.',
      input: z.looseObject({ count: z.int() }),
      run: ({ count }, { state }) => {
        state.count += count;
        return { success: true };
      },
    }),
    get_counter_value: tool({
      description: 'Read the counter.',
      input: z.looseObject({}),
      run: (_args, { state }) => ({ count: state.count }),
    }),
  }),
  verifyRow: z.looseObject({ expected_count: z.int() }),
  // A session that was never seeded nor touched has no state: it scores 0.0, even when 0 is expected.
  verify: ({ row, state }) => ({ reward: state !== undefined && state.count === row.expected_count ? 1.0 : 0.0 }),
});

/** The counter as a resources-server app (tests and examples listen on it directly). */
export function createCounterServer(instanceName: string) {
  return new EnvironmentServer(counterEnvironment, { instanceName }).app;
}

if (isMainModule(import.meta.url)) void runEnvironment(counterEnvironment);
