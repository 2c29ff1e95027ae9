/**
 * `gym agent check URL --rows FILE`: an environment's own rows as probes. Each row's `responses_create_params`
 * (its prompt and its tools) is sent exactly as the remote agent sends a rollout's first call, and the answer is
 * judged against the row: a valid Responses object that either asks for tools the row declares, with arguments
 * that match each tool's JSON schema, or answers. The rows' tools belong to their environment, which the check
 * does not start, so a probe stops after the first answer (a whole rollout is `gym eval run`'s job).
 */
import { z } from 'zod';
import { validateCreateParams } from '../contract/index.js';
import { isBlank, malformedLine, parseLine, readRawLines } from '../runfiles/jsonl.js';
import { ConfigError } from '../errors.js';

export interface RowProbe {
  /** `file:line`, how the report names the row. */
  label: string;
  /** The row's `responses_create_params`, sent as the request body. */
  params: Record<string, unknown>;
  /** Names of the function tools the row declares. */
  declared: string[];
  /** Argument validators by tool name (a tool whose schema zod cannot read gets none). */
  validators: Map<string, z.ZodType>;
}

export const DEFAULT_MAX_ROWS = 10;

/** Read up to `limit` rows; a malformed line or an invalid `responses_create_params` stops with `file:line`. */
export async function loadRowProbes(file: string, limit = DEFAULT_MAX_ROWS): Promise<RowProbe[]> {
  const probes: RowProbe[] = [];
  const validatorCache = new Map<string, z.ZodType | null>();
  try {
    for await (const line of readRawLines(file)) {
      if (probes.length >= limit) break;
      if (isBlank(line.bytes)) {
        if (line.terminated)
          throw malformedLine(file, line.lineNo, 'blank line (a JSONL file may not contain empty lines)');
        continue;
      }
      const parsed = parseLine(line.bytes);
      if (!parsed.ok) throw malformedLine(file, line.lineNo, parsed.reason);
      const label = `${file}:${line.lineNo}`;
      if (parsed.value === null || typeof parsed.value !== 'object' || Array.isArray(parsed.value)) {
        throw new ConfigError(
          `${label}: expected a JSON object (one dataset row); got ${Array.isArray(parsed.value) ? 'a list' : typeof parsed.value}.`,
        );
      }
      const params = (parsed.value as Record<string, unknown>).responses_create_params;
      const checked = validateCreateParams(params);
      if (!checked.ok) {
        const what =
          params === undefined
            ? 'has no responses_create_params (the request a rollout sends)'
            : `has an invalid responses_create_params: ${checked.message}`;
        throw new ConfigError(`${label}: the row ${what}. Fix that row or pass another --rows file.`);
      }
      probes.push({
        label,
        params: params as Record<string, unknown>,
        ...toolsOf(params as Record<string, unknown>, validatorCache),
      });
    }
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'EISDIR' || code === 'EACCES') {
      const why =
        code === 'ENOENT'
          ? 'no such file'
          : code === 'EISDIR'
            ? 'a directory, not a file'
            : 'not readable (permission denied)';
      throw new ConfigError(
        `--rows ${file}: ${why}. Give the path of a dataset JSONL, e.g. resources_servers/<name>/data/example.jsonl.`,
      );
    }
    throw err;
  }
  if (probes.length === 0) throw new ConfigError(`--rows ${file}: the file holds no rows.`);
  return probes;
}

function toolsOf(
  params: Record<string, unknown>,
  cache: Map<string, z.ZodType | null>,
): Pick<RowProbe, 'declared' | 'validators'> {
  const declared: string[] = [];
  const validators = new Map<string, z.ZodType>();
  for (const tool of Array.isArray(params.tools) ? params.tools : []) {
    if (tool === null || typeof tool !== 'object' || (tool as { type?: unknown }).type !== 'function') continue;
    const { name, parameters } = tool as { name?: unknown; parameters?: unknown };
    if (typeof name !== 'string') continue;
    declared.push(name);
    const key = JSON.stringify(parameters ?? null);
    if (!cache.has(key)) cache.set(key, validatorFor(parameters));
    const validator = cache.get(key);
    if (validator) validators.set(name, validator);
  }
  return { declared, validators };
}

function validatorFor(parameters: unknown): z.ZodType | null {
  if (parameters === null || typeof parameters !== 'object') return null;
  try {
    return z.fromJSONSchema(parameters as Parameters<typeof z.fromJSONSchema>[0]);
  } catch {
    return null; // a schema zod cannot read is not checked (the environment still validates at run time)
  }
}

/** Why an ask's arguments do not match the tool's parameters, or undefined when they do (or cannot be checked). */
export function argumentsProblem(probe: RowProbe, name: string, argumentsText: unknown): string | undefined {
  const validator = probe.validators.get(name);
  if (!validator || typeof argumentsText !== 'string') return undefined;
  let args: unknown;
  try {
    args = JSON.parse(argumentsText);
  } catch {
    return undefined; // not JSON: the `arguments` check reports it
  }
  const result = validator.safeParse(args);
  if (result.success) return undefined;
  return result.error.issues
    .slice(0, 3)
    .map((issue) => `${issue.path.length ? issue.path.join('.') : 'arguments'}: ${issue.message}`)
    .join('; ');
}
