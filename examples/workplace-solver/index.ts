/** The deterministic workplace solver as an agent service: what `gym quickstart --env workplace` and `service.js` run. */
import { serveExample, type ExampleServiceOptions, type StartedService } from '../example-service.js';
import { createWorkplaceSolver } from './solver.js';

export { createWorkplaceSolver, parseWorkplaceRequest } from './solver.js';

export const WORKPLACE_SOLVER_NAME = 'workplace-solver (deterministic, no model)';

export async function startWorkplaceSolverService(options: ExampleServiceOptions = {}): Promise<StartedService> {
  return serveExample(createWorkplaceSolver(), WORKPLACE_SOLVER_NAME, options);
}
