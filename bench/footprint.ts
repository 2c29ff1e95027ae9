import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { startGym, type RunningGym } from './gym.js';
import { atMost, round, type ScenarioReport } from './report.js';
import type { ServiceOptions } from './service.js';
import type { Baseline } from './baseline.js';
import {
  collectAll,
  COUNTER,
  cpuByProcess,
  dataset,
  MIB,
  perSecond,
  tsgymCpuMs,
  tsgymIoBytes,
  type BenchContext,
} from './scenario-kit.js';

/**
 * Scenarios 3, 4 and 8: what tsgym costs in CPU and memory as trajectories grow (3), to start (4), and next to a
 * pinned older commit of itself (8).
 */

/** Scenario 3: 20-step rollouts whose every step carries a 200 KB reasoning item. */
export async function bigTrajectories(ctx: BenchContext): Promise<ScenarioReport> {
  const name = '3. big trajectories';
  const ROLLOUTS = 500;
  const BIG_ROLLOUTS = 150;
  const CONCURRENCY = 32;
  const BIG = 200_000;
  await ctx.service.configure(COUNTER);
  const gym = await startGym({
    serviceUrl: ctx.service.url,
    concurrency: CONCURRENCY,
    workDir: path.join(ctx.workDir, 'env-big'),
  });
  try {
    const input = await dataset(ctx, ROLLOUTS);
    const measure = async (label: string, rollouts: number, options: ServiceOptions) => {
      await ctx.service.configure(options);
      const before = gym.sample();
      const run = await collectAll(ctx, gym, input, rollouts, CONCURRENCY, label, rollouts);
      const after = gym.sample();
      const result = {
        wallMs: run.wallMs,
        rollouts,
        cpuMs: tsgymCpuMs(before, after, run),
        ioBytes: tsgymIoBytes(before, after, run),
        // VmHWM only grows: each run's reading is the peak so far, and the runs go from small to large.
        agentRss: after.agent.peakRssMiB,
        // One line per finished rollout: the mean line is the size of one finished trajectory.
        trajectoryBytes: run.outputBytes / rollouts,
      };
      ctx.log(
        `  ${label}: ${rollouts} rollouts in ${(run.wallMs / 1000).toFixed(1)} s, tsgym CPU ${(result.cpuMs / 1000).toFixed(1)} s, ${(result.ioBytes / MIB).toFixed(0)} MiB moved, agent peak RSS ${result.agentRss.toFixed(0)} MiB`,
      );
      return result;
    };
    const small = await measure('small items, 20 steps', ROLLOUTS, { steps: 20, itemBytes: 200, delayMs: 0 });
    // The big-item runs take fewer rollouts: every figure they give is per byte or per rollout in flight, and 150
    // rollouts at 32 in flight are five waves, past the first. 500 of them move 34.5 GiB, minutes of CPU on a VM
    // where each large allocation is page-faulted afresh (see bench/README.md, "Large values").
    const big10 = await measure('200 KB items, 10 steps', BIG_ROLLOUTS, { steps: 10, itemBytes: BIG, delayMs: 0 });
    const big = await measure('200 KB items, 20 steps', BIG_ROLLOUTS, { steps: 20, itemBytes: BIG, delayMs: 0 });
    const costPerByte = (run: typeof big): number => run.cpuMs / run.ioBytes;
    const rssGrowth = (big.agentRss - small.agentRss) / (big10.agentRss - small.agentRss);
    const throughput = (run: typeof big): number => perSecond(run.rollouts, run.wallMs);
    return {
      figures: [
        atMost(name, 'CPU per byte moved, 20 steps ÷ 10 steps', costPerByte(big) / costPerByte(big10), 1.25, {
          mib_moved_10_steps: round(big10.ioBytes / MIB, 0),
          mib_moved_20_steps: round(big.ioBytes / MIB, 0),
          cpu_s_10_steps: round(big10.cpuMs / 1000, 1),
          cpu_s_20_steps: round(big.cpuMs / 1000, 1),
          throughput_big_over_small: round(throughput(big) / throughput(small)),
          small_rollouts_per_s: round(throughput(small), 1),
          big_rollouts_per_s: round(throughput(big), 1),
        }),
        // Twice the trajectory bytes should cost about twice the memory above the small-item run, ×4 if it grew
        // with bytes × steps; peaks depend on GC timing, so the bound sits between the two.
        atMost(name, 'agent peak RSS above small items, 20 ÷ 10 steps', rssGrowth, 3, {
          agent_rss_small_mib: round(small.agentRss, 0),
          agent_rss_10_steps_mib: round(big10.agentRss, 0),
          agent_rss_20_steps_mib: round(big.agentRss, 0),
        }),
        // Issue 15: what the agent holds should be about the trajectories in flight (each kept once as bytes, plus
        // one step body or verify exchange at a time), plus a fixed 100 MiB for the process itself. Co-located (D23),
        // the measured process holds the environment too: its handling of each /verify counts here as well.
        atMost(
          name,
          'agent peak RSS ÷ (2 × trajectories in flight + 100 MiB)',
          big.agentRss / ((2 * CONCURRENCY * big.trajectoryBytes) / MIB + 100),
          1,
          {
            agent_rss_mib: round(big.agentRss, 0),
            trajectories_in_flight_mib: round((CONCURRENCY * big.trajectoryBytes) / MIB, 1),
            trajectory_kib: round(big.trajectoryBytes / 1024, 0),
          },
        ),
      ],
      notes: [
        `3: 20 steps at ${CONCURRENCY} in flight: small items ${throughput(small).toFixed(1)} rollouts/s (${ROLLOUTS} rollouts), 200 KB items ${throughput(big).toFixed(1)} rollouts/s (${BIG_ROLLOUTS} rollouts, ${(big.wallMs / 1000).toFixed(0)} s)`,
        `3: tsgym CPU per MiB moved: ${((big10.cpuMs / big10.ioBytes) * MIB).toFixed(2)} ms at 10 steps, ${((big.cpuMs / big.ioBytes) * MIB).toFixed(2)} ms at 20 steps (${(big.ioBytes / MIB / 1024).toFixed(1)} GiB moved; the protocol re-sends the conversation every step)`,
        `3: agent peak RSS ${small.agentRss.toFixed(0)} MiB (small items), ${big10.agentRss.toFixed(0)} MiB (10 × 200 KB), ${big.agentRss.toFixed(0)} MiB (20 × 200 KB) with ${CONCURRENCY} rollouts in flight`,
      ],
    };
  } finally {
    await gym.stop();
  }
}

