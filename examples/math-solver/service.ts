/**
 * The math solver as an agent service (deterministic, not a model):
 *
 *   node dist/examples/math-solver/service.js --port 9000 [--host 0.0.0.0]
 */
import { runExampleService } from '../service-main.js';
import { startMathSolver } from './index.js';

await runExampleService(startMathSolver);
