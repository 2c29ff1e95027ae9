import {
  defineEnvironment,
  EnvironmentServer,
  isMainModule,
  runEnvironment,
  ToolError,
  z,
} from '../../src/environment/index.js';
import { HttpError } from '../../src/http/server.js';
import { cloneOffice, OfficeSchema, type Office } from './office.js';
import { runParsedTool, TOOL_DESCRIPTIONS, ToolArgs, type OfficeSession, type ToolName } from './tools.js';
import { ExpectedChangesSchema, metricsByDifficulty, verifyOffice } from './verify.js';

/**
 * The workplace environment, on the environment kit: multi-step, stateful tool use with state-based verification.
 * `/seed_session` builds the rollout's office (mailbox, calendar, contacts, tasks) from the row's `office`; eleven
 * tools read and change it (tools.ts); `/verify` compares the final office with the seeded one and the row's
 * `expected_changes` (verify.ts) and the kit drops the session. The verify response — the rollout row (decision
 * C4) — keeps every row field except the bulky `office` and the answer key `expected_changes` (both stay in the
 * dataset and the materialized inputs), and adds the reward, the partial-credit extras and tool-use counts.
 */

interface WorkplaceState extends OfficeSession {
  /** The office as seeded, kept untouched: the verifier diffs the final office against it. */
  before: Office;
}

export const workplaceEnvironment = defineEnvironment({
  name: 'workplace',
  seedRow: z.looseObject({ office: OfficeSchema }),
  createState: ({ office }): WorkplaceState => ({
    before: cloneOffice(office),
    office: cloneOffice(office),
    nextId: 0,
  }),
  // As the counter does: a session seeded twice keeps its first office (and whatever the tools did to it).
  reseed: 'keep',
  tools: (tool) =>
    Object.fromEntries(
      (Object.keys(ToolArgs) as ToolName[]).map((name) => [
        name,
        tool({
          description: TOOL_DESCRIPTIONS[name],
          input: ToolArgs[name] as z.ZodType<unknown>,
          run: (args, { state }) => {
            const result = runParsedTool(name, args, state);
            // A mistake the agent can fix (unknown id, bad date): 400 {"detail": …}, nothing changed.
            if (typeof result.error === 'string') throw new ToolError(result.error);
            return result;
          },
        }),
      ]),
    ),
  verifyRow: z.looseObject({ expected_changes: ExpectedChangesSchema }),
  verify: ({ row, state, response }) => {
    if (!state) {
      // Not the agent's fault, so not a reward of 0: the rollout fails (retryable) and is re-run.
      throw new HttpError(
        409,
        '/verify: this session has no office — /seed_session was not called with the row, the session was already verified, or it expired',
      );
    }
    return {
      ...verifyOffice(state.before, state.office, row.expected_changes),
      tool_calls: response.output.filter((item) => item.type === 'function_call').length,
      tool_errors: countToolErrors(response.output),
    };
  },
  dropFields: ['office', 'expected_changes'],
  aggregateMetrics: metricsByDifficulty,
});

/** The workplace tools as rows declare them in `responses_create_params.tools`. */
export const WORKPLACE_TOOLS = workplaceEnvironment.toolSchemas;

/** The workplace environment as a resources-server app (tests listen on it directly). */
export function createWorkplaceServer(instanceName: string) {
  return new EnvironmentServer(workplaceEnvironment, { instanceName }).app;
}

/** Tool results that were errors: a tool's `{"detail": …}` (400) or a 422 for arguments that do not fit the schema. */
function countToolErrors(output: readonly unknown[]): number {
  return output.filter((item) => {
    const { type, output: text } = item as { type?: unknown; output?: unknown };
    if (type !== 'function_call_output' || typeof text !== 'string' || text.length > 100_000) return false;
    try {
      const parsed = JSON.parse(text) as unknown;
      return parsed !== null && typeof parsed === 'object' && ('detail' in parsed || 'error' in parsed);
    } catch {
      return false;
    }
  }).length;
}

if (isMainModule(import.meta.url)) void runEnvironment(workplaceEnvironment);