// ---------------------------------------------------------------------------------------------------

/** Scenario 4: `gym env start` to its ready line, against `node -e 0`. */
export async function startUp(ctx: BenchContext): Promise<ScenarioReport> {
  const name = '4. start-up';
  const TRIES = 3;
  const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  const nodeMs: number[] = [];
  const gymMs: number[] = [];
  for (let i = 0; i < TRIES; i++) {
    const startedAt = performance.now();
    spawnSync(process.execPath, ['-e', '0'], { timeout: 10_000 });
    nodeMs.push(performance.now() - startedAt);
    const gym = await startGym({
      serviceUrl: ctx.service.url,
      concurrency: 64,
      workDir: path.join(ctx.workDir, `env-startup-${i}`),
    });
    gymMs.push(gym.startupMs);
    await gym.stop();
  }
  const ratio = median(gymMs) / median(nodeMs);
  return {
    figures: [
      atMost(name, 'gym env start to ready ÷ node -e 0', ratio, 10, {
        gym_env_start_ms: round(median(gymMs), 0),
        node_e_0_ms: round(median(nodeMs), 0),
      }),
    ],
    notes: [
      `4: gym env start (counter + remote agent) ready in ${median(gymMs).toFixed(0)} ms; node -e 0 takes ${median(nodeMs).toFixed(0)} ms (medians of ${TRIES})`,
    ],
  };
}

// ---------------------------------------------------------------------------------------------------

/**
 * Scenario 8: tsgym against a pinned older commit of itself (bench/baseline.ts), on issue 15's workload — 2,000
 * counter rollouts at concurrency 32 — alternating baseline and current three times. CPU per rollout is every
 * tsgym process's CPU (collector, agent, environment, `gym env start`); memory is each process's peak RSS.
 */
