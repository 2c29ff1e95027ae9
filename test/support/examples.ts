/**
 * Shared by the examples' tests: start an example the way a user does (one command, in a child process),
 * hold its output, run the conformance checker, and run real rollouts through tsgym's remote agent.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { runAgentCheck, type AgentCheckReport } from '../../src/check/agent-check.js';
import { request } from '../../src/http/client.js';
import type { App } from '../../src/http/server.js';

/** The repository root (this file runs from dist/test/support/). */
export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
/** Compiled example files live here. */
export const DIST_EXAMPLES = fileURLToPath(new URL('../../examples/', import.meta.url));

export interface SpawnedService {
  url: string;
  child: ChildProcess;
  /** Everything the process printed on stdout and stderr so far. */
  output(): string;
  close(): Promise<void>;
}

/**
 * Spawn a service and resolve with its URL once it prints `listening on http://…`. Rejects with the process's
 * output when it exits first or stays silent for `timeoutMs` (default 120 s: only an upper bound, for a busy machine).
 */
export function spawnService(
  command: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<SpawnedService> {
  const child = spawn(command, args, { env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
  let printed = '';
  const output = (): string => printed;
  const close = (): Promise<void> =>
    new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
    });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      void close();
      reject(
        new Error(
          `${command} ${args.join(' ')} did not report its URL within ${options.timeoutMs ?? 120_000} ms:\n${printed}`,
        ),
      );
    }, options.timeoutMs ?? 120_000);
    const onData = (chunk: Buffer): void => {
      printed += chunk.toString('utf8');
      const match = /listening on (http:\/\/\S+)/.exec(printed);
      if (match) {
        clearTimeout(timer);
        resolve({ url: match[1]!, child, output, close });
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${command} ${args.join(' ')} exited (${code ?? signal}) before listening:\n${printed}`));
    });
  });
}

/**
 * The deadlines `gym agent check` runs with in tests: a call's timeout, and the latency above which a call is a warning
 * (which fails a test that wants every check to pass). Both far above what a call takes, even on a busy machine: what
 * the tests check is conformance, never speed.
 */
export const AGENT_CHECK_DEADLINES = { timeoutMs: 60_000, slowCallMs: 60_000 } as const;

/** Run `gym agent check` against `url` and fail the test, listing the offending lines, unless every check passes. */
export async function assertAgentCheckPasses(url: string): Promise<AgentCheckReport> {
  const report = await runAgentCheck(url, AGENT_CHECK_DEADLINES);
  const notPassing = report.checks.filter((check) => check.status !== 'pass');
  assert.deepEqual(
    notPassing.map((check) => `${check.status.toUpperCase()} ${check.name}: ${check.detail}`),
    [],
    'every check passes',
  );
  return report;
}

/** A rollout row as the remote agent's /run answers it: the reward, the trajectory, and the environment's fields. */
export interface RolloutRow {
  reward: number;
  response?: { output?: { type?: string }[] };
  [field: string]: unknown;
}

export interface RolloutResults {
  rewards: number[];
  rows: RolloutRow[];
}

/**
 * The five counter tasks of the dataset, each as one real rollout: the counter environment and tsgym's remote
 * agent on loopback ports, driving the service at `serviceUrl`. Resolves `undefined` (with the reason) when the
 * remote agent cannot be loaded in this checkout.
 */
export async function runCounterRollouts(serviceUrl: string): Promise<RolloutResults | { unavailable: string }> {
  let envModule: typeof import('../../resources_servers/example_session_state_mgmt/app.js');
  try {
    envModule = await import('../../resources_servers/example_session_state_mgmt/app.js');
  } catch (err) {
    return { unavailable: `the counter environment could not be loaded: ${(err as Error).message}` };
  }
  return runDatasetRollouts(serviceUrl, {
    environment: (name) => envModule.createCounterServer(name),
    environmentName: 'example_session_state_mgmt_resources_server',
    dataset: `${REPO_ROOT}resources_servers/example_session_state_mgmt/data/example.jsonl`,
    maxSteps: 8,
  });
}

export interface DatasetRolloutOptions {
  /** Builds the environment's app for the given instance name. */
  environment(name: string): App;
  environmentName: string;
  /** A JSONL file of rows. */
  dataset: string;
  maxSteps: number;
  /** Rows run at the same time (default 8). */
  concurrency?: number;
}

/**
 * Every row of `dataset` as one real rollout: the environment and tsgym's remote agent on loopback ports, driving
 * the service at `serviceUrl`, rows in file order. Resolves `unavailable` when the remote agent cannot be loaded.
 */
export async function runDatasetRollouts(
  serviceUrl: string,
  options: DatasetRolloutOptions,
): Promise<RolloutResults | { unavailable: string }> {
  let agentModule: typeof import('../../responses_api_agents/remote_agent/app.js');
  let configModule: typeof import('../../responses_api_agents/remote_agent/config.js');
  try {
    agentModule = await import('../../responses_api_agents/remote_agent/app.js');
    configModule = await import('../../responses_api_agents/remote_agent/config.js');
  } catch (err) {
    return { unavailable: `the remote agent could not be loaded: ${(err as Error).message}` };
  }
  const envName = options.environmentName;
  const env = await options.environment(envName).listen(0);
  const config = configModule.parseRemoteAgentConfig(
    {
      agent_base_url: serviceUrl,
      resources_server: { type: 'resources_servers', name: envName },
      max_steps: options.maxSteps,
    },
    'remote_agent',
  );
  const agent = await agentModule
    .createRemoteAgent({ config, resourcesServer: { name: envName, url: env.url }, log: () => {} })
    .app.listen(0);
  try {
    const lines = readFileSync(options.dataset, 'utf8')
      .split('\n')
      .filter((line) => line.trim() !== '');
    const rows = new Array<RolloutRow>(lines.length);
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < lines.length) {
        const index = next++;
        // Only an upper bound: a rollout takes milliseconds here, seconds on a busy machine.
        const res = await request(`${agent.url}/run`, { method: 'POST', jsonText: lines[index]!, timeoutMs: 120_000 });
        assert.equal(res.status, 200, res.text());
        rows[index] = res.json() as RolloutRow;
      }
    };
    await Promise.all(Array.from({ length: Math.min(options.concurrency ?? 8, lines.length) }, worker));
    return { rewards: rows.map((row) => row.reward), rows };
  } finally {
    await agent.close();
    await env.close();
  }
}

/** The item types of a finished rollout's trajectory, e.g. function_call, function_call_output, …, message. */
export function trajectoryTypes(row: RolloutRow): string[] {
  return (row.response?.output ?? []).map((item) => item.type ?? 'message');
}
