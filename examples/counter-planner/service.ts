/**
 * The counter planner as an agent service (a deterministic planner, not a model):
 *
 *   node dist/examples/counter-planner/service.js --port 9000 [--host 0.0.0.0] [--incremental]
 */
import { runExampleService } from '../service-main.js';
import { startCounterPlannerService } from './index.js';

await runExampleService(startCounterPlannerService, ['incremental']);
