/**
 * `gym eval aggregate` (docs/design.md, "Shards: gym eval aggregate"): merge shard rollout files into one, sorted by
 * (task, rollout), and compute the aggregate metrics over all of them so a sharded collection reports exactly
 * what a single run would. Each shard's failures sidecar and materialized inputs, when present beside it, feed the
 * outcome counts (D1).
 */
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { ConfigError } from '../errors.js';
import {
  AggregationInput,
  strippedRowOf,
  aggregateAgents,
  localMetricsSource,
  writeAggregateFile,
  type MetricsSource,
} from './aggregate.js';
import { expandGlob } from './glob.js';
import { BatchedFileWriter, scanRowsFile } from '../runfiles/jsonl.js';
import { isRolloutKey } from '../runfiles/key-tables.js';
import { agentNameOfRow, describeLedger, LedgerBuilder, rewardOf, type OutcomeLedger } from '../runfiles/outcomes.js';
import { artifactPaths, failuresPathFor, isDerivedArtifact, materializedInputsPathFor } from '../runfiles/paths.js';
import type { Row } from '../runfiles/row.js';
import { NG } from '../runfiles/ng-keys.js';
import { healthReportLines, type HealthFiles } from '../health/health.js';

export interface AggregateShardsOptions {
  inputGlob: string;
  outputPath: string;
  mergeShards: boolean;
  /** Per agent: its `/aggregate_metrics`, or undefined to compute locally. */
  remoteSource: (agent: string) => MetricsSource | undefined;
  out: (line: string) => void;
  warn: (line: string) => void;
}

interface ShardRecord {
  task: number;
  rollout: number;
  text: string;
  file: string;
  lineNo: number;
}

/** Comma-separated globs; each pattern's matches sorted, duplicates dropped (first occurrence wins). */
export function matchShards(inputGlob: string, outputPath: string, warn: (line: string) => void): string[] {
  const output = path.resolve(outputPath);
  const files: string[] = [];
  const seen = new Set<string>();
  for (const pattern of inputGlob
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '')) {
    for (const file of expandGlob(pattern)) {
      const resolved = path.resolve(file);
      if (seen.has(resolved) || !statSync(file).isFile()) continue;
      seen.add(resolved);
      if (resolved === output) continue;
      if (isDerivedArtifact(file)) {
        warn(`Skipping ${file}: it is a sidecar or materialized-inputs file beside a shard, not a shard itself.`);
        continue;
      }
      files.push(file);
    }
  }
  if (files.length === 0) throw new ConfigError(`No shards matched input_glob='${inputGlob}'`, 'GYM_CONFIG_NO_SHARDS');
  return files;
}

/** What the shards hold, gathered shard by shard: their rows (for the merge), the metrics input and the outcomes. */
interface ShardTally {
  records: ShardRecord[];
  input: AggregationInput;
  ledger: LedgerBuilder;
}

/** A shard's materialized inputs, a shard's rows and its failures sidecar, each when present. */
async function readShard(shard: string, tally: ShardTally, warn: (line: string) => void): Promise<void> {
  const materialized = materializedInputsPathFor(shard);
  const listed = existsSync(materialized);
  if (listed) await readShardInputs(materialized, tally.ledger);
  await readShardRows(shard, tally, warn);
  const sidecar = failuresPathFor(shard);
  if (existsSync(sidecar)) await readShardFailures(sidecar, tally.ledger, listed);
}

async function readShardInputs(materialized: string, ledger: LedgerBuilder): Promise<void> {
  await scanRowsFile(materialized, (row) => {
    const task = row[NG.taskIndex];
    const rollout = row[NG.rolloutIndex];
    if (isRolloutKey(task, rollout)) ledger.expected(task, rollout as number, agentNameOfRow(row));
  });
}

async function readShardRows(shard: string, tally: ShardTally, warn: (line: string) => void): Promise<void> {
  const scan = await scanRowsFile(
    shard,
    (row, line) => {
      const task = row[NG.taskIndex];
      const rollout = row[NG.rolloutIndex];
      if (!isRolloutKey(task, rollout)) {
        throw new ConfigError(
          `${shard}:${line.lineNo}: the row has no valid ${NG.taskIndex}/${NG.rolloutIndex}; shards must be rollouts files written by gym eval run.`,
          'GYM_AGGREGATE_KEY',
        );
      }
      tally.records.push({
        task,
        rollout: rollout as number,
        text: line.bytes.toString('utf8'),
        file: shard,
        lineNo: line.lineNo,
      });
      tally.input.add(agentNameOfRow(row), row);
      tally.ledger.completed(task, rollout as number, agentNameOfRow(row), rewardOf(row));
    },
    strippedRowOf,
  );
  if (scan.torn)
    warn(`Ignoring the torn last line of ${shard} (line ${scan.torn.lineNo}, left by an interrupted run).`);
}

