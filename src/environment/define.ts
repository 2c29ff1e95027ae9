import { z } from 'zod';
import type { CreateParams, ResponseObject } from '../contract/index.js';
import type { TaskMetricsHook } from '../metrics/metrics.js';
import { RESERVED_ROUTES } from '../server/resources-server.js';
import type { DisposeReason, SessionOptions } from './sessions.js';

/**
 * What an environment author writes: the spec handed to `defineEnvironment`, and the checks that run once, when
 * it is defined (tool names, tool schemas), so a mistake fails at start-up with a sentence instead of at the
 * first rollout. The kit's server (`server.ts`) turns the checked definition into the resources-server contract.
 */

/** What a tool's `run` receives besides its arguments. */
export interface ToolContext<State> {
  /** This session's state: what `createState` built at seed (or `initialState` for a session never seeded). */
  state: State;
  /** The session id behind the rollout's cookie. */
  sessionId: string;
}

export interface ToolSpec<Args, State> {
  /** Shown to agents in the tool's JSON schema: say what the tool does and what it returns. */
  description: string;
  /** The arguments: an object schema. A body that does not match answers 422 naming the field. */
  input: z.ZodType<Args>;
  /** Returns the tool's JSON result (sync or async). Throw `ToolError` for a failure the agent should read. */
  run(args: Args, ctx: ToolContext<State>): unknown;
}

/** Declares one tool; inside `tools: (tool) => ({...})` it already knows the environment's state type. */
export type ToolFactory<State> = <Args>(spec: ToolSpec<Args, State>) => ToolSpec<Args, State>;

/** What `verify` receives. */
export interface VerifyInput<VerifyRow, State> {
  /** The row fields `verifyRow` declares, validated (the answer key, the expected state, …). */
  row: VerifyRow;
  /** The finished trajectory: the service's final Responses object, every tool call and result in `output`. */
  response: ResponseObject;
  /** The row's `responses_create_params` (the prompt and the tools the agent was offered). */
  params: CreateParams;
  /** The session's state, or undefined when the session was never seeded, is already verified, or expired. */
  state: State | undefined;
  /** The whole /verify body as received. */
  body: Record<string, unknown>;
  sessionId: string;
}

/**
 * What `verify` returns: `reward`, optionally `reward_components` (a multi-reward environment's named rewards;
 * each also becomes a top-level `reward_<name>` column), and any extra fields — numbers and booleans become
 * profile columns (`mean/<field>`, …), other JSON values are stored in the rollout row.
 */
export interface VerifyOutcome {
  reward: number;
  reward_components?: Record<string, number>;
  [extra: string]: unknown;
}

export interface EnvironmentSpec<SeedRow, State, VerifyRow> {
  /** The environment's name: the default instance name, and the source of the default class name. */
  name: string;
  /** The session cookie is named `<className>___<instance name>`. Default: `name` in PascalCase + `ResourcesServer`. */
  className?: string;
  /** The row fields the seed needs (the whole row is sent; unknown keys are ignored). Default: none. */
  seedRow?: z.ZodType<SeedRow>;
  /** Builds the session's state from the seeded row. Omit it for a stateless environment. */
  createState?(row: SeedRow, ctx: { sessionId: string }): State | Promise<State>;
  /** The state a tool call gets on a session that was never seeded. Omit it to answer such calls 409. */
  initialState?: () => State;
  /** A second /seed_session on a session with state: `replace` it (default, the old one is disposed) or `keep` it. */
  reseed?: 'replace' | 'keep';
  /** The tools, one POST route each: `(tool) => ({ name: tool({ description, input, run }) })`. */
  tools?(tool: ToolFactory<State>): Record<string, ToolSpec<unknown, State>>;
  /** The row fields the verifier needs, validated at /verify (a missing one answers 422 naming it). */
  verifyRow?: z.ZodType<VerifyRow>;
  /** Scores the finished trajectory. The session's state is dropped (and disposed) once it returns. */
  verify(input: VerifyInput<VerifyRow, State>): VerifyOutcome | Promise<VerifyOutcome>;
  /**
   * Row fields left out of the /verify response, hence out of the rollout row (decision C4): answer keys, bulky
   * inputs. By default the response echoes every field of the request body, plus `reward` and the extras.
   */
  dropFields?: readonly string[];
  /**
   * Releases what a state holds (a sandbox, a file) when its session is verified, expires, is re-seeded or the
   * server stops. Runs after the reply; a throw or rejection is logged, never sent to a client.
   */
  dispose?(state: State, reason: DisposeReason): void | Promise<void>;
  /**
   * Extra aggregate metrics over all rollouts grouped by task; the returned entries are merged into (and may
   * replace) the defaults in `agent_metrics`; `per_task_metrics: [{_ng_task_index, …}]` extends the task groups.
   */
  aggregateMetrics?: TaskMetricsHook;
  /** Idle expiry and the live-session cap. */
  sessions?: SessionOptions;
  /** Whether /verify may be called again on a stored row without its session. Default `unsupported` when stateful. */
  reverifyMode?: 'stateless' | 'unsupported' | 'unknown';
}

/** A tool as agents see it in `responses_create_params.tools`. */
export interface FunctionToolSchema {
  type: 'function';
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  strict: boolean;
}

