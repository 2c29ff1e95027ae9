import { createMathEnvironment } from './app.js';
import { DEFAULT_MATH_CONFIG } from './config.js';

/**
 * The `calculator` tool as dataset rows declare it in `responses_create_params.tools`: the JSON schema the
 * environment kit derives from the tool's own declaration in `app.ts`, so rows and server never disagree. Shared
 * by the generator, the converter, the example data and tests. Rows without it are pure reasoning tasks.
 */
export const CALCULATOR_TOOL = createMathEnvironment({ ...DEFAULT_MATH_CONFIG, calculator: true }).toolSchemas[0]!;
