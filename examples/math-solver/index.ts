import { serve } from '../../src/service/index.js';
import { createMathSolver } from './solver.js';

export { createMathSolver, planMathTask } from './solver.js';

export const MATH_SOLVER_BRAIN = 'math-solver (deterministic, no model)';

export interface MathSolverOptions {
  /** Default 0 (a free port). */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  log?: (line: string) => void;
}

export interface StartedMathSolver {
  url: string;
  brainName: string;
  close(): Promise<void>;
}

/** The math solver as an agent service: what `gym quickstart --env math` starts. */
export async function startMathSolver(options: MathSolverOptions = {}): Promise<StartedMathSolver> {
  const service = await serve(createMathSolver(), {
    port: options.port ?? 0,
    host: options.host ?? '127.0.0.1',
    brainName: MATH_SOLVER_BRAIN,
    ...(options.log ? { log: options.log } : {}),
  });
  return { url: service.url, brainName: MATH_SOLVER_BRAIN, close: service.close };
}
