import { serve } from '../../src/service/index.js';
import { createWorkplaceSolver } from './solver.js';

export { createWorkplaceSolver, parseWorkplaceRequest } from './solver.js';

export interface WorkplaceSolverOptions {
  /** Default 0 (a free port). */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  log?: (line: string) => void;
}

export interface StartedService {
  url: string;
  /** What answers, as reported in every response's `model`. */
  brainName: string;
  close(): Promise<void>;
}

export const WORKPLACE_SOLVER_NAME = 'workplace-solver (deterministic, no model)';

/** The deterministic workplace solver as an agent service (what `gym quickstart --env workplace` runs). */
export async function startWorkplaceSolverService(options: WorkplaceSolverOptions = {}): Promise<StartedService> {
  const service = await serve(createWorkplaceSolver(), {
    port: options.port ?? 0,
    host: options.host ?? '127.0.0.1',
    brainName: WORKPLACE_SOLVER_NAME,
    ...(options.log ? { log: options.log } : {}),
  });
  return { url: service.url, brainName: WORKPLACE_SOLVER_NAME, close: service.close };
}
