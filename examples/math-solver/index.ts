import { serve, type RunningService, type ServeOptions } from '../../src/service/index.js';
import { createMathSolver } from './solver.js';

export { createMathSolver, planMathTask } from './solver.js';

export const MATH_SOLVER_BRAIN = 'math-solver (deterministic, no model)';

/** Where to listen (default 127.0.0.1 on a free port) and where request failures are logged. */
export type MathSolverOptions = Pick<ServeOptions, 'port' | 'host' | 'log'>;

export type StartedMathSolver = RunningService & { brainName: string };

/** The math solver as an agent service: what `gym quickstart --env math` starts. */
export async function startMathSolver(options: MathSolverOptions = {}): Promise<StartedMathSolver> {
  const service = await serve(createMathSolver(), {
    port: options.port ?? 0,
    host: options.host ?? '127.0.0.1',
    brainName: MATH_SOLVER_BRAIN,
    ...(options.log ? { log: options.log } : {}),
  });
  return { ...service, brainName: MATH_SOLVER_BRAIN };
}
