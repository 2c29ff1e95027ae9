/**
 * `gym eval export`: a rollouts file to a trainer JSONL or ATIF trajectories. The input is streamed row by row
 * (`scanRowsFile`), so memory is bounded by one row plus, with GRPO advantages, one reward per exported rollout: the
 * group statistics need every reward of a task before the first line of it can be written, so that export reads the
 * file twice instead of holding the samples. The output is written under a temporary name and renamed at the end: a
 * reader sees the previous file or the whole new one, and a failed export leaves no partial file.
 */
import { existsSync, statSync } from 'node:fs';
import { ConfigError } from '../errors.js';
import { NG } from '../runfiles/ng-keys.js';
import { BatchedFileWriter, scanRowsFile } from '../runfiles/jsonl.js';
import { atifTrajectory } from './atif.js';
import { groupStats, grpoAdvantage, trainerSample, type GroupStats } from './export.js';

export type ExportFormat = 'trainer' | 'atif';

export interface ExportOptions {
  format: ExportFormat;
  /** Adds `advantage` to each trainer sample. */
  advantages?: 'grpo';
  /** Written into each ATIF trajectory's `agent.version`. */
  tsgymVersion: string;
}

export interface ExportSummary {
  rows: number;
  exported: number;
  /** Rows not exported, by reason. */
  skipped: Map<string, number>;
}

const TORN = 'torn last line (a collection still writing, or killed mid-line)';

function requireFile(path: string): void {
  if (!existsSync(path) || !statSync(path).isFile()) {
    throw new ConfigError(
      `${path}: no such rollouts file. Pass the rollouts JSONL that gym eval run wrote (its -o / +output_jsonl_fpath).`,
      'GYM_CONFIG_PATH',
    );
  }
}

/** Every exported sample's reward by group: the first pass of a GRPO export. */
async function rewardsByGroup(path: string): Promise<Map<number, number[]>> {
  const rewards = new Map<number, number[]>();
  await scanRowsFile(path, (row) => {
    const result = trainerSample(row);
    if (!('sample' in result)) return;
    const group = rewards.get(result.sample.group_index) ?? [];
    group.push(result.sample.reward);
    rewards.set(result.sample.group_index, group);
  });
  return rewards;
}

function groupOf(stats: Map<number, GroupStats>, group: number, path: string): GroupStats {
  const found = stats.get(group);
  if (found === undefined) {
    throw new ConfigError(
      `${path} changed while it was exported (task ${group} was not in it on the first pass); export it again once ` +
        'nothing writes to it.',
      'GYM_CONFIG_JSONL',
    );
  }
  return found;
}

export async function exportRollouts(path: string, target: string, options: ExportOptions): Promise<ExportSummary> {
  requireFile(path);
  const summary: ExportSummary = { rows: 0, exported: 0, skipped: new Map() };
  const skip = (reason: string): void => void summary.skipped.set(reason, (summary.skipped.get(reason) ?? 0) + 1);
  let stats: Map<number, GroupStats> | undefined;
  if (options.format === 'trainer' && options.advantages === 'grpo') stats = groupStats(await rewardsByGroup(path));

  const writer = new BatchedFileWriter(target);
  try {
    const { torn } = await scanRowsFile(path, (row) => {
      summary.rows++;
      if (row[NG.failureClass] !== undefined) return skip('failed rollout');
      if (options.format === 'atif') {
        writer.line(JSON.stringify(atifTrajectory(row, options.tsgymVersion)));
        summary.exported++;
        return;
      }
      const result = trainerSample(row);
      if (!('sample' in result)) return skip(result.skip);
      const { sample } = result;
      if (stats) sample.advantage = grpoAdvantage(sample.reward, groupOf(stats, sample.group_index, path));
      writer.line(JSON.stringify(sample));
      summary.exported++;
    });
    if (torn) {
      summary.rows++;
      skip(TORN);
    }
  } catch (err) {
    writer.abandon();
    throw err;
  }
  writer.commit();
  return summary;
}

/** The summary's lines: `Exported N of M rollouts …`, then the skipped rows by reason, most frequent first. */
export function describeExport(summary: ExportSummary, target: string, options: ExportOptions): string[] {
  const what = options.format === 'atif' ? 'ATIF-v1.7 trajectories' : 'trainer samples';
  const skipped = [...summary.skipped.values()].reduce((sum, n) => sum + n, 0);
  const lines = [
    `Exported ${summary.exported} of ${summary.rows} rollouts as ${what} to ${target}; skipped ${skipped}.`,
  ];
  const reasons = [...summary.skipped].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  for (const [reason, count] of reasons) lines.push(`  skipped ${count}: ${reason}`);
  return lines;
}
