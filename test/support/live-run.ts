/**
 * The counter environment's `gym eval run`, for tests (e2e, status file, viewer): its arguments, a solver for its
 * tasks, and a real run that can be watched while it runs: the counter environment
 * and the remote agent from `counter_remote.yaml`, started by the command, drive a scripted service that solves
 * every counter task but holds the first step of task 0 until the test calls `release()`. Nothing is faked; only
 * the service's timing is in the test's hands.
 */
import path from 'node:path';
import { findFreePort } from '../../src/config/index.js';
import { normalizeInput } from '../../src/service/index.js';
import {
  finalAnswer,
  functionCall,
  startScriptedService,
  toolAsk,
  toolOutputsIn,
  type ScriptedService,
  type ServiceCall,
} from '../../src/testing/index.js';
import { spawnGym, tempDir, type RunningGym } from './cli.js';
import { gate } from './wait.js';

export interface GatedRun {
  gym: RunningGym;
  dir: string;
  rolloutsPath: string;
  statusPath: string;
  service: ScriptedService;
  /** Lets task 0's held step answer. */
  release(): void;
  /** Resolves once task 0's held step has reached the service. */
  held: Promise<void>;
}

/** The `gym eval run` of the counter environment and remote agent from counter_remote.yaml against a service. */
export function counterEvalArgs(serviceUrl: string, headPort: number, output: string): string[] {
  return [
    'eval',
    'run',
    '+config_paths=[counter_remote.yaml]',
    `++remote_agent.responses_api_agents.remote_agent.agent_base_url=${serviceUrl}`,
    `++head_server.port=${headPort}`,
    '-a',
    'remote_agent',
    '-i',
    'resources_servers/example_session_state_mgmt/data/example.jsonl',
    '-o',
    output,
  ];
}

/** The numbers a counter task asks to add ("add 1 then add 2 …"). */
export function addendsOf(call: ServiceCall): number[] {
  return [...String(normalizeInput(call.body.input)[0]!.content).matchAll(/add (-?\d+)/g)].map((m) => Number(m[1]));
}

/** The counter tasks' solver: increment by each addend, read the count, answer it. */
export function solveCounterTask(call: ServiceCall): unknown {
  const addends = addendsOf(call);
  const outputs = toolOutputsIn(call.body.input).map((o) => JSON.parse(o.output) as { count?: number });
  const turn = outputs.length;
  if (turn < addends.length) return toolAsk(functionCall('increment_counter', { count: addends[turn] }, `c_${turn}`));
  const count = outputs.reverse().find((o) => typeof o.count === 'number')?.count;
  if (count === undefined) return toolAsk(functionCall('get_counter_value', {}, `c_${turn}`));
  return finalAnswer(String(count));
}

export async function startGatedRun(extraArgs: readonly string[] = []): Promise<GatedRun> {
  const release = gate();
  const reached = gate();
  const service = await startScriptedService(async (call) => {
    // Task 0 of example.jsonl is "add 1 then add 2 …"; its first step waits for the gate.
    if (addendsOf(call)[0] === 1 && toolOutputsIn(call.body.input).length === 0) {
      reached.open();
      await release.opened;
    }
    return solveCounterTask(call);
  });
  const dir = tempDir('tsgym-live-');
  const rolloutsPath = path.join(dir, 'out', 'rollouts.jsonl');
  const gym = spawnGym(
    [...counterEvalArgs(service.url, await findFreePort(), 'out/rollouts.jsonl'), '--concurrency', '2', ...extraArgs],
    { cwd: dir },
  );
  return {
    gym,
    dir,
    rolloutsPath,
    statusPath: path.join(dir, 'out', 'rollouts_status.json'),
    service,
    release: () => release.open(),
    held: reached.opened,
  };
}
