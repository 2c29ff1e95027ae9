import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { REPO } from './gym.js';
import { stopAll } from './procs.js';
import { printTable, writeResults, type Figure, type ScenarioReport } from './report.js';
import { bigTrajectories, startUp, versusBaseline } from './footprint.js';
import { latencyBound, overheadAndMemory } from './overhead.js';
import type { BenchContext } from './scenario-kit.js';
import { BASELINE_COMMIT, buildBaseline } from './baseline.js';
import { queueScaleOut } from './queue.js';
import { startService } from './service.js';
import { summarizeProfiles } from './profile.js';
import { shellSandboxes } from './shell.js';
import { tracingCost } from './tracing.js';
import { modelServerCost } from './model-server.js';

/**
 * `npm run bench`: the performance scenarios, side by side, in one command. Prints a table and writes
 * `bench/results/latest.json`. It reports; it never fails a build (exit 0 unless the bench itself broke).
 *
 *   node dist/bench/run.js [--only 1,3] [--profile] [--baseline <git rev>]
 *
 * `--only` runs a subset (5 runs inside 1's environment; `--only 7` is the queue scenario alone) and writes bench/results/partial.json instead.
 * `--baseline` pins scenario 8's baseline to another commit (default: bench/baseline.ts's BASELINE_COMMIT).
 * `--profile` runs scenario 1 with V8's CPU profiler (what `node --cpu-prof` records; started by probe.ts, since
 * Node 20 refuses --cpu-prof in NODE_OPTIONS) in the collector, the agent, the environment and the supervisor,
 * writes the profiles to bench/results/profiles/ and prints the functions with the most self time (no results
 * file is written).
 */

const RESULTS = path.join(REPO, 'bench', 'results');
const log = (line: string): void => void process.stdout.write(`${line}\n`);

const SCENARIOS: Array<{
  id: string;
  title: string;
  run: (ctx: BenchContext, only: Set<string>) => Promise<ScenarioReport[]>;
}> = [
  {
    id: '1',
    title: '1. overhead vs floor (+ 5. memory vs input length)',
    run: (ctx, only) => overheadAndMemory(ctx, { withMemory: only.has('5') }),
  },
  { id: '2', title: '2. latency-bound scale', run: async (ctx) => [await latencyBound(ctx)] },
  { id: '3', title: '3. big trajectories', run: async (ctx) => [await bigTrajectories(ctx)] },
  { id: '4', title: '4. start-up', run: async (ctx) => [await startUp(ctx)] },
  { id: '6', title: '6. shell sandboxes', run: async (ctx) => [await shellSandboxes(ctx)] },
  {
    id: '7',
    title: '7. queue scale-out (direct vs gym worker through Redis)',
    run: async (ctx) => [await queueScaleOut(ctx)],
  },
  {
    id: '8',
    title: '8. CPU and memory vs the pinned baseline',
    run: async (ctx) => [
      await versusBaseline(
        ctx,
        buildBaseline(ctx.baselineRev, (line) => ctx.log(line)),
      ),
    ],
  },
  {
    id: '9',
    title: '9. tracing cost (OTLP export on vs off, and the off path itself)',
    run: async (ctx) => [await tracingCost(ctx)],
  },
  {
    id: '10',
    title: '10. model server (added latency per call; 2,000 captured rollouts in flight)',
    run: async (ctx) => [await modelServerCost(ctx)],
  },
];

const USAGE =
  'usage: node dist/bench/run.js [--only 1,3] [--profile] [--baseline <git rev>] (npm run bench runs every scenario)';

