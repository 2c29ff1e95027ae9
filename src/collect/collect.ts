/**
 * `gym eval run`: rollout collection, top to bottom.
 *
 *   1. check    — every input line is a JSON object with a known agent (nothing written, nothing sent yet);
 *   2. prepare  — fresh: refuse to clobber rows (D8), write the materialized inputs whole;
 *                 resume: read the previous run's files, prove they match the inputs (D9), cut torn tails;
 *   3. dispatch — stream the materialized inputs through a bounded queue; each result is stamped and appended
 *                 as one line the moment it arrives (D10); failures are rows, never crashes (D11);
 *   4. report   — aggregate metrics per agent, then the honest denominators (D1) and every artefact's path.
 */
import { existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { findUnderRoots, searchRoots } from '../config/index.js';
import { ConfigError, GymError } from '../errors.js';
import {
  AggregationInput,
  strippedRowOf,
  agentMetricsSource,
  aggregateAgents,
  DISABLED_MESSAGE,
  writeAggregateFile,
  type MetricsSource,
} from './aggregate.js';
import type { AgentDirectory } from './agents.js';
import { maxRolloutAttempts, type CollectionConfig } from './config.js';
import {
  BatchedFileWriter,
  holdsRows,
  LineAppender,
  malformedLine,
  parseLine,
  readRawLines,
  scanRowsFile,
  type RawLine,
  truncateFile,
} from '../runfiles/jsonl.js';
import { TaskCounters } from '../runfiles/key-tables.js';
import { materializeRows, scanInput, type InputScan } from './materialize.js';
import { NG } from '../runfiles/ng-keys.js';
import { failureRow, type Row, type RowStamps } from '../runfiles/row.js';
import { attemptOf } from '../runfiles/in-flight.js';
import { agentNameOfRow, describeLedger, OutcomeLedger, rewardOf, type Outcome } from '../runfiles/outcomes.js';
import { artifactPaths, checkOutputPath, type ArtifactPaths } from '../runfiles/paths.js';
import { ProgressReporter, type ProgressOptions } from './progress.js';
import {
  createInProcessQueue,
  type InProcessQueueOptions,
  type RolloutExecutor,
  type RolloutJob,
  type RolloutQueue,
} from './executor.js';
import { AgentReachability, isUndelivered } from './reachability.js';
import { describeResume, loadCache, planResume, resumeStatus, type CacheState } from './resume.js';
import { httpAgentExecutor, identityOf, INVALID_ROW, isTerminal, routeOf, rowProblem, stamp } from './routing.js';
import { agentStatusSource, RunStatusBoard, type StageSource } from './status.js';
import { STEP_LATENCY_KEY } from '../contract/gym-wire.js';
import type { HopSpan } from '../tracing/types.js';
import { CollectorTraces } from './trace.js';
import { healthReportLines, runHealthFiles } from '../health/health.js';

export interface CollectIO {
  /** Informational lines (stdout). */
  out: (line: string) => void;
  /** Warnings (stderr). */
  warn: (line: string) => void;
  progressStream: ProgressOptions['stream'];
  env: NodeJS.ProcessEnv;
}

export interface CollectOptions {
  config: CollectionConfig;
  agents: AgentDirectory;
  io: CollectIO;
  /** The dispatch backend; the in-process pool by default. */
  createQueue?: <J extends RolloutJob>(options: InProcessQueueOptions<J>) => RolloutQueue<J>;
  /** Extra text for the progress line (a distributed backend's workers and their throughput). */
  progressDetail?: () => string;
  /** Where the end-of-run metrics are computed; each agent's `/aggregate_metrics` (by URL) by default. */
  metricsSource?: MetricsSource;
  /** How one job runs; `POST <agent>/run` by default. */
  execute?: RolloutExecutor;
  /** Where in-flight stages come from for `<stem>_status.json`; each agent's `GET /status` by default. */
  stageSource?: StageSource;
  /** How to resume this run, shown when it stops early (default: the generic advice to rerun with --resume). */
  resumeCommand?: string;
  /**
   * Stops the collection (Ctrl-C while the environment is being torn down): no new job is sent and no result
   * arriving afterwards is recorded, so dying servers do not leave spurious failure rows.
   */
  signal?: AbortSignal;
}

export function resolveInputPath(file: string): string {
  const found = findUnderRoots(file, searchRoots());
  if (!found) {
    throw new ConfigError(
      `Input file not found: '${file}' (--input). Check the path is spelled correctly.`,
      'GYM_CONFIG_INPUT_MISSING',
    );
  }
  if (statSync(found).isDirectory()) {
    throw new ConfigError(
      `Input '${file}' (--input) is a directory; name the JSONL file inside it.`,
      'GYM_CONFIG_INPUT_MISSING',
    );
  }
  return found;
}

function printPreprocessingNotes(config: CollectionConfig, out: (line: string) => void): void {
  if (config.limit !== undefined) out(`Limiting the number of rows to ${config.limit}`);
  if (config.numRepeatsAddSeed)
    out('Adding unique `seed` values to each input via metadata.extra_body (only honored by vLLM model servers)');
  if (config.agentName !== undefined)
    out(`Using \`${config.agentName}\` for rows that do not already have an agent ref`);
  if (Object.keys(config.createParamsOverrides).length > 0) {
    out(`Overriding responses_create_params fields with ${JSON.stringify(config.createParamsOverrides)}`);
  }
  if (typeof config.numRepeats === 'number') {
    if (config.numRepeats > 1) out(`Repeating rows ${config.numRepeats} times (in a pattern of abc to aabbcc)!`);
  } else {
    out(`Per-agent num_repeats: ${JSON.stringify(config.numRepeats)}`);
  }
}

/** D8: a run without resume never destroys rows it did not write. */
function refuseToClobber(paths: ArtifactPaths, config: CollectionConfig, resumeBlocker: string | undefined): void {
  const occupied = [paths.rollouts, paths.failures].filter(holdsRows);
  if (occupied.length === 0 || config.overwrite) return;
  const files = occupied.join(' and ');
  const advice = resumeBlocker
    ? `Resuming is not possible because ${resumeBlocker} is missing. To start over and discard them, add ++overwrite=true.`
    : 'To continue that run, add --resume (+resume_from_cache=true); to start over and discard them, add ++overwrite=true.';
  throw new ConfigError(
    `${files} already ${occupied.length > 1 ? 'hold' : 'holds'} rollouts from an earlier run; refusing to overwrite them. ${advice}`,
    'GYM_OUTPUT_EXISTS',
  );
}

/** Written under a temporary name and renamed: a reader sees no file or the whole file, never a prefix. */
async function writeMaterializedInputs(
  inputPath: string,
  config: CollectionConfig,
  paths: ArtifactPaths,
  scan: InputScan,
): Promise<void> {
  const writer = new BatchedFileWriter(paths.materializedInputs);
  try {
    for await (const { row } of materializeRows(inputPath, config, scan.rows)) writer.line(JSON.stringify(row));
  } catch (err) {
    writer.abandon();
    throw err;
  }
  writer.commit();
}

interface Prepared {
  /** Rollouts the dispatch pass will send. */
  toRun: number;
  cache: CacheState | undefined;
  maxAttempts: number;
}

async function prepareFresh(
  inputPath: string,
  config: CollectionConfig,
  paths: ArtifactPaths,
  io: CollectIO,
  scan: InputScan,
  resumeBlocker: string | undefined,
): Promise<Prepared> {
  refuseToClobber(paths, config, resumeBlocker);
  mkdirSync(path.dirname(path.resolve(paths.rollouts)), { recursive: true });
  if (existsSync(paths.rollouts) || existsSync(paths.failures)) {
    io.out(`Clearing output fpath since \`resume_from_cache=False\`!${config.overwrite ? ' (++overwrite=true)' : ''}`);
  }
  // Both files start empty (stale sidecar attempts must not count against this run, U27), and before the new
  // inputs are written: an interrupted start never pairs old rollouts with new inputs.
  writeFileSync(paths.rollouts, '');
  writeFileSync(paths.failures, '');
  await writeMaterializedInputs(inputPath, config, paths, scan);
  return { toRun: scan.rollouts, cache: undefined, maxAttempts: 0 };
}

async function prepareResume(
  inputPath: string,
  config: CollectionConfig,
  paths: ArtifactPaths,
  io: CollectIO,
  scan: InputScan,
): Promise<Prepared> {
  const maxAttempts = maxRolloutAttempts(io.env, io.warn);
  const cache = await loadCache(paths);
  const plan = await planResume(inputPath, config, paths, cache, maxAttempts, scan.rows);
  if (!existsSync(paths.failures)) writeFileSync(paths.failures, '');
  for (const [file, torn] of [
    [paths.rollouts, cache.tornRollouts],
    [paths.failures, cache.tornFailures],
  ] as const) {
    if (!torn) continue;
    io.warn(
      `Ignoring the torn last line of ${file} (line ${torn.lineNo}, left by an interrupted run); it is cut off before appending.`,
    );
    truncateFile(file, torn.start);
  }
  for (const line of describeResume(plan, cache, maxAttempts)) io.out(line);
  if (plan.toRun === 0)
    io.out('Nothing left to run: every rollout is completed, terminally failed or at the attempt cap.');
  return { toRun: plan.toRun, cache, maxAttempts };
}

/** A job as the collector tracks it: what the result will be stamped with, and the outcome it replaces. */
interface DispatchJob extends RolloutJob {
  identity: RowStamps;
  previous: Outcome;
  /** The attempt's root span (D25). */
  span?: HopSpan;
}

interface DispatchStats {
  done: number;
  /** Jobs whose agent was given up before they could be delivered: no row, still unattempted. */
  undelivered: number;
  failures: number;
  completed: number;
  rewardSum: number;
  /** Retryable failures that resume will not run again: their attempts reached NEMO_GYM_MAX_ROLLOUT_ATTEMPTS. */
  atAttemptCap: number;
}

/** Where the dispatch pass reports: the two result files, the progress line, the traces and the status board. */
interface DispatchOutputs {
  rolloutsFile: LineAppender;
  failuresFile: LineAppender;
  progress: ProgressReporter;
  traces: CollectorTraces;
  board: RunStatusBoard;
}

/** Opens the outputs in this order: result files, progress line, traces, then the status board (started). */
async function openDispatchOutputs(
  options: CollectOptions,
  paths: ArtifactPaths,
  prepared: Prepared,
): Promise<DispatchOutputs> {
  const { config, io } = options;
  const rolloutsFile = LineAppender.open(paths.rollouts);
  const failuresFile = LineAppender.open(paths.failures);
  const progress = new ProgressReporter({
    total: prepared.toRun,
    stream: io.progressStream,
    detail: options.progressDetail,
  });
  const traces = await CollectorTraces.open(paths.status, prepared.cache !== undefined);
  const board = new RunStatusBoard({
    file: paths.status,
    traceSalt: traces.salt,
    total: prepared.toRun,
    stallWarningSecs: config.stallWarningSecs,
    source: options.stageSource ?? agentStatusSource(options.agents),
    onStalled: (labels) => progress.setStalled(labels),
    warn: io.warn,
  });
  board.start();
  return { rolloutsFile, failuresFile, progress, traces, board };
}

/** The dispatch pass: every materialized row that still needs a rollout goes through the queue. */
class DispatchPass {
  readonly stats: DispatchStats = {
    done: 0,
    undelivered: 0,
    failures: 0,
    completed: 0,
    rewardSum: 0,
    atAttemptCap: 0,
  };
  private readonly tasksSeen = new TaskCounters();
  private readonly queue: RolloutQueue<DispatchJob>;

  constructor(
    private readonly options: CollectOptions,
    private readonly prepared: Prepared,
    private readonly ledger: OutcomeLedger,
    private readonly reachability: AgentReachability,
    private readonly outputs: DispatchOutputs,
  ) {
    // Ctrl-C: the process exits once the environment is down, maybe before dispatch unwinds; say so at once.
    options.signal?.addEventListener('abort', () => outputs.board.finish('interrupted'), { once: true });
    this.queue = (options.createQueue ?? createInProcessQueue)<DispatchJob>({
      concurrency: options.config.concurrency,
      execute: options.execute ?? httpAgentExecutor(options.agents, options.config.runTimeoutMs, reachability),
      onResult: this.record,
    });
  }

  /** Sends every line of the materialized inputs that needs a rollout, waits for the results, closes the outputs. */
  async run(materializedInputs: string): Promise<DispatchStats> {
    const { options, prepared } = this;
    let drained = false;
    try {
      if (prepared.toRun > 0) options.io.out(`Querying with ${options.config.concurrency} concurrent requests`);
      for await (const line of readRawLines(materializedInputs)) {
        if (options.signal?.aborted) break;
        await this.takeLine(materializedInputs, line);
      }
      await this.queue.drain();
      drained = true;
    } finally {
      await this.closeOutputs(drained && !options.signal?.aborted ? 'finished' : 'interrupted');
    }
    if (prepared.cache)
      for (const [agent, reward] of prepared.cache.rewardByAgent) this.ledger.addReward(agent, reward);
    return this.stats;
  }

  /** One materialized row: counted in the ledger (D1), then sent when it still needs a rollout. */
  private async takeLine(materializedInputs: string, line: RawLine): Promise<void> {
    const { prepared, ledger } = this;
    const text = line.bytes.toString('utf8');
    const parsed = parseLine(text);
    if (!parsed.ok)
      throw malformedLine(materializedInputs, line.lineNo, parsed.reason, 'start over with ++overwrite=true');
    const row = parsed.value as Row;
    const task = row[NG.taskIndex] as number;
    const rollout = row[NG.rolloutIndex] as number;
    const agent = agentNameOfRow(row);
    if (this.tasksSeen.next(task) === 0) ledger.addTask(agent);
    const status = prepared.cache
      ? resumeStatus(prepared.cache.keys.get(task, rollout), prepared.maxAttempts)
      : { outcome: 'missing' as const, run: true, attempts: 0 };
    ledger.expect(agent, status.outcome);
    if (!status.run && status.outcome === 'failed_retryable') this.stats.atAttemptCap++;
    // Once an agent is given up nothing more is sent; the rest of the input is still counted (D1).
    if (!status.run || this.reachability.abandoned().size > 0) return;

    const sent = status.attempts > 0 ? { ...row, [NG.attemptIndex]: status.attempts } : row;
    const body = status.attempts > 0 ? JSON.stringify(sent) : text;
    const job: DispatchJob = {
      task,
      rollout,
      agent,
      attempt: status.attempts,
      body,
      identity: identityOf(sent),
      previous: status.outcome,
    };
    await this.send(job, sent);
  }

  /** A row Gym cannot send becomes its failure row at once; any other goes to the queue, traced and tracked. */
  private async send(job: DispatchJob, sent: Row): Promise<void> {
    const problem = await rowProblem(sent);
    if (problem) this.record(job, failureRow(sent, INVALID_ROW, problem, true));
    else {
      job.span = this.outputs.traces.begin(job);
      job.traceparent = job.span.headers().traceparent!;
      this.outputs.board.track(job);
      await this.queue.submit(job);
    }
  }

  /** One result: stamped and appended to its file the moment it arrives (D10), and counted. */
  private readonly record = (job: DispatchJob, result: Row): void => {
    const { options, prepared, ledger, stats } = this;
    const { traces, board, rolloutsFile, failuresFile, progress } = this.outputs;
    if (options.signal?.aborted) return;
    if (isUndelivered(result)) {
      stats.undelivered++;
      return;
    }
    stamp(result, job.identity);
    const from = job.previous;
    const route = routeOf(result);
    if (job.span) traces.settle(job.span, result, route);
    board.settle(job, result, route);
    // The board has the step latencies now; a success row is the verify response plus stamps (C4), so they go.
    if (route === 'rollouts') delete result[STEP_LATENCY_KEY];
    if (route === 'rollouts') {
      rolloutsFile.append(JSON.stringify(result));
      const reward = rewardOf(result);
      ledger.move(job.agent, from, 'completed', reward);
      stats.completed++;
      stats.rewardSum += reward;
    } else if (route === 'failures') {
      failuresFile.append(JSON.stringify(result));
      ledger.move(job.agent, from, isTerminal(result) ? 'failed_terminal' : 'failed_retryable');
      stats.failures++;
      if (!isTerminal(result) && prepared.cache && attemptOf(job.identity) + 1 >= prepared.maxAttempts)
        stats.atAttemptCap++;
    }
    stats.done++;
    progress.update(stats);
  };

  private async closeOutputs(end: 'finished' | 'interrupted'): Promise<void> {
    const { rolloutsFile, failuresFile, board, progress, traces } = this.outputs;
    rolloutsFile.close();
    failuresFile.close();
    board.finish(end);
    progress.finish();
    await traces.shutdown();
  }
}

async function dispatch(
  options: CollectOptions,
  paths: ArtifactPaths,
  prepared: Prepared,
  ledger: OutcomeLedger,
  reachability: AgentReachability,
): Promise<DispatchStats> {
  const outputs = await openDispatchOutputs(options, paths, prepared);
  return new DispatchPass(options, prepared, ledger, reachability, outputs).run(paths.materializedInputs);
}

/** The aggregate metrics, as the reference computes them: the persisted successes, read back from disk, through each agent's `/aggregate_metrics`. */
async function aggregate(
  options: CollectOptions,
  paths: ArtifactPaths,
  ledger: OutcomeLedger,
): Promise<{ written: boolean; ok: boolean }> {
  const { io } = options;
  if (options.config.disableAggregation) {
    io.out(DISABLED_MESSAGE);
    return { written: false, ok: true };
  }
  const input = new AggregationInput();
  await scanRowsFile(paths.rollouts, (row) => input.add(agentNameOfRow(row), row), strippedRowOf);
  const source = options.metricsSource ?? agentMetricsSource(options.agents);
  const { entries, errors } = await aggregateAgents(input, ledger, () => source, io.out);
  writeAggregateFile(paths.aggregateMetrics, entries);
  for (const error of errors) {
    io.warn(
      `Error: aggregate metrics failed: ${error}. The rollouts are safely on disk; compute the metrics later with gym eval aggregate --input-glob '${paths.rollouts}' -o <merged.jsonl>.`,
    );
  }
  return { written: true, ok: errors.length === 0 };
}

/** The collection was stopped through `CollectOptions.signal`; finished rollouts are on disk. */
export class CollectionInterrupted extends GymError {
  constructor() {
    super(
      'GYM_COLLECTION_INTERRUPTED',
      'config',
      'Collection interrupted; the finished rollouts are on disk. Rerun with --resume to finish.',
    );
  }
}

/** An agent stayed unreachable past `agent_unreachable_wait_secs`; what finished is on disk, the rest is unattempted. */
export class AgentUnreachable extends GymError {
  constructor(reasons: string[], ledger: OutcomeLedger, paths: ArtifactPaths, resumeCommand: string | undefined) {
    const total = ledger.total();
    super(
      'GYM_AGENT_UNREACHABLE',
      'config',
      `The collection stopped dispatching because ${reasons.join('; ')}. ${total.completed} rollout(s) completed, ` +
        `${total.failedRetryable + total.failedTerminal} failed, ${total.missing} not run (never delivered, so they spend no attempt) ` +
        `of ${total.expected}; everything finished is in ${paths.rollouts} and ${paths.failures}. Bring the agent back ` +
        `(gym env status shows it) and resume with: ${resumeCommand ?? 'the same command plus --resume (+resume_from_cache=true)'}`,
    );
  }
}

/** Runs a whole collection; answers the process exit code. */
export async function collectRollouts(options: CollectOptions): Promise<number> {
  const { config, io } = options;
  const inputPath = resolveInputPath(config.inputPath);
  checkOutputPath(config.outputPath);
  const paths = artifactPaths(config.outputPath);
  printPreprocessingNotes(config, io.out);
  const scan = await scanInput(inputPath, config, options.agents, io.warn);

  let resumeBlocker: string | undefined;
  if (config.resume) {
    if (!existsSync(paths.rollouts)) {
      io.out(`Skipping resume_from_cache because output_fpath ${paths.rollouts} doesn't exist!`);
      resumeBlocker = paths.rollouts;
    }
    if (!existsSync(paths.materializedInputs)) {
      io.out(`Skipping resume_from_cache because materialized_jsonl_fpath ${paths.materializedInputs} doesn't exist!`);
      resumeBlocker = paths.materializedInputs;
    }
  }
  const prepared =
    config.resume && resumeBlocker === undefined
      ? await prepareResume(inputPath, config, paths, io, scan)
      : await prepareFresh(inputPath, config, paths, io, scan, resumeBlocker);

  const ledger = new OutcomeLedger();
  const reachability = new AgentReachability({
    waitMs: config.agentUnreachableWaitMs,
    urlOf: (agent) => options.agents.urlOf(agent),
    warn: io.warn,
    ...(options.signal ? { signal: options.signal } : {}),
  });
  const stats = await dispatch(options, paths, prepared, ledger, reachability);
  if (options.signal?.aborted) throw new CollectionInterrupted();
  if (reachability.abandoned().size > 0) {
    for (const line of describeLedger(ledger)) io.out(line);
    throw new AgentUnreachable([...reachability.abandoned().values()], ledger, paths, options.resumeCommand);
  }
  const aggregation = await aggregate(options, paths, ledger);
  // A report on the files just written (src/health/), after the metrics as in NeMo Gym.
  const health = await healthReportLines(runHealthFiles(paths.rollouts), paths.qualitySummary, io.warn);

  for (const line of describeLedger(ledger)) io.out(line);
  if (health.line !== undefined) io.out(health.line);
  io.out('Finished rollout collection! View results at:');
  io.out(`Fully materialized inputs: ${paths.materializedInputs}`);
  io.out(`Rollouts: ${paths.rollouts}`);
  io.out(`Failures: ${paths.failures}`);
  io.out(`Aggregate metrics: ${aggregation.written ? paths.aggregateMetrics : 'None'}`);
  io.out(health.pathLine);
  const total = ledger.total();
  const retryable = total.missing + total.failedRetryable - stats.atAttemptCap;
  if (retryable > 0) {
    io.out(
      `${retryable} rollouts can still be retried: ${options.resumeCommand ?? 'rerun the same command with --resume (+resume_from_cache=true)'}.`,
    );
  }
  if (stats.atAttemptCap > 0) {
    io.out(
      `${stats.atAttemptCap} failed rollouts reached NEMO_GYM_MAX_ROLLOUT_ATTEMPTS=${prepared.maxAttempts}; resume will not retry them (raise it to retry).`,
    );
  }
  return aggregation.ok ? 0 : 1;
}
