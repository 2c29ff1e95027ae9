/**
 * The rollout health line on a run's index page: from `<stem>_quality_summary.json` when it is at least as new as the
 * run's files (what `gym eval run` and `gym eval health` write), else computed here from the files — read-only,
 * streamed (src/health/), one computation at a time, and again only once the files have changed.
 */
import { readFile, stat } from 'node:fs/promises';
import { isPlainObject } from '../config/types.js';
import { checkHealth, healthLine, runHealthFiles, type HealthCounts } from '../health/health.js';
import { failuresPathFor, qualitySummaryPathFor } from '../runfiles/paths.js';

/** How long a page waits for a computation before it shows that one is under way (the next load shows the line). */
const WAIT_MS = 1000;

async function mtimeAndSize(file: string): Promise<{ mtimeMs: number; size: number } | undefined> {
  try {
    const info = await stat(file);
    return { mtimeMs: info.mtimeMs, size: info.size };
  } catch {
    return undefined;
  }
}

function countsOf(value: unknown): HealthCounts | undefined {
  if (!isPlainObject(value) || !isPlainObject(value.checks)) return undefined;
  const { checked, healthy, unhealthy } = value;
  if (typeof checked !== 'number' || typeof healthy !== 'number' || typeof unhealthy !== 'number') return undefined;
  const checks: HealthCounts['checks'] = {};
  for (const [name, result] of Object.entries(value.checks)) {
    if (isPlainObject(result) && typeof result.count === 'number')
      checks[name as keyof HealthCounts['checks']] = { count: result.count };
  }
  return { checked, healthy, unhealthy, checks };
}

export class RunHealthLine {
  private computed: { stamp: string; line: string } | undefined;
  private running: Promise<void> | undefined;

  constructor(private readonly rolloutsPath: string) {}

  /** The line to show, or a note that it is being computed; a problem reading the files is said, never thrown. */
  async line(): Promise<string> {
    const rollouts = await mtimeAndSize(this.rolloutsPath);
    const failures = await mtimeAndSize(failuresPathFor(this.rolloutsPath));
    const saved = await this.saved(Math.max(rollouts?.mtimeMs ?? 0, failures?.mtimeMs ?? 0));
    if (saved !== undefined) return saved;
    const stamp = JSON.stringify([rollouts, failures]);
    if (this.computed?.stamp === stamp) return this.computed.line;
    // One computation at a time: one still going on for older files finishes first, the next load starts anew.
    const running = this.running ?? this.start(stamp);
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<void>((resolve) => (timer = setTimeout(resolve, WAIT_MS)));
    await Promise.race([running, waited]).finally(() => clearTimeout(timer));
    if (this.computed?.stamp === stamp) return this.computed.line;
    return this.computed
      ? `${this.computed.line} (as of an earlier read; the files changed since — reload)`
      : 'Rollout health: checking the files… (reload)';
  }

  /** The saved summary's line when it is no older than the newest of the run's files. */
  private async saved(newestMs: number): Promise<string | undefined> {
    const file = qualitySummaryPathFor(this.rolloutsPath);
    const info = await mtimeAndSize(file);
    if (!info || info.mtimeMs < newestMs) return undefined;
    try {
      const counts = countsOf(JSON.parse(await readFile(file, 'utf8')));
      return counts && healthLine(counts);
    } catch {
      return undefined;
    }
  }

  private start(stamp: string): Promise<void> {
    const done = checkHealth(runHealthFiles(this.rolloutsPath)).then(
      (summary) => {
        this.computed = { stamp, line: healthLine(summary) };
      },
      (err: unknown) => {
        const reason = err instanceof Error ? err.message : String(err);
        this.computed = { stamp, line: `Rollout health: not checked (${reason})` };
      },
    );
    this.running = done.finally(() => (this.running = undefined));
    return this.running;
  }
}