/** The command line, or why it is refused (printed with the usage line; nothing is started). */
function options(): { only?: string; profile?: boolean; baseline?: string } | string {
  let values;
  try {
    ({ values } = parseArgs({
      options: { only: { type: 'string' }, profile: { type: 'boolean' }, baseline: { type: 'string' } },
    }));
  } catch (err) {
    return (err as Error).message;
  }
  const known = new Set([...SCENARIOS.map((scenario) => scenario.id), '5']);
  const unknown = (values.only ?? '').split(',').filter((id) => values.only !== undefined && !known.has(id.trim()));
  if (unknown.length > 0) {
    // Quoted, so an empty id (`--only 1,`) reads as one rather than as nothing.
    const named = unknown.map((id) => `'${id.trim()}'`).join(', ');
    return `--only ${values.only}: no scenario ${named} (the scenarios are ${[...known].sort((a, b) => Number(a) - Number(b)).join(', ')})`;
  }
  return values;
}

async function main(): Promise<number> {
  const values = options();
  if (typeof values === 'string') {
    process.stderr.write(`bench: ${values}\n${USAGE}\n`);
    return 2;
  }
  const only = new Set(
    (values.only ?? (values.profile ? '1' : '1,2,3,4,5,6,7,8,9,10')).split(',').map((id) => id.trim()),
  );
  const startedAt = Date.now();
  const workDir = mkdtempSync(path.join(os.tmpdir(), 'tsgym-bench-'));
  const profileDir = values.profile ? path.join(RESULTS, 'profiles') : undefined;
  if (profileDir) {
    rmSync(profileDir, { recursive: true, force: true });
    mkdirSync(profileDir, { recursive: true });
  }
  const figures: Figure[] = [];
  const notes: string[] = [];
  try {
    const service = await startService({ steps: 4, itemBytes: 0, delayMs: 0 });
    const ctx: BenchContext = {
      workDir,
      service,
      log,
      baselineRev: values.baseline ?? BASELINE_COMMIT,
      ...(profileDir ? { profileDir } : {}),
    };
    for (const scenario of SCENARIOS) {
      if (!only.has(scenario.id) && !(scenario.id === '1' && only.has('5'))) continue;
      log(`== ${scenario.title}`);
      const scenarioStart = Date.now();
      try {
        for (const report of await scenario.run(ctx, only)) {
          figures.push(...report.figures);
          notes.push(...report.notes);
        }
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        log(`  FAILED: ${message}`);
        figures.push({
          name: scenario.title,
          figure: 'did not complete',
          value: Number.NaN,
          target: 'completes',
          met: false,
          context: { error: message.slice(0, 2000) },
        });
      }
      log(`  (${((Date.now() - scenarioStart) / 1000).toFixed(0)} s)`);
    }
  } finally {
    await stopAll();
    rmSync(workDir, { recursive: true, force: true });
  }

  if (profileDir) {
    const summary = summarizeProfiles(profileDir, REPO);
    writeFileSync(path.join(RESULTS, 'profile-summary.txt'), `${summary.join('\n')}\n`);
    log('');
    for (const line of summary) log(line);
    log(
      `\nProfiles: ${profileDir} (open in Chrome DevTools → Performance); summary: bench/results/profile-summary.txt`,
    );
    return 0;
  }

  const durationS = (Date.now() - startedAt) / 1000;
  log('');
  printTable(figures, log);
  log('');
  for (const note of notes) log(note);
  log(
    `\n${os.cpus().length} CPUs, node ${process.version}, load average ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}; ${durationS.toFixed(0)} s in all`,
  );
  // A partial run (--only) must not replace the full results the docs quote.
  const resultsFile = values.only === undefined ? 'latest.json' : 'partial.json';
  writeResults(path.join(RESULTS, resultsFile), {
    scenarios: figures,
    notes,
    machine: {
      cpus: os.cpus().length,
      cpu_model: os.cpus()[0]?.model ?? 'unknown',
      node: process.version,
      load_average: os.loadavg(),
    },
    finished_at: new Date().toISOString(),
    duration_s: Math.round(durationS),
  });
  log(`Wrote bench/results/${resultsFile}`);
  return 0;
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    log(`\n${signal}: stopping every process the bench started…`);
    void stopAll().finally(() => process.exit(130));
  });
}

main().then(
  (code) => (process.exitCode = code),
  async (err) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? err.stack : String(err)}\n`);
    await stopAll();
    process.exitCode = 1;
  },
);
