/**
 * Deciding with numbers, end to end: real `gym eval run` collections of counter tasks (the counter environment and
 * the remote agent started by the command) drive two scripted services of different skill; then `gym eval profile`
 * and `gym eval compare` read what the runs wrote, and scipy, given the same rewards from the same files, must agree
 * with every interval, pass^k and McNemar p to 1e-9.
 */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { findFreePort } from '../config/index.js';
import { seededRandom } from '../seeded-random.js';
import { functionCall, startScriptedService, toolAsk, toolOutputsIn, type ScriptedService } from '../testing/index.js';
import { readJsonl, runGym, tempDir, writeJsonl } from '../../test/support/cli.js';
import { addendsOf, solveCounterTask } from '../../test/support/live-run.js';
import { runScipy } from '../../test/support/scipy.js';
import type { Comparison } from './compare.js';

const TASKS = 14;
const SEED = 4242;
const TOLERANCE = 1e-9;
const services: ScriptedService[] = [];
const dir = tempDir('tsgym-compare-');
after(async () => {
  for (const service of services) await service.close();
});

/** Counter tasks "add a then add b then get the count", each with its expected count. */
function writeTasks(file: string): void {
  const parameters = (properties: Record<string, unknown>) => ({
    type: 'object',
    properties,
    required: Object.keys(properties),
    additionalProperties: false,
  });
  const tools = [
    {
      type: 'function',
      name: 'increment_counter',
      strict: true,
      parameters: parameters({ count: { type: 'integer' } }),
    },
    { type: 'function', name: 'get_counter_value', strict: true, parameters: parameters({}) },
  ];
  writeJsonl(
    file,
    Array.from({ length: TASKS }, (_, t) => ({
      responses_create_params: {
        input: [{ role: 'user', content: `add ${t + 1} then add ${2 * t + 3} then get the count` }],
        tools,
      },
      initial_count: t,
      expected_count: t + (t + 1) + (2 * t + 3),
      difficulty: t % 3 === 0 ? 'hard' : 'easy',
    })),
  );
}

/**
 * A service that solves a task with probability `skill`: whether its n-th attempt at a task is right is a seeded draw
 * from (task, n), so each task's set of rewards is fixed whatever order the repeats run in. A wrong attempt adds one
 * too many on its first step, so the environment's count (what it verifies) is off.
 */
async function serviceOfSkill(skill: number): Promise<ScriptedService> {
  const attempts = new Map<number, number>();
  const service = await startScriptedService((call) => {
    const answer = solveCounterTask(call);
    if (toolOutputsIn(call.body.input).length > 0) return answer;
    const first = addendsOf(call)[0]!;
    const n = attempts.get(first) ?? 0;
    attempts.set(first, n + 1);
    if (seededRandom(SEED + 1000 * first + n)() < skill) return answer;
    return toolAsk(functionCall('increment_counter', { count: first + 1 }, 'c_0'));
  });
  services.push(service);
  return service;
}

async function collect(name: string, skill: number, repeats: number): Promise<string> {
  const service = await serviceOfSkill(skill);
  const output = path.join(dir, name, 'rollouts.jsonl');
  const res = await runGym(
    [
      'eval',
      'run',
      '+config_paths=[counter_remote.yaml]',
      `++remote_agent.responses_api_agents.remote_agent.agent_base_url=${service.url}`,
      `++head_server.port=${await findFreePort()}`,
      '-a',
      'remote_agent',
      '-i',
      path.join(dir, 'tasks.jsonl'),
      '-o',
      output,
      '--num-repeats',
      String(repeats),
    ],
    { cwd: dir },
  );
  assert.equal(res.code, 0, `${res.stdout}\n${res.stderr}`);
  return output;
}

/** Per task index, the rewards a rollouts file holds. */
function rewardsByTask(file: string): number[][] {
  const tasks: number[][] = Array.from({ length: TASKS }, () => []);
  for (const row of readJsonl(file)) tasks[row._ng_task_index as number]!.push(row.reward as number);
  const empty = tasks.flatMap((rewards, t) => (rewards.length === 0 ? [t] : []));
  assert.deepEqual(empty, [], `every task has a rollout in ${file}`);
  return tasks;
}

