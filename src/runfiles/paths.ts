/** Artefact names, all derived from the rollouts path `<dir>/<stem><suffix>` (docs/design.md, "Artefact names"). */
import { existsSync, mkdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { ConfigError } from '../errors.js';

function stemOf(file: string): { dir: string; stem: string } {
  const parsed = path.parse(file);
  return { dir: parsed.dir, stem: parsed.name };
}

function sibling(file: string, suffix: string): string {
  const { dir, stem } = stemOf(file);
  return path.join(dir, `${stem}${suffix}`);
}

export interface ArtifactPaths {
  rollouts: string;
  failures: string;
  materializedInputs: string;
  aggregateMetrics: string;
  /** The live state `gym eval run` keeps current (src/collect/status.ts). */
  status: string;
  /** The rollout health checks' report (src/health/health.ts), written after a run and by `gym eval health`. */
  qualitySummary: string;
}

export function artifactPaths(rolloutsPath: string): ArtifactPaths {
  return {
    rollouts: rolloutsPath,
    failures: failuresPathFor(rolloutsPath),
    materializedInputs: sibling(rolloutsPath, '_materialized_inputs.jsonl'),
    aggregateMetrics: sibling(rolloutsPath, '_aggregate_metrics.json'),
    status: statusPathFor(rolloutsPath),
    qualitySummary: qualitySummaryPathFor(rolloutsPath),
  };
}

export function qualitySummaryPathFor(rolloutsPath: string): string {
  return sibling(rolloutsPath, '_quality_summary.json');
}

export function statusPathFor(rolloutsPath: string): string {
  return sibling(rolloutsPath, '_status.json');
}

export function failuresPathFor(rolloutsPath: string): string {
  return sibling(rolloutsPath, '_failures.jsonl');
}

export function materializedInputsPathFor(rolloutsPath: string): string {
  return sibling(rolloutsPath, '_materialized_inputs.jsonl');
}

export function profilePaths(rolloutsPath: string): { rewardProfiling: string; agentMetrics: string } {
  return {
    rewardProfiling: sibling(rolloutsPath, '_reward_profiling.jsonl'),
    agentMetrics: sibling(rolloutsPath, '_agent_metrics.json'),
  };
}

/** Files the collector and profiler write beside a rollouts file: never shards themselves. */
export const DERIVED_SUFFIXES = [
  '_failures.jsonl',
  '_materialized_inputs.jsonl',
  '_reward_profiling.jsonl',
  '_quality_summary.json',
] as const;

export function isDerivedArtifact(file: string): boolean {
  return DERIVED_SUFFIXES.some((suffix) => path.basename(file).endsWith(suffix));
}

/** The output must be a file path whose directory exists or can be made: said before anything is read or sent. */
export function checkOutputPath(file: string, flag = '--output'): void {
  if (existsSync(file) && statSync(file).isDirectory()) {
    throw new ConfigError(
      `Output '${file}' (${flag}) is a directory; name a file in it, e.g. ${path.join(file, 'rollouts.jsonl')}.`,
      'GYM_CONFIG_OUTPUT',
    );
  }
  try {
    mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  } catch (err) {
    const reason = (err as NodeJS.ErrnoException).code ?? String(err);
    throw new ConfigError(
      `Cannot create the directory of the output '${file}' (${flag}): ${reason} (a part of the path is a file, or it is not writable). Choose another ${flag} path.`,
      'GYM_CONFIG_OUTPUT',
    );
  }
}