/**
 * A checked environment definition: serve it with `createEnvironmentServer`, `serveEnvironment` or `runEnvironment`.
 * The bare `Environment` (all `unknown`) accepts every typed one because the spec's callbacks that take `SeedRow` or
 * `State` (`createState`, `tools`, `dispose`, `verify`) are declared as methods, whose parameters TypeScript compares
 * both ways; keep them methods, or `Environment<Row, State>` stops being an `Environment`.
 */
export interface Environment<SeedRow = unknown, State = unknown, VerifyRow = unknown> {
  readonly name: string;
  readonly className: string;
  readonly spec: EnvironmentSpec<SeedRow, State, VerifyRow>;
  readonly tools: ReadonlyMap<string, ToolSpec<unknown, State>>;
  /** Every tool's JSON schema, in declaration order, ready for a row's `responses_create_params.tools`. */
  readonly toolSchemas: readonly FunctionToolSchema[];
}

/** Throw from a tool's `run` for a failure the agent should read (answered 400 with `{"detail": message}`). */
export class ToolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ToolError';
  }
}

/** The names a tool may have (decision D5: what the remote agent will route to an environment). */
const TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/;

const UNDROPPABLE_FIELDS = new Set(['responses_create_params', 'response', 'reward']);

export function defineEnvironment<
  SeedRow = Record<string, unknown>,
  State = undefined,
  VerifyRow = Record<string, unknown>,
>(spec: EnvironmentSpec<SeedRow, State, VerifyRow>): Environment<SeedRow, State, VerifyRow> {
  if (typeof spec.name !== 'string' || !TOOL_NAME.test(spec.name)) {
    throw new Error(
      `environment name must be a plain identifier ([A-Za-z0-9_.-], at most 128), got ${JSON.stringify(spec.name)}`,
    );
  }
  if (typeof spec.verify !== 'function') throw new Error(`environment '${spec.name}': verify(input) is required`);
  if (spec.initialState && !spec.createState) {
    throw new Error(
      `environment '${spec.name}': initialState needs createState (a stateless environment has no state)`,
    );
  }
  for (const field of spec.dropFields ?? []) {
    if (UNDROPPABLE_FIELDS.has(field)) {
      throw new Error(
        `environment '${spec.name}': dropFields cannot drop '${field}' (every verify response carries it)`,
      );
    }
  }
  const declared = spec.tools ? spec.tools((definition) => definition) : {};
  const tools = new Map<string, ToolSpec<unknown, State>>();
  const toolSchemas: FunctionToolSchema[] = [];
  for (const [name, definition] of Object.entries(declared)) {
    const where = `environment '${spec.name}', tool '${name}'`;
    if (!TOOL_NAME.test(name))
      throw new Error(`${where}: a tool name must be a plain identifier ([A-Za-z0-9_.-], at most 128)`);
    if (RESERVED_ROUTES.has(name)) {
      throw new Error(
        `${where}: the name is reserved by the resources server (${[...RESERVED_ROUTES].join(', ')}); rename the tool`,
      );
    }
    if (typeof definition?.run !== 'function') throw new Error(`${where}: run(args, ctx) is required`);
    if (typeof definition.description !== 'string') throw new Error(`${where}: a description (string) is required`);
    tools.set(name, definition);
    toolSchemas.push({
      type: 'function',
      name,
      description: definition.description,
      ...parametersOf(definition.input, where),
    });
  }
  return {
    name: spec.name,
    className: spec.className ?? `${pascalCase(spec.name)}ResourcesServer`,
    spec,
    tools,
    toolSchemas,
  };
}

/**
 * The tool's argument schema as JSON Schema (the input side: what an agent sends), and whether it qualifies for
 * OpenAI's strict mode (every property required, no additional properties).
 */
function parametersOf(input: z.ZodType, where: string): { parameters: Record<string, unknown>; strict: boolean } {
  let schema: Record<string, unknown>;
  try {
    schema = z.toJSONSchema(input, { io: 'input' });
  } catch (err) {
    throw new Error(`${where}: its input schema cannot be expressed as JSON Schema (${(err as Error).message})`, {
      cause: err,
    });
  }
  if (schema.type !== 'object') throw new Error(`${where}: input must be an object schema, e.g. z.object({ … })`);
  delete schema.$schema;
  // z.object() strips unknown keys, so in input mode it allows them; agents should still send only the declared ones.
  schema.additionalProperties ??= false;
  dropSafeIntegerBounds(schema);
  const properties = (schema.properties ?? {}) as Record<string, unknown>;
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  const strict = schema.additionalProperties === false && Object.keys(properties).every((key) => required.has(key));
  return { parameters: schema, strict };
}

/** `z.int()` renders as ±2^53−1 bounds: noise in a prompt, so they are dropped (the route still enforces them). */
function dropSafeIntegerBounds(node: unknown, depth = 0): void {
  if (depth > 64 || node === null || typeof node !== 'object') return;
  if (Array.isArray(node)) {
    for (const item of node) dropSafeIntegerBounds(item, depth + 1);
    return;
  }
  const record = node as Record<string, unknown>;
  if (record.minimum === Number.MIN_SAFE_INTEGER) delete record.minimum;
  if (record.maximum === Number.MAX_SAFE_INTEGER) delete record.maximum;
  for (const value of Object.values(record)) dropSafeIntegerBounds(value, depth + 1);
}

function pascalCase(name: string): string {
  return name
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((part) => part[0]!.toUpperCase() + part.slice(1))
    .join('');
}