function close(actual: unknown, expected: number, what: string): void {
  assert.equal(typeof actual, 'number', `${what} is a number`);
  assert.ok(Math.abs((actual as number) - expected) <= TOLERANCE, `${what}: ${String(actual)} vs scipy ${expected}`);
}

const T_INTERVAL = `from scipy import stats
import numpy as np
def t_interval(x):
    x = np.array(x, dtype=float)
    half = stats.t.ppf(0.975, len(x) - 1) * stats.sem(x)
    return [float(x.mean() - half), float(x.mean() + half), float(stats.sem(x))]
`;

const runs: Record<string, string> = {};
before(async () => {
  writeTasks(path.join(dir, 'tasks.jsonl'));
  console.log(`seed ${SEED}`);
  runs.weak = await collect('weak', 0.45, 4);
  runs.strong = await collect('strong', 0.85, 4);
  runs.weakOnce = await collect('weak-once', 0.4, 1);
  runs.strongOnce = await collect('strong-once', 0.9, 1);
});

test('gym eval profile: the reward interval clustered by task and pass^k agree with scipy on the run it profiled', async () => {
  const res = await runGym(['eval', 'profile', '--rollouts', runs.strong!, '--json', '--group-by', 'difficulty'], {
    cwd: dir,
  });
  assert.equal(res.code, 0, res.stderr);
  const agent = (JSON.parse(res.stdout) as { agents: Array<Record<string, unknown>> }).agents[0]!;
  const tasks = rewardsByTask(runs.strong!);
  const hardTasks = tasks.filter((_, t) => t % 3 === 0);
  const expected = runScipy(
    `${T_INTERVAL}
from scipy.special import comb
tasks, hard = json.load(sys.stdin)
means = [sum(t) / len(t) for t in tasks]
out = {"ci": t_interval(means), "hard": t_interval([sum(t) / len(t) for t in hard])}
for k in range(1, 5):
    out[f"pass^{k}"] = 100 * sum(comb(t.count(1), k, exact=True) / comb(len(t), k, exact=True) for t in tasks) / len(tasks)
print(json.dumps(out))`,
    [tasks, hardTasks],
  ) as { ci: number[]; hard: number[] } & Record<string, number>;
  const ci = agent['ci95/reward'] as number[];
  assert.ok(ci[0]! < ci[1]!, 'the seeded run has failures, so the interval has width');
  close(ci[0], expected.ci[0]!, 'ci95/reward low');
  close(ci[1], expected.ci[1]!, 'ci95/reward high');
  close(agent['stderr/reward'], expected.ci[2]!, 'stderr/reward');
  assert.equal(agent.num_tasks, TASKS);
  assert.equal(agent.num_rollouts, TASKS * 4);
  for (let k = 1; k <= 4; k++) close(agent[`pass^${k}/accuracy`], expected[`pass^${k}`]!, `pass^${k}/accuracy`);
  const hard = agent['hard/ci95/reward'] as number[];
  close(hard[0], expected.hard[0]!, 'hard/ci95/reward low');
  close(hard[1], expected.hard[1]!, 'hard/ci95/reward high');
  assert.equal(agent['hard/num_tasks'], hardTasks.length);

  const text = await runGym(['eval', 'profile', '--rollouts', runs.strong!, '--bootstrap', '500', '--seed', '3'], {
    cwd: dir,
  });
  assert.equal(text.code, 0, text.stderr);
  assert.match(
    text.stdout,
    /reward 95% CI \[0\.\d+, [01](\.\d+)?\] \(Student t over 14 task means, standard error 0\.\d+\); bootstrap \[/,
  );
  const written = JSON.parse(
    readFileSync(path.join(path.dirname(runs.strong!), 'rollouts_agent_metrics.json'), 'utf8'),
  ) as Array<Record<string, unknown>>;
  assert.ok(Array.isArray(written[0]!['ci95_bootstrap/reward']), 'the bootstrap interval is in the agent metrics file');
});

test('gym eval compare: the paired interval, flips and verdict agree with scipy; --fail-on worse gates the exit code', async () => {
  const jsonFile = path.join(dir, 'compare.json');
  const res = await runGym(['eval', 'compare', runs.weak!, runs.strong!, '--json', jsonFile], { cwd: dir });
  assert.equal(res.code, 0, res.stderr);
  const result = JSON.parse(readFileSync(jsonFile, 'utf8')) as Comparison;
  const weak = rewardsByTask(runs.weak!);
  const strong = rewardsByTask(runs.strong!);
  const expected = runScipy(
    `${T_INTERVAL}
a, b = json.load(sys.stdin)
d = [sum(y) / len(y) - sum(x) / len(x) for x, y in zip(a, b)]
print(json.dumps({"mean": sum(d) / len(d), "ci": t_interval(d),
  "improved": [i for i, v in enumerate(d) if v > 1e-9], "regressed": [i for i, v in enumerate(d) if v < -1e-9]}))`,
    [weak, strong],
  ) as { mean: number; ci: number[]; improved: number[]; regressed: number[] };
  assert.equal(result.tasks_paired, TASKS);
  close(result.difference.mean, expected.mean, 'difference mean');
  close(result.difference.ci95![0], expected.ci[0]!, 'difference ci95 low');
  close(result.difference.ci95![1], expected.ci[1]!, 'difference ci95 high');
  assert.deepEqual(result.flips.improved.tasks, expected.improved);
  assert.deepEqual(result.flips.regressed.tasks, expected.regressed);
  const verdict = expected.ci[0]! > 0 ? 'better' : expected.ci[1]! < 0 ? 'worse' : 'inconclusive';
  assert.equal(result.verdict, verdict);
  assert.equal(verdict, 'better', 'the stronger service wins clearly on these seeded runs');
  assert.match(res.stdout, /Verdict: better \(margin 0\)/);
  assert.ok('not_applicable' in result.mcnemar && /has 4 rollouts/.test(result.mcnemar.not_applicable));

  // Swapped, the candidate is worse: only --fail-on worse makes that a failing exit.
  const swapped = await runGym(['eval', 'compare', runs.strong!, runs.weak!], { cwd: dir });
  assert.equal(swapped.code, 0, 'the verdict alone never fails the command');
  assert.match(swapped.stdout, /Verdict: worse/);
  const gated = await runGym(['eval', 'compare', runs.strong!, runs.weak!, '--fail-on', 'worse'], { cwd: dir });
  assert.equal(gated.code, 1, gated.stdout);
  // A margin wider than the whole difference makes any verdict inconclusive.
  const wide = await runGym(['eval', 'compare', runs.weak!, runs.strong!, '--margin', '0.99'], { cwd: dir });
  assert.match(wide.stdout, /Verdict: inconclusive \(margin 0\.99\)/);
});

test("gym eval compare: one 0/1 rollout per task gets McNemar's exact test, as scipy computes it", async () => {
  const jsonFile = path.join(dir, 'compare-once.json');
  const res = await runGym(['eval', 'compare', runs.weakOnce!, runs.strongOnce!, '--json', jsonFile], { cwd: dir });
  assert.equal(res.code, 0, res.stderr);
  const result = JSON.parse(readFileSync(jsonFile, 'utf8')) as Comparison;
  const a = rewardsByTask(runs.weakOnce!).map((t) => t[0]!);
  const b = rewardsByTask(runs.strongOnce!).map((t) => t[0]!);
  const regressed = a.filter((x, i) => x === 1 && b[i] === 0).length;
  const improved = a.filter((x, i) => x === 0 && b[i] === 1).length;
  const p = runScipy(
    `from scipy import stats
b, c = json.load(sys.stdin)
print(json.dumps(1.0 if b + c == 0 else float(stats.binomtest(min(b, c), b + c, 0.5).pvalue)))`,
    [regressed, improved],
  ) as number;
  assert.ok(improved > 0, 'the seeded runs disagree on some task, so the test has discordant pairs to count');
  const mcnemar = result.mcnemar;
  assert.ok('p_value' in mcnemar, JSON.stringify(mcnemar));
  assert.equal(mcnemar.regressed, regressed);
  assert.equal(mcnemar.improved, improved);
  close(mcnemar.p_value, p, 'McNemar p');
  assert.match(res.stdout, /McNemar exact test: \d+ improved, \d+ regressed, p = /);
});

test('gym eval compare: tasks in one run only are counted and named, and a bad file is one clear error', async () => {
  const partial = path.join(dir, 'partial', 'rollouts.jsonl');
  mkdirSync(path.dirname(partial), { recursive: true });
  writeJsonl(
    partial,
    readJsonl(runs.strong!).filter((row) => (row._ng_task_index as number) < 10),
  );
  const res = await runGym(['eval', 'compare', runs.weak!, partial], { cwd: dir });
  assert.equal(res.code, 0, res.stderr);
  assert.match(res.stdout, /Tasks paired: 10; only in the baseline: 4; only in the candidate: 0\./);
  assert.match(res.stdout, /only in the baseline: 10, 11, 12, 13/);

  const broken = path.join(dir, 'broken.jsonl');
  writeJsonl(broken, [{ reward: 1 }]);
  const bad = await runGym(['eval', 'compare', runs.weak!, broken], { cwd: dir });
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /broken\.jsonl:1: the row has no valid _ng_task_index\/_ng_rollout_index/);
  assert.doesNotMatch(bad.stderr, /\n\s+at /, 'no stack trace');
  const missing = await runGym(['eval', 'compare', runs.weak!, path.join(dir, 'nope.jsonl')], { cwd: dir });
  assert.match(missing.stderr, /The candidate rollouts file '.*nope\.jsonl' does not exist/);
  const wrongGate = await runGym(['eval', 'compare', runs.weak!, runs.strong!, '--fail-on', 'better'], { cwd: dir });
  assert.match(wrongGate.stderr, /--fail-on takes 'worse'/);
});

