/**
 * The shell solver as an agent service (scripted solutions of the example tasks, not a model):
 *
 *   node dist/examples/shell-solver/service.js --port 9000 [--host 0.0.0.0]
 */
import { runExampleService } from '../service-main.js';
import { startShellSolver } from './index.js';

await runExampleService(startShellSolver);
