import { defineEnvironment, isMainModule, runEnvironment, z, type Environment } from '../../src/environment/index.js';
import { calculate, MAX_CALCULATOR_CHARS } from './calculator.js';
import { DEFAULT_MATH_CONFIG, readMathConfig, type MathConfig } from './config.js';
import { MAX_ANSWER_CHARS } from './equivalence.js';
import { EXTRACTION_STRATEGIES } from './extract.js';
import { verifyMath } from './verify.js';

/**
 * The math environment: single-answer reasoning with a real verifier. A task is a question (the row's user
 * message) and an `expected_answer`; the agent answers in its final message, and `/verify` extracts the answer
 * (`extract.ts`: `\boxed{…}`, `#### …`, `Answer: …`, "the answer is …", the last number — order configurable) and
 * compares it with the expected one (`equivalence.ts`: text, numbers, fractions, percentages, LaTeX and symbolic
 * expressions through mathjs). Reward 1.0 for an equivalent answer, else 0.0; the row says what was extracted,
 * how, and why it matched or not. Stateless: no session state, so a stored row can be verified again.
 * The `calculator` tool is served only when the config sets `calculator: true`.
 */

const MATCH_REASONS = ['string_equal', 'numeric_equal', 'symbolic_equal', 'mismatch', 'no_answer_found'] as const;

const ExpectedAnswer = z.union([z.string().min(1).max(MAX_ANSWER_CHARS), z.number()], {
  error: `expected_answer: expected the reference answer as a non-empty string of at most ${MAX_ANSWER_CHARS} characters (or a number)`,
});

export function createMathEnvironment(config: MathConfig = DEFAULT_MATH_CONFIG): Environment {
  return defineEnvironment({
    name: 'math',
    tools: config.calculator
      ? (tool) => ({
          calculator: tool({
            description:
              'Evaluate an arithmetic expression and return its value as {"result": "…"} (or {"error": "…"}). ' +
              'Supports + - * / ^, parentheses, sqrt, nthRoot, abs, exp, log, sin/cos/tan, pi and e. Numbers only: no variables.',
            input: z.object({
              expression: z
                .string()
                .describe(
                  `The expression, at most ${MAX_CALCULATOR_CHARS} characters, e.g. (17 + 5) * 3 or sqrt(2) / 2`,
                ),
            }),
            run: ({ expression }) => calculate(expression),
          }),
        })
      : undefined,
    verifyRow: z.looseObject({ expected_answer: ExpectedAnswer }),
    verify: ({ row, response }) => verifyMath(response.output, String(row.expected_answer), config),
    aggregateMetrics: shareOfOutcomes,
    reverifyMode: 'stateless',
  });
}

/** The share of rollouts per `match_reason` and per `extraction_strategy`: how answers were (not) found and matched. */
function shareOfOutcomes(tasks: Array<Array<Record<string, unknown>>>): Record<string, unknown> {
  const rollouts = tasks.flat();
  if (rollouts.length === 0) return {};
  const share = (field: string, value: string): number =>
    rollouts.filter((row) => row[field] === value).length / rollouts.length;
  const metrics: Record<string, number> = {};
  for (const reason of MATCH_REASONS) metrics[`match_reason/${reason}`] = share('match_reason', reason);
  for (const strategy of EXTRACTION_STRATEGIES)
    metrics[`extraction_strategy/${strategy}`] = share('extraction_strategy', strategy);
  return metrics;
}

if (isMainModule(import.meta.url)) {
  void runEnvironment((ctx) =>
    createMathEnvironment(
      readMathConfig(ctx.instance.config, `${ctx.instance.name}.resources_servers.${ctx.instance.impl}`),
    ),
  );
}
