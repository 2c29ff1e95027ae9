import { z } from 'zod';
import { HttpError } from '../../src/http/server.js';
import { createResourcesServer, tool } from '../../src/server/resources-server.js';
import { isMainModule, serveInstance } from '../../src/server/serve.js';

/**
 * The stateful counter environment. Each rollout's session holds one integer: `/seed_session` stores the row's
 * `initial_count` (only when the session has none yet, as the reference does), `increment_counter` adds to it,
 * `get_counter_value` reads it, and `/verify` gives 1.0 exactly when it equals the row's `expected_count`.
 */
// Built once: constructing a zod schema on every /verify showed up in the environment's CPU profile.
const ExpectedCount = z.int();

export function createCounterServer(instanceName: string) {
  const counters = new Map<string, number>();

  return createResourcesServer({
    className: 'StatefulCounterResourcesServer',
    instanceName,
    seed: tool(z.looseObject({ initial_count: z.int() }), ({ initial_count }, { sessionId }) => {
      if (!counters.has(sessionId)) counters.set(sessionId, initial_count);
      return {};
    }),
    tools: {
      increment_counter: tool(z.looseObject({ count: z.int() }), ({ count }, { sessionId }) => {
        counters.set(sessionId, (counters.get(sessionId) ?? 0) + count);
        return { success: true };
      }),
      get_counter_value: tool(z.unknown(), (_args, { sessionId }) => {
        if (!counters.has(sessionId)) counters.set(sessionId, 0);
        return { count: counters.get(sessionId) };
      }),
    },
    verify: (body, { sessionId }) => {
      const expected = ExpectedCount.safeParse(body.expected_count);
      if (!expected.success) {
        throw new HttpError(422, [
          { type: 'int_type', loc: ['body', 'expected_count'], msg: 'expected_count: expected an integer' },
        ]);
      }
      const count = counters.get(sessionId);
      return { reward: count !== undefined && count === expected.data ? 1.0 : 0.0 };
    },
  });
}

if (isMainModule(import.meta.url)) {
  void serveInstance(({ instance }) => createCounterServer(instance.name));
}