test('gym eval compare: a paired task whose dataset row differs (apart from the prompt) is named in a warning', async () => {
  const same = await runGym(['eval', 'compare', runs.weak!, runs.strong!, '--json', path.join(dir, 'same.json')], {
    cwd: dir,
  });
  const sameResult = JSON.parse(readFileSync(path.join(dir, 'same.json'), 'utf8')) as Comparison;
  assert.equal(sameResult.tasks_with_different_rows.count, 0, 'both runs read one dataset');
  assert.doesNotMatch(same.stdout, /Warning/);

  const other = path.join(dir, 'other', 'rollouts.jsonl');
  mkdirSync(path.dirname(other), { recursive: true });
  writeJsonl(other, readJsonl(runs.strong!));
  const inputs = readJsonl(runs.strong!.replace('.jsonl', '_materialized_inputs.jsonl')).map((row) =>
    // Task 2 is another task here: its expected count differs. A changed prompt alone would not count.
    row._ng_task_index === 2
      ? { ...row, expected_count: 999 }
      : { ...row, responses_create_params: { input: 'a reworded prompt' } },
  );
  writeJsonl(other.replace('.jsonl', '_materialized_inputs.jsonl'), inputs);
  const res = await runGym(['eval', 'compare', runs.weak!, other, '--json', path.join(dir, 'other.json')], {
    cwd: dir,
  });
  assert.equal(res.code, 0, res.stderr);
  const result = JSON.parse(readFileSync(path.join(dir, 'other.json'), 'utf8')) as Comparison;
  assert.deepEqual(result.tasks_with_different_rows, { count: 1, tasks: [2] });
  assert.match(
    res.stdout,
    /Warning: 1 paired tasks have different dataset rows in the two runs \(apart from the prompt\): 2\./,
  );
});
