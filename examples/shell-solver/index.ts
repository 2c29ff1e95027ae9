import { serve } from '../../src/service/index.js';
import { createShellSolver } from './solver.js';

export { createShellSolver } from './solver.js';
export { SCRIPTS, type TaskScript } from './scripts.js';

export interface ShellSolverService {
  url: string;
  brainName: string;
  close(): Promise<void>;
}

export const SHELL_SOLVER_NAME = 'shell-solver (scripted per task, no model)';

/** The shell environment's example service: `gym quickstart --env shell` runs it; so can you (`service.js`). */
export async function startShellSolver(options: { port?: number; host?: string; log?: (line: string) => void } = {}): Promise<ShellSolverService> {
  const service = await serve(createShellSolver(), {
    port: options.port ?? 0,
    host: options.host ?? '127.0.0.1',
    brainName: SHELL_SOLVER_NAME,
    ...(options.log ? { log: options.log } : {}),
  });
  return { url: service.url, brainName: SHELL_SOLVER_NAME, close: service.close };
}
