import { ConfigError } from '../../src/errors.js';
import { DEFAULT_EXTRACTION, EXTRACTION_STRATEGIES, type ExtractionStrategy } from './extract.js';

/**
 * The math environment's own config keys (in its block of the YAML, next to `entrypoint`):
 *
 * - `calculator` (bool, default false): serve the `calculator` tool;
 * - `answer_extraction` (list, default `[boxed, hashes, answer_line, the_answer_is, last_number]`): the strategies
 *   tried in order on the final message; the first that finds an answer wins (`[boxed]` = strict boxed-only);
 * - `relative_tolerance` (default 1e-6), `absolute_tolerance` (default 1e-9): numeric equality.
 *
 * A wrong value is a config error naming the key, the value and what is allowed; the server does not start.
 */

export interface MathConfig {
  calculator: boolean;
  answerExtraction: ExtractionStrategy[];
  relativeTolerance: number;
  absoluteTolerance: number;
}

export const DEFAULT_MATH_CONFIG: MathConfig = {
  calculator: false,
  answerExtraction: [...DEFAULT_EXTRACTION],
  relativeTolerance: 1e-6,
  absoluteTolerance: 1e-9,
};

/** Read the keys above from a server's config block; `where` names the block in errors (`math.resources_servers.math`). */
export function readMathConfig(block: Record<string, unknown>, where: string): MathConfig {
  const config = { ...DEFAULT_MATH_CONFIG, answerExtraction: [...DEFAULT_MATH_CONFIG.answerExtraction] };
  if (block.calculator !== undefined) {
    if (typeof block.calculator !== 'boolean') throw invalid(where, 'calculator', block.calculator, 'true or false');
    config.calculator = block.calculator;
  }
  if (block.answer_extraction !== undefined) {
    const list = block.answer_extraction;
    const allowed = EXTRACTION_STRATEGIES.join(', ');
    if (!Array.isArray(list) || list.length === 0)
      throw invalid(where, 'answer_extraction', list, `a non-empty list of: ${allowed}`);
    const seen = new Set<string>();
    for (const entry of list) {
      if (typeof entry !== 'string' || !(EXTRACTION_STRATEGIES as readonly string[]).includes(entry)) {
        throw invalid(where, 'answer_extraction', entry, `one of ${allowed}`);
      }
      if (seen.has(entry)) throw invalid(where, 'answer_extraction', entry, 'each strategy once');
      seen.add(entry);
    }
    config.answerExtraction = list as ExtractionStrategy[];
  }
  for (const [key, field] of [
    ['relative_tolerance', 'relativeTolerance'],
    ['absolute_tolerance', 'absoluteTolerance'],
  ] as const) {
    const value = block[key];
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value >= 1) {
      throw invalid(where, key, value, 'a number ≥ 0 and < 1 (for example 1e-6)');
    }
    config[field] = value;
  }
  return config;
}

function invalid(where: string, key: string, value: unknown, rule: string): ConfigError {
  return new ConfigError(
    `${where}.${key} is ${JSON.stringify(value) ?? String(value)}, but it must be ${rule}. Fix it in the environment's config ` +
      `(resources_servers/math/configs/math.yaml) or override it with ++${where}.${key}=…`,
    'GYM_MATH_CONFIG',
  );
}
