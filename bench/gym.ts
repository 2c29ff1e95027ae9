import { createReadStream, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { fetchServerInstances } from '../src/supervisor/head-client.js';
import { captureTail, sampleProc, start, stop, waitForExit, waitForLine, type ProcSample } from './procs.js';

/**
 * tsgym as a user runs it: `gym env start` with a config holding the counter environment and a remote agent
 * pointed at the bench service, and `gym eval run --no-serve` against it — both through the real CLI.
 */

export const REPO = path.resolve(fileURLToPath(new URL('../..', import.meta.url)));
export const GYM = path.join(REPO, 'bin', 'gym.js');
const gymBin = (root: string): string => path.join(root, 'bin', 'gym.js');
const PROBE = path.join(REPO, 'dist', 'bench', 'probe.js');
const AGENT = 'remote_agent';
const READY = /^All (\d+) \/ \1 servers ready/;

export interface EnvironmentOptions {
  serviceUrl: string;
  /** The remote agent's `concurrency`. */
  concurrency: number;
  workDir: string;
  /** Record CPU profiles of the supervisor and every server into this directory (see probe.ts). */
  profileDir?: string;
  /** The tsgym checkout to run (default: this one; the baseline scenario passes a built older commit). */
  root?: string;
  /** Variables added to the environment of `gym env start` and so of every server (scenario 9's OTEL_*). */
  env?: Record<string, string>;
}

export interface RunningGym {
  headPort: number;
  /** Supervisor (gym env start + head server), agent and environment. */
  pids: { supervisor: number; agent: number; environment: number };
  urls: { agent: string; environment: string };
  /** Milliseconds from spawning `gym env start` to its ready line. */
  startupMs: number;
  /**
   * The agent and the environment share one process (D23): `sample()` then counts it once, as the agent, and the
   * environment's sample is zero.
   */
  colocated: boolean;
  sample(): Record<'supervisor' | 'agent' | 'environment', ProcSample>;
  stop(): Promise<void>;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

function configYaml(options: EnvironmentOptions): string {
  return [
    'bench_counter:',
    '  resources_servers:',
    '    example_session_state_mgmt:',
    '      entrypoint: app.py',
    '      domain: agent',
    `${AGENT}:`,
    '  responses_api_agents:',
    '    remote_agent:',
    '      entrypoint: app.py',
    `      agent_base_url: ${options.serviceUrl}`,
    '      resources_server: {type: resources_servers, name: bench_counter}',
    `      concurrency: ${options.concurrency}`,
    // TSGYM_BENCH_COLOCATE=false: the agent and the environment in processes of their own (the before side of D23).
    ...(process.env.TSGYM_BENCH_COLOCATE === 'false' ? ['      colocate: false'] : []),
    '',
  ].join('\n');
}

export async function startGym(options: EnvironmentOptions): Promise<RunningGym> {
  mkdirSync(options.workDir, { recursive: true });
  const configPath = path.join(options.workDir, 'bench.yaml');
  writeFileSync(configPath, configYaml(options));
  const headPort = await freePort();
  const env = options.profileDir
    ? {
        ...process.env,
        ...options.env,
        NODE_OPTIONS: [process.env.NODE_OPTIONS, `--import=${PROBE}`].filter(Boolean).join(' '),
        TSGYM_BENCH_CPU_PROFILE_DIR: options.profileDir,
      }
    : { ...process.env, ...options.env };
  const root = options.root ?? REPO;
  const spawnedAt = performance.now();
  const child = start(
    process.execPath,
    [
      gymBin(root),
      'env',
      'start',
      `+config_paths=[${configPath}]`,
      `++head_server.port=${headPort}`,
      `++nemo_gym_log_dir=${path.join(options.workDir, 'logs')}`,
    ],
    { cwd: root, env },
  );
  const tail = captureTail(child);
  try {
    await waitForLine(child, READY, 60_000);
  } catch (err) {
    await stop(child);
    throw new Error(`gym env start did not become ready: ${(err as Error).message}\n${tail()}`, { cause: err });
  }
  const startupMs = performance.now() - spawnedAt;
  const lookup = await fetchServerInstances(`http://127.0.0.1:${headPort}`);
  const instance = (serverType: string) => {
    const found = lookup.kind === 'found' ? lookup.instances.find((i) => i.server_type === serverType) : undefined;
    if (!found?.pid) throw new Error(`the head server lists no running ${serverType} process`);
    return { pid: found.pid, url: found.url };
  };
  const [agent, environment] = [instance('responses_api_agents'), instance('resources_servers')];
  const pids = { supervisor: child.pid!, agent: agent.pid, environment: environment.pid };
  const colocated = agent.pid === environment.pid;
  return {
    headPort,
    pids,
    urls: { agent: agent.url, environment: environment.url },
    startupMs,
    colocated,
    sample: () => ({
      supervisor: sampleProc(pids.supervisor),
      agent: sampleProc(pids.agent),
      environment: colocated ? { cpuMs: 0, peakRssMiB: 0, ioBytes: 0 } : sampleProc(pids.environment),
    }),
    stop: () => stop(child, 10_000),
  };
}

export interface CollectOptions {
  headPort: number;
  inputPath: string;
  outputDir: string;
  concurrency: number;
  timeoutMs: number;
  /** Use only the first N input rows (`--limit`). */
  limit?: number;
  /** Stop the collector (SIGTERM) after this long instead of waiting for it to finish. */
  capMs?: number;
  /** Record a CPU profile of the collector into this directory. */
  profileDir?: string;
  /** The tsgym checkout to run (default: this one). */
  root?: string;
  /** Further `gym eval run` arguments (e.g. `--queue redis://…`). */
  extraArgs?: readonly string[];
  /** Variables added to the collector's environment. */
  env?: Record<string, string>;
}

export interface CollectResult {
  wallMs: number;
  /** The collector's own final /proc reading. */
  collector: ProcSample;
  completed: number;
  failed: number;
  /** Size of the rollouts file: with one line per rollout, the bytes of the finished trajectories. */
  outputBytes: number;
  /** Reward of the first completed rollout (a check that the service and environment agree). */
  firstReward: number | undefined;
  /** The first failure row, if any (for the error message when a run was expected to have none). */
  firstFailure: string | undefined;
  capped: boolean;
  /** The rate the collector's last progress line reported (rollouts/s over the dispatch pass, start-up excluded). */
  progressRate: number | undefined;
}

/** `gym eval run --no-serve`, timed from spawn to exit (the whole product: start-up, files, aggregation). */
export async function collect(options: CollectOptions): Promise<CollectResult> {
  mkdirSync(options.outputDir, { recursive: true });
  const output = path.join(options.outputDir, 'rollouts.jsonl');
  const probeFile = path.join(options.outputDir, 'collector-probe.json');
  const args = [
    '--import',
    PROBE,
    gymBin(options.root ?? REPO),
    'eval',
    'run',
    '--no-serve',
    `++head_server.port=${options.headPort}`,
    '--agent',
    AGENT,
    '--input',
    options.inputPath,
    '--output',
    output,
    '--concurrency',
    String(options.concurrency),
    ...(options.limit ? ['--limit', String(options.limit)] : []),
    ...(options.extraArgs ?? []),
  ];
  const spawnedAt = performance.now();
  const env = {
    ...process.env,
    ...options.env,
    TSGYM_BENCH_PROBE: probeFile,
    ...(options.profileDir ? { TSGYM_BENCH_CPU_PROFILE_DIR: options.profileDir } : {}),
  };
  const child = start(process.execPath, args, { cwd: options.root ?? REPO, env });
  const tail = captureTail(child);
  let capped = false;
  const cap =
    options.capMs === undefined
      ? undefined
      : setTimeout(() => {
          capped = true;
          child.kill('SIGTERM');
        }, options.capMs);
  let code: number | null;
  try {
    code = await waitForExit(child, options.timeoutMs, 'gym eval run');
  } finally {
    clearTimeout(cap);
  }
  const wallMs = performance.now() - spawnedAt;
  if (!capped && code !== 0) throw new Error(`gym eval run failed (exit ${code}):\n${tail()}`);
  if (!existsSync(probeFile)) throw new Error(`gym eval run left no /proc reading (exit ${code}):\n${tail()}`);
  const failuresFile = path.join(options.outputDir, 'rollouts_failures.jsonl');
  return {
    wallMs,
    collector: JSON.parse(readFileSync(probeFile, 'utf8')) as ProcSample,
    completed: await countLines(output),
    outputBytes: existsSync(output) ? statSync(output).size : 0,
    failed: await countLines(failuresFile),
    firstReward: await firstReward(output),
    firstFailure: await firstLine(failuresFile),
    capped,
    progressRate: lastProgressRate(tail()),
  };
}

function lastProgressRate(text: string): number | undefined {
  const rates = [...text.matchAll(/\| ([\d.]+) rollouts\/s \|/g)];
  return rates.length > 0 ? Number(rates[rates.length - 1]![1]) : undefined;
}

async function countLines(file: string): Promise<number> {
  if (!existsSync(file)) return 0;
  let lines = 0;
  for await (const chunk of createReadStream(file) as AsyncIterable<Buffer>) {
    for (let at = chunk.indexOf(10); at >= 0; at = chunk.indexOf(10, at + 1)) lines++;
  }
  return lines;
}

async function firstLine(file: string): Promise<string | undefined> {
  if (!existsSync(file)) return undefined;
  let head = '';
  for await (const chunk of createReadStream(file, { highWaterMark: 1 << 20 }) as AsyncIterable<Buffer>) {
    head += chunk.toString('utf8');
    const newline = head.indexOf('\n');
    if (newline >= 0) return head.slice(0, newline);
  }
  return undefined;
}

async function firstReward(file: string): Promise<number | undefined> {
  const line = await firstLine(file);
  return line === undefined ? undefined : (JSON.parse(line) as { reward?: number }).reward;
}
