/**
 * `tsgym/environment`: write an environment ("resources server") that tsgym's remote agent can run rollouts on.
 *
 * You write what is particular to the environment: the tools (zod argument schemas, types inferred, a description
 * agents read), how a session's state is built from the seeded row, and how a finished trajectory is scored —
 * `reward` plus named extras (numbers become profile columns). The kit does the rest of the contract:
 * `/seed_session`, `/verify`, `/aggregate_metrics`, one POST route per tool, 422 texts that name the field, the
 * reserved route names, the signed session cookie, idle expiry and `dispose` of abandoned sessions.
 *
 * ```ts
 * import { defineEnvironment, isMainModule, runEnvironment, z } from 'tsgym/environment';
 *
 * export const counter = defineEnvironment({
 *   name: 'counter',
 *   seedRow: z.looseObject({ initial_count: z.int() }),
 *   createState: (row) => ({ count: row.initial_count }),
 *   tools: (tool) => ({
 *     increment_counter: tool({
 *       description: 'Add `count` to the counter.',
 *       input: z.object({ count: z.int() }),
 *       run: ({ count }, { state }) => {
 *         state.count += count;
 *         return { success: true };
 *       },
 *     }),
 *   }),
 *   verifyRow: z.looseObject({ expected_count: z.int() }),
 *   verify: ({ row, state }) => ({ reward: state?.count === row.expected_count ? 1 : 0, final_count: state?.count ?? 0 }),
 * });
 *
 * if (isMainModule(import.meta.url)) void runEnvironment(counter);
 * ```
 */
export { z } from 'zod';
export {
  defineEnvironment,
  ToolError,
  type Environment,
  type EnvironmentSpec,
  type FunctionToolSchema,
  type ToolContext,
  type ToolFactory,
  type ToolSpec,
  type VerifyInput,
  type VerifyOutcome,
} from './define.js';
export {
  EnvironmentServer,
  runEnvironment,
  serveEnvironment,
  type EnvironmentServerOptions,
  type RunningEnvironment,
} from './server.js';
export {
  SessionStore,
  DEFAULT_IDLE_TIMEOUT_SECS,
  DEFAULT_MAX_SESSIONS,
  type DisposeReason,
  type SessionOptions,
} from './sessions.js';
export { isMainModule, type ServeContext } from '../server/serve.js';
export type { CreateParams, ResponseObject } from '../contract/index.js';
export type { TaskMetricsHook } from '../metrics/metrics.js';
