import { z } from 'zod';
import { HttpError } from '../../src/http/server.js';
import { createResourcesServer, tool } from '../../src/server/resources-server.js';
import { isMainModule, serveInstance } from '../../src/server/serve.js';
import { cloneOffice, OfficeSchema, type Office } from './office.js';
import { runParsedTool, ToolArgs, type OfficeSession, type ToolName } from './tools.js';
import { ExpectedChangesSchema, verifyOffice } from './verify.js';

/**
 * The workplace environment: multi-step, stateful tool use with state-based verification. `/seed_session` builds
 * the rollout's office (mailbox, calendar, contacts, tasks) from the row's `office`; eleven tools read and change
 * it; `/verify` compares the final office with the seeded one and the row's `expected_changes` (see verify.ts) and
 * drops the session. The verify response — which becomes the rollout row (decision C4) — keeps the request, the
 * response, the reward and extras, and the row's `task_id`, `difficulty` and `subtasks`; it leaves out the bulky
 * `office` and the answer key `expected_changes`, which stay in the dataset.
 */

const SeedRow = z.looseObject({ office: OfficeSchema });
const VerifyRow = z.looseObject({
  expected_changes: ExpectedChangesSchema,
  task_id: z.string().max(200).optional(),
  difficulty: z.int().min(0).max(100).optional(),
  subtasks: z.array(z.string().max(100)).max(20).optional(),
});

/** Sessions nobody verifies (a failed rollout) are dropped after this long without a call. */
const IDLE_SESSION_MS = 60 * 60 * 1000;

interface Seeded extends OfficeSession {
  before: Office;
  lastUsed: number;
}

function unprocessable(loc: (string | number)[], msg: string): HttpError {
  return new HttpError(422, [{ type: 'value_error', loc: ['body', ...loc], msg }]);
}

export function createWorkplaceServer(instanceName: string, options: { idleSessionMs?: number; now?: () => number } = {}) {
  const sessions = new Map<string, Seeded>();
  const idleMs = options.idleSessionMs ?? IDLE_SESSION_MS;
  const now = options.now ?? Date.now;

  const sweep = (): void => {
    const cutoff = now() - idleMs;
    for (const [id, session] of sessions) if (session.lastUsed < cutoff) sessions.delete(id);
  };

  const toolFor = (name: ToolName) =>
    tool(ToolArgs[name] as z.ZodType<unknown>, (args, { sessionId }) => {
      const session = sessions.get(sessionId);
      if (!session) return { error: 'this session has no office: the rollout was not seeded (or has already been verified)' };
      session.lastUsed = now();
      return runParsedTool(name, args, session);
    });

  return createResourcesServer({
    className: 'WorkplaceResourcesServer',
    instanceName,
    reverifyMode: 'unsupported',
    seed: tool(SeedRow, ({ office }, { sessionId }) => {
      sweep();
      // As the counter does: a session seeded twice keeps its first office (and whatever the tools did to it).
      if (!sessions.has(sessionId)) sessions.set(sessionId, { before: cloneOffice(office), office: cloneOffice(office), nextId: 0, lastUsed: now() });
      return {};
    }),
    tools: Object.fromEntries((Object.keys(ToolArgs) as ToolName[]).map((name) => [name, toolFor(name)])),
    verify: (body, { sessionId }) => {
      const parsed = VerifyRow.safeParse(body);
      if (!parsed.success) {
        const issue = parsed.error.issues[0]!;
        const where = issue.path.map(String).join('.');
        throw unprocessable(
          issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p)),
          `${where}: ${issue.message} (each row needs expected_changes: a list of {kind: event_updated|event_deleted|event_created|email_sent|task_created|task_completed, …}; see resources_servers/workplace/README.md)`,
        );
      }
      const session = sessions.get(sessionId);
      if (!session) {
        throw new HttpError(409, [
          { type: 'value_error', loc: ['body'], msg: 'this session has no office to verify: /seed_session was not called with the row, or the session was already verified' },
        ]);
      }
      sessions.delete(sessionId);
      const verdict = verifyOffice(session.before, session.office, parsed.data.expected_changes);
      const { task_id, difficulty, subtasks } = parsed.data;
      return {
        ...verdict,
        ...(task_id !== undefined ? { task_id } : {}),
        ...(difficulty !== undefined ? { difficulty } : {}),
        ...(subtasks !== undefined ? { subtasks } : {}),
        tool_calls: countToolCalls(body.response.output),
        tool_errors: countToolErrors(body.response.output),
      };
    },
  });
}

type OutputItem = { type?: unknown; output?: unknown };

function countToolCalls(output: readonly unknown[]): number {
  return output.filter((item) => (item as OutputItem).type === 'function_call').length;
}

/** Tool results that were an error: `{ "error": … }` from a tool, or a 422/404 detail for bad arguments. */
function countToolErrors(output: readonly unknown[]): number {
  return output.filter((item) => {
    const { type, output: text } = item as OutputItem;
    if (type !== 'function_call_output' || typeof text !== 'string' || text.length > 100_000) return false;
    try {
      const parsed = JSON.parse(text) as unknown;
      return parsed !== null && typeof parsed === 'object' && ('error' in parsed || 'detail' in parsed);
    } catch {
      return false;
    }
  }).length;
}

if (isMainModule(import.meta.url)) {
  void serveInstance(({ instance }) => createWorkplaceServer(instance.name));
}
