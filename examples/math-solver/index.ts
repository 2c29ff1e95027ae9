/** The math solver as an agent service: what `gym quickstart --env math` and `service.js` start. */
import { serveExample, type ExampleServiceOptions, type StartedService } from '../example-service.js';
import { createMathSolver } from './solver.js';

export { createMathSolver, planMathTask } from './solver.js';

export const MATH_SOLVER_BRAIN = 'math-solver (deterministic, no model)';

export async function startMathSolver(options: ExampleServiceOptions = {}): Promise<StartedService> {
  return serveExample(createMathSolver(), MATH_SOLVER_BRAIN, options);
}
