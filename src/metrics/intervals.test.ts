import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runScipy } from '../../test/support/scipy.js';
import { seededRandom } from '../seeded-random.js';
import { bootstrapInterval, mcnemarExact, studentT, verdictOf } from './intervals.js';
import { computePassMajorityMetrics } from './pass-at-k.js';

const TOLERANCE = 1e-9;
const SEED = 20261205;

function close(actual: number, expected: number, what: string): void {
  assert.ok(Math.abs(actual - expected) <= TOLERANCE, `${what}: ${actual} vs scipy ${expected}`);
}

/** Samples of every shape the profile meets: binary, fractional, tiny, large, constant but for one value. */
function samples(): number[][] {
  const random = seededRandom(SEED);
  const binary = Array.from({ length: 40 }, () => (random() < 0.6 ? 1 : 0));
  const fractional = Array.from({ length: 17 }, () => Math.round(random() * 1000) / 1000);
  const quarters = Array.from({ length: 160 }, () => Math.floor(random() * 5) / 4);
  return [binary, fractional, quarters, [0, 1], [0.25, 0.5, 0.75], [1, 1, 1, 0], [3.5, -2, 10, 7, 7.25]];
}

test(`Student t intervals agree with scipy.stats.t to 1e-9 (seed ${SEED})`, () => {
  const cases = samples();
  const expected = runScipy(
    `from scipy import stats
import numpy as np
out = []
for xs in json.load(sys.stdin):
    x = np.array(xs, dtype=float)
    se = stats.sem(x)
    half = stats.t.ppf(0.975, len(x) - 1) * se
    out.append([float(x.mean()), float(se), float(x.mean() - half), float(x.mean() + half)])
print(json.dumps(out))`,
    cases,
  ) as number[][];
  cases.forEach((values, i) => {
    const estimate = studentT(values)!;
    const [m, se, low, high] = expected[i]!;
    close(estimate.mean, m!, `mean of case ${i}`);
    close(estimate.stderr!, se!, `stderr of case ${i}`);
    close(estimate.ci95![0], low!, `low of case ${i}`);
    close(estimate.ci95![1], high!, `high of case ${i}`);
    assert.equal(estimate.n, values.length);
  });
});

test("McNemar's exact p agrees with scipy.stats.binomtest to 1e-9", () => {
  const pairs = [
    [0, 0],
    [0, 1],
    [3, 3],
    [1, 9],
    [12, 4],
    [0, 25],
    [40, 55],
    [200, 260],
  ];
  const expected = runScipy(
    `from scipy import stats
print(json.dumps([1.0 if b + c == 0 else float(stats.binomtest(min(b, c), b + c, 0.5).pvalue) for b, c in json.load(sys.stdin)]))`,
    pairs,
  ) as number[];
  pairs.forEach(([b, c], i) => close(mcnemarExact(b!, c!), expected[i]!, `McNemar p for b=${b}, c=${c}`));
});

test('unbiased pass@k and pass^k agree with scipy.special.comb to 1e-9, tasks of unequal repeats included', () => {
  const random = seededRandom(SEED + 1);
  const tasks = Array.from({ length: 30 }, (_, t) =>
    Array.from({ length: 1 + (t % 6) }, () => (random() < 0.55 ? 1 : 0)),
  );
  const rows = tasks.map((rewards) => rewards.map((reward) => ({ reward })));
  const metrics = computePassMajorityMetrics(rows, { passHatK: true }).metrics;
  const expected = runScipy(
    `from scipy.special import comb
tasks = json.load(sys.stdin)
out = {}
for k in range(1, max(len(t) for t in tasks) + 1):
    eligible = [t for t in tasks if len(t) >= k]
    out[f"pass@{k}"] = 100 * sum(1 - comb(t.count(0), k, exact=True) / comb(len(t), k, exact=True) for t in eligible) / len(eligible)
    out[f"pass^{k}"] = 100 * sum(comb(t.count(1), k, exact=True) / comb(len(t), k, exact=True) for t in eligible) / len(eligible)
print(json.dumps(out))`,
    tasks,
  ) as Record<string, number>;
  for (const [key, value] of Object.entries(expected)) close(metrics[`${key}/accuracy`] as number, value, key);
  assert.equal(metrics['pass^7/accuracy'], undefined, 'no k beyond the largest repeat count');
});

test('pass^k is off unless asked, so environments keep the reference metric keys', () => {
  const metrics = computePassMajorityMetrics([[{ reward: 1 }, { reward: 0 }]]).metrics;
  assert.deepEqual(
    Object.keys(metrics).filter((key) => key.startsWith('pass^')),
    [],
  );
});

test('edge cases have defined answers and never NaN', () => {
  assert.equal(studentT([]), undefined, 'no values: no estimate');
  assert.deepEqual(studentT([0.5]), { mean: 0.5, stderr: null, ci95: null, n: 1 }, 'one task: no interval');
  assert.deepEqual(studentT([1, 1, 1, 1]), { mean: 1, stderr: 0, ci95: [1, 1], n: 4 }, 'zero variance: a point');
  assert.deepEqual(studentT([0, 0]), { mean: 0, stderr: 0, ci95: [0, 0], n: 2 });
  assert.equal(bootstrapInterval([0.3], 1000, 1), null, 'one task: no bootstrap interval');
  assert.deepEqual(bootstrapInterval([0.5, 0.5, 0.5], 1000, 1), [0.5, 0.5]);
  assert.equal(mcnemarExact(0, 0), 1);
  assert.equal(verdictOf(null, 0), 'inconclusive');
  assert.equal(verdictOf([0.01, 0.2], 0), 'better');
  assert.equal(verdictOf([0.01, 0.2], 0.05), 'inconclusive', 'the interval must clear the margin');
  assert.equal(verdictOf([-0.2, -0.06], 0.05), 'worse');
  assert.equal(verdictOf([0, 0.2], 0), 'inconclusive', 'touching the margin is not clearing it');
});

test(`the bootstrap interval is the seed's: same seed same interval, and near the t interval on a large sample (seed ${SEED})`, () => {
  const random = seededRandom(SEED);
  const values = Array.from({ length: 400 }, () => (random() < 0.4 ? 1 : 0));
  const first = bootstrapInterval(values, 4000, 7)!;
  assert.deepEqual(bootstrapInterval(values, 4000, 7), first);
  assert.notDeepEqual(bootstrapInterval(values, 4000, 8), first);
  const t = studentT(values)!.ci95!;
  assert.ok(first[0] < first[1]);
  // 400 draws: the two intervals agree to well under a tenth of their width.
  assert.ok(Math.abs(first[0] - t[0]) < 0.01 && Math.abs(first[1] - t[1]) < 0.01, `${first.join()} vs ${t.join()}`);
});
