import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** One figure of one scenario, as written to `bench/results/latest.json`. */
export interface Figure {
  name: string;
  figure: string;
  value: number;
  /** The comparison the value must pass, e.g. `>= 0.7`. */
  target: string;
  met: boolean;
  /** Absolute numbers behind the figure, for context only. */
  context?: Record<string, number | string | boolean>;
}

export interface ScenarioReport {
  figures: Figure[];
  /** Lines printed under the table (absolute times, side-by-side numbers). */
  notes: string[];
}

export function atLeast(
  name: string,
  figure: string,
  value: number,
  target: number,
  context?: Figure['context'],
): Figure {
  return {
    name,
    figure,
    value: round(value),
    target: `>= ${target}`,
    met: value >= target,
    ...(context ? { context } : {}),
  };
}

export function atMost(
  name: string,
  figure: string,
  value: number,
  target: number,
  context?: Figure['context'],
): Figure {
  return {
    name,
    figure,
    value: round(value),
    target: `<= ${target}`,
    met: value <= target,
    ...(context ? { context } : {}),
  };
}

export function round(value: number, digits = 3): number {
  return Number(value.toFixed(digits));
}

export function printTable(figures: readonly Figure[], out: (line: string) => void): void {
  const rows = [
    ['Scenario', 'Figure', 'Value', 'Target', 'Met'],
    ...figures.map((f) => [f.name, f.figure, String(f.value), f.target, f.met ? 'yes' : 'NO']),
  ];
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  const line = (row: string[]): string => `| ${row.map((cell, column) => cell.padEnd(widths[column]!)).join(' | ')} |`;
  out(line(rows[0]!));
  out(`|${widths.map((width) => '-'.repeat(width + 2)).join('|')}|`);
  for (const row of rows.slice(1)) out(line(row));
}

export function writeResults(file: string, result: Record<string, unknown>): void {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
}