export async function versusBaseline(ctx: BenchContext, baseline: Baseline): Promise<ScenarioReport> {
  const name = '8. vs baseline';
  const ROLLOUTS = 2_000;
  // TSGYM_BENCH_WARM_UP: rollouts each side runs before the measured rounds (500 by default). A fresh server keeps
  // compiling for thousands of rollouts (bench/README.md, "What holds the targets back"); 8,000 measures both sides
  // at their steady state.
  const WARM_UP = Number(process.env.TSGYM_BENCH_WARM_UP ?? 500);
  const CONCURRENCY = 32;
  const ROUNDS = 3;
  await ctx.service.configure(COUNTER);
  const sides = { baseline: baseline.root, current: undefined } as const;
  const gyms: Record<keyof typeof sides, RunningGym> = {} as Record<keyof typeof sides, RunningGym>;
  try {
    for (const side of Object.keys(sides) as Array<keyof typeof sides>) {
      const root = sides[side];
      gyms[side] = await startGym({
        serviceUrl: ctx.service.url,
        concurrency: CONCURRENCY,
        workDir: path.join(ctx.workDir, `env-${side}`),
        ...(root ? { root } : {}),
      });
    }
    const input = await dataset(ctx, ROLLOUTS);
    // A warm-up per side first: a fresh server's first rollouts run on V8's baseline tiers.
    for (const side of Object.keys(sides) as Array<keyof typeof sides>) {
      const root = sides[side];
      for (let left = WARM_UP; left > 0; left -= ROLLOUTS) {
        const rollouts = Math.min(left, ROLLOUTS);
        await collectAll(ctx, gyms[side], input, rollouts, CONCURRENCY, `${side}-warm-up`, rollouts, root);
      }
    }
    const cpu: Record<keyof typeof sides, number[]> = { baseline: [], current: [] };
    const collectorPeak: Record<keyof typeof sides, number> = { baseline: 0, current: 0 };
    const split: Record<keyof typeof sides, Array<Record<string, number>>> = { baseline: [], current: [] };
    for (let i = 0; i < ROUNDS; i++) {
      for (const side of Object.keys(sides) as Array<keyof typeof sides>) {
        const gym = gyms[side];
        const before = gym.sample();
        const root = sides[side];
        const run = await collectAll(ctx, gym, input, ROLLOUTS, CONCURRENCY, `${side}-${i + 1}`, undefined, root);
        const byProcess = cpuByProcess(before, gym.sample(), run);
        cpu[side].push(Object.values(byProcess).reduce((a, b) => a + b, 0) / ROLLOUTS);
        split[side].push(byProcess);
        collectorPeak[side] = Math.max(collectorPeak[side], run.collector.peakRssMiB);
        ctx.log(
          `  round ${i + 1} ${side}: ${perSecond(ROLLOUTS, run.wallMs).toFixed(0)} rollouts/s, CPU ms/rollout ${Object.entries(
            byProcess,
          )
            .map(([key, ms]) => `${key} ${(ms / ROLLOUTS).toFixed(2)}`)
            .join(', ')}`,
        );
      }
    }
    const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
    const medianSplit = (side: keyof typeof sides): string => {
      const index = cpu[side].indexOf(median(cpu[side]));
      return Object.entries(split[side][index]!)
        .map(([key, ms]) => `${key} ${(ms / ROLLOUTS).toFixed(2)}`)
        .join(', ');
    };
    const peaks = (side: keyof typeof sides): Record<string, number> => {
      const sample = gyms[side].sample();
      return {
        supervisor: sample.supervisor.peakRssMiB,
        agent: sample.agent.peakRssMiB,
        environment: sample.environment.peakRssMiB,
        collector: collectorPeak[side],
      };
    };
    const total = (p: Record<string, number>): number => Object.values(p).reduce((a, b) => a + b, 0);
    const [basePeaks, currentPeaks] = [peaks('baseline'), peaks('current')];
    const describe = (p: Record<string, number>): string =>
      Object.entries(p)
        .map(([key, mib]) => `${key} ${mib.toFixed(0)}`)
        .join(', ');
    const cpuRatio = median(cpu.current) / median(cpu.baseline);
    return {
      figures: [
        atMost(name, `tsgym CPU per rollout ÷ baseline ${baseline.commit.slice(0, 7)}`, cpuRatio, 0.6, {
          current_ms: round(median(cpu.current)),
          baseline_ms: round(median(cpu.baseline)),
          round_ratios: cpu.current.map((ms, i) => round(ms / cpu.baseline[i]!)).join(' '),
          rollouts: ROLLOUTS,
          concurrency: CONCURRENCY,
        }),
        atMost(name, 'peak RSS, all tsgym processes (MiB)', total(currentPeaks), 320, {
          baseline_mib: round(total(basePeaks), 0),
          ...Object.fromEntries(Object.entries(currentPeaks).map(([key, mib]) => [`${key}_mib`, round(mib, 0)])),
        }),
        atMost(name, '`gym env start` peak RSS (MiB)', currentPeaks.supervisor!, 60, {
          baseline_mib: round(basePeaks.supervisor!, 0),
        }),
      ],
      notes: [
        `8: ${ROLLOUTS} rollouts at concurrency ${CONCURRENCY}, ${ROUNDS} alternating rounds: tsgym CPU ${median(cpu.current).toFixed(2)} ms/rollout (${medianSplit('current')}) vs baseline ${baseline.commit.slice(0, 7)} ${median(cpu.baseline).toFixed(2)} ms (${medianSplit('baseline')}), medians`,
        `8: peak RSS MiB: ${total(currentPeaks).toFixed(0)} (${describe(currentPeaks)}) vs baseline ${total(basePeaks).toFixed(0)} (${describe(basePeaks)})`,
      ],
    };
  } finally {
    await Promise.all(Object.values(gyms).map((gym) => gym.stop()));
  }
}
