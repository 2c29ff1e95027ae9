/**
 * Test support for the collection commands: run the real CLI (`node bin/gym.js …`) as a child process and read
 * the JSONL it writes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import assert from 'node:assert/strict';
import { installRoot } from '../../src/config/roots.js';
import { eventually } from './wait.js';

export const GYM_BIN = path.join(installRoot(), 'bin', 'gym.js');

export interface GymResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface GymOptions {
  cwd: string;
  env?: Record<string, string | undefined>;
}

export interface RunningGym {
  child: ChildProcess;
  result: Promise<GymResult>;
  /** Everything written to stderr so far. */
  stderr(): string;
}

export function spawnGym(args: readonly string[], options: GymOptions): RunningGym {
  const env = { ...process.env, ...options.env };
  for (const [key, value] of Object.entries(env)) if (value === undefined) delete env[key];
  const child = spawn(process.execPath, [GYM_BIN, ...args], {
    cwd: options.cwd,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const result = new Promise<GymResult>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
  return { child, result, stderr: () => stderr };
}

export function runGym(args: readonly string[], options: GymOptions): Promise<GymResult> {
  return spawnGym(args, options).result;
}

/** The counter environment's five example tasks. */
export const COUNTER_TASKS = path.join(
  installRoot(),
  'resources_servers/example_session_state_mgmt/data/example.jsonl',
);

/**
 * `gym eval run --no-serve` of `remote_agent` on the rows of `input` into `output`, against the servers `gym env start`
 * runs with its head server on `headPort`.
 */
export function runRemoteAgentEval(
  headPort: number,
  input: string,
  output: string,
  options: GymOptions,
): Promise<GymResult> {
  const args = ['eval', 'run', '--no-serve', `++head_server.port=${headPort}`, '-a', 'remote_agent'];
  return runGym([...args, '-i', input, '-o', output], options);
}

export interface StartedEnv {
  gym: RunningGym;
  /** Everything written to stdout so far. */
  stdout: () => string;
  /** SIGINT, then its exit; safe to call more than once. */
  stop: () => Promise<GymResult>;
}

/**
 * `gym env start ARGS`, its logs under `logDir`, until it says where its logs are (every server up), or the test
 * fails with all it printed: when it exits first, or fewer than `servers` servers are ready. The deadline only caps a
 * hang (a busy machine starts servers slowly).
 */
export async function startGymEnv(
  args: readonly string[],
  options: GymOptions & { logDir: string; servers: number; timeoutMs?: number },
): Promise<StartedEnv> {
  const gym = spawnGym(['env', 'start', ...args, `++nemo_gym_log_dir=${options.logDir}`], options);
  let stdout = '';
  gym.child.stdout!.on('data', (chunk: string) => (stdout += chunk));
  let stopped: Promise<GymResult> | undefined;
  const stop = (): Promise<GymResult> => {
    gym.child.kill('SIGINT');
    return (stopped ??= gym.result);
  };
  try {
    await eventually(() => /^Logs: /m.test(stdout) || gym.child.exitCode !== null, {
      what: 'gym env start to be ready',
      timeoutMs: options.timeoutMs ?? 120_000,
    });
    const ready = `${options.servers} / ${options.servers} servers ready`;
    assert.ok(stdout.includes(ready), `gym env start did not report ${ready}:\n${stdout}\n${gym.stderr()}`);
  } catch (err) {
    await stop();
    throw err;
  }
  return { gym, stdout: () => stdout, stop };
}

const created: string[] = [];
process.once('exit', () => {
  for (const dir of created) {
    // One that cannot go (a tmpfs still mounted inside) must not keep the rest: the run's leftovers check names it.
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch {
      continue;
    }
  }
});

/** A fresh directory, removed when the test process exits. */
export function tempDir(prefix = 'tsgym-collect-'): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  created.push(dir);
  return dir;
}

export function writeJsonl(file: string, rows: readonly unknown[]): void {
  writeFileSync(file, rows.map((row) => `${JSON.stringify(row)}\n`).join(''));
}

export function readJsonl(file: string): Array<Record<string, unknown>> {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

export function lineCount(file: string): number {
  if (!existsSync(file)) return 0;
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '').length;
}

/** `(task, rollout)` keys of rows, as sorted `t:r` strings. */
export function keysOf(rows: ReadonlyArray<Record<string, unknown>>): string[] {
  return rows.map((row) => `${String(row._ng_task_index)}:${String(row._ng_rollout_index)}`).sort();
}