/** `listed`: the shard's materialized inputs were read, so a failure outside them is left over from another run. */
async function readShardFailures(sidecar: string, ledger: LedgerBuilder, listed: boolean): Promise<void> {
  await scanRowsFile(sidecar, (row: Row) => {
    const task = row[NG.taskIndex];
    const rollout = row[NG.rolloutIndex];
    if (!isRolloutKey(task, rollout)) return;
    if (listed && !ledger.isExpected(task, rollout as number)) return;
    ledger.failure(task, rollout as number, agentNameOfRow(row), row[NG.failureTerminal] === true);
  });
}

/** Sorts the rows by key; a key in two rows (overlapping shards, or one listed twice) fails the aggregation. */
function sortWithoutOverlap(records: ShardRecord[]): void {
  records.sort((a, b) => a.task - b.task || a.rollout - b.rollout);
  for (let i = 1; i < records.length; i++) {
    const a = records[i - 1]!;
    const b = records[i]!;
    if (a.task === b.task && a.rollout === b.rollout) {
      throw new ConfigError(
        `Rollout key (${b.task}, ${b.rollout}) appears twice: ${a.file}:${a.lineNo} and ${b.file}:${b.lineNo}. Shards must not overlap: give every task a globally unique ${NG.taskIndex} in the inputs before sharding, and do not list a shard twice.`,
        'GYM_AGGREGATE_DUPLICATE',
      );
    }
  }
}

function writeMerged(outputPath: string, records: readonly ShardRecord[]): void {
  const writer = new BatchedFileWriter(outputPath);
  for (const record of records) writer.line(record.text);
  writer.commit();
}

/**
 * The aggregate metrics, each agent's from its `/aggregate_metrics` when reachable and computed locally otherwise,
 * written beside the output; answers how many agents' metrics failed.
 */
async function writeMetrics(
  options: AggregateShardsOptions,
  input: AggregationInput,
  outcomes: OutcomeLedger,
): Promise<{ metricsPath: string; failed: number }> {
  const { out, warn } = options;
  const locally = new Set<string>();
  const { entries, errors } = await aggregateAgents(
    input,
    outcomes,
    (agent) => {
      const remote = options.remoteSource(agent);
      if (remote) return remote;
      locally.add(agent);
      return localMetricsSource;
    },
    out,
  );
  if (locally.size > 0) {
    out(
      `Computed the aggregate metrics of ${[...locally].map((a) => `'${a}'`).join(', ')} locally (their agents are not reachable through the head server), so environment-specific metrics from compute_metrics hooks are not included.`,
    );
  }
  const metricsPath = artifactPaths(options.outputPath).aggregateMetrics;
  writeAggregateFile(metricsPath, entries);
  for (const error of errors) warn(`Error: aggregate metrics failed: ${error}`);
  return { metricsPath, failed: errors.length };
}

/** What was aggregated, for the health checks: the merged file (or the shards) with every shard's sidecar and inputs. */
function aggregatedFiles(options: AggregateShardsOptions, shards: readonly string[]): HealthFiles {
  return {
    rollouts: options.mergeShards ? [options.outputPath] : [...shards],
    failures: shards.map(failuresPathFor).filter((file) => existsSync(file)),
    materializedInputs: shards.map(materializedInputsPathFor).filter((file) => existsSync(file)),
  };
}

export async function aggregateShards(options: AggregateShardsOptions): Promise<number> {
  const { out } = options;
  const shards = matchShards(options.inputGlob, options.outputPath, options.warn);
  const tally: ShardTally = { records: [], input: new AggregationInput(), ledger: new LedgerBuilder() };
  for (const shard of shards) await readShard(shard, tally, options.warn);
  sortWithoutOverlap(tally.records);
  if (options.mergeShards) writeMerged(options.outputPath, tally.records);

  const outcomes = tally.ledger.build();
  const { metricsPath, failed } = await writeMetrics(options, tally.input, outcomes);
  const summaryPath = artifactPaths(options.outputPath).qualitySummary;
  const health = await healthReportLines(aggregatedFiles(options, shards), summaryPath, options.warn);
  for (const line of describeLedger(outcomes)) out(line);
  if (health.line !== undefined) out(health.line);
  out('Finished rollout aggregation! View results at:');
  out(`Merged rollouts: ${options.mergeShards ? options.outputPath : '<not merged>'}`);
  out(`Aggregate metrics: ${metricsPath}`);
  out(health.pathLine);
  return failed === 0 ? 0 : 1;
}
