/** The shell environment's example service: what `gym quickstart --env shell` and `service.js` start. */
import { serveExample, type ExampleServiceOptions, type StartedService } from '../example-service.js';
import { createShellSolver } from './solver.js';

export { createShellSolver } from './solver.js';
export { SCRIPTS, type TaskScript } from './scripts.js';

export const SHELL_SOLVER_NAME = 'shell-solver (scripted per task, no model)';

export async function startShellSolver(options: ExampleServiceOptions = {}): Promise<StartedService> {
  return serveExample(createShellSolver(), SHELL_SOLVER_NAME, options);
}
