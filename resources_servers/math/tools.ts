/**
 * The math environment's one tool as dataset rows declare it in `responses_create_params.tools` (shared by the
 * generator, the converter, the example data and tests). Rows without it are pure reasoning tasks.
 */
export const CALCULATOR_TOOL = {
  type: 'function',
  name: 'calculator',
  description:
    'Evaluate an arithmetic expression and return its value. Supports + - * / ^, parentheses, sqrt, nthRoot, abs, ' +
    'exp, log, sin/cos/tan, pi and e. Numbers only: no variables.',
  parameters: {
    type: 'object',
    properties: { expression: { type: 'string', description: 'For example (17 + 5) * 3 or sqrt(2) / 2' } },
    required: ['expression'],
    additionalProperties: false,
  },
  strict: true,
};
