import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';

const TIERING = new URL('./tiering.js', import.meta.url).href;

/**
 * Calls a small function until TurboFan has compiled it, in a fresh process, and answers how many calls that took.
 * Synchronous compilation and no on-stack replacement make the count exact for a given V8.
 */
function callsUntilOptimized(setup: string, nodeFlags: string[] = []): number {
  const script = `
    ${setup}
    function work(x) { let s = 0; for (let i = 0; i < 10; i++) s += (x * i) % 7; return s; }
    const optimized = new Function('f', 'return (%GetOptimizationStatus(f) & 16) !== 0;');
    let calls = 0;
    while (!optimized(work) && calls < 1e6) { work(calls); calls++; }
    process.stdout.write(String(calls));`;
  const out = execFileSync(
    process.execPath,
    [
      '--allow-natives-syntax',
      '--no-concurrent-recompilation',
      '--no-use-osr',
      ...nodeFlags,
      '--input-type=module',
      '-e',
      script,
    ],
    // Only an upper bound, for a hung process: the loop takes milliseconds.
    { encoding: 'utf8', timeout: 120_000 },
  );
  return Number(out);
}

test('the collector raises V8 tier-up budget for the rest of its process: a hot function reaches TurboFan later', () => {
  const byDefault = callsUntilOptimized('');
  const raised = callsUntilOptimized(`(await import('${TIERING}')).raiseTierUpBudget();`);
  assert.ok(byDefault > 0 && byDefault < 1e6, `default: ${byDefault} calls`);
  assert.ok(raised >= 3 * byDefault, `raised budget: ${raised} calls vs ${byDefault} by default`);
});

test('a process started with its own --interrupt-budget keeps it; a second call changes nothing', () => {
  const own = callsUntilOptimized('', ['--interrupt-budget=67584']);
  const kept = callsUntilOptimized(`(await import('${TIERING}')).raiseTierUpBudget();`, ['--interrupt-budget=67584']);
  assert.equal(kept, own);
  const once = callsUntilOptimized(
    `const t = await import('${TIERING}'); t.raiseTierUpBudget(); t.raiseTierUpBudget();`,
  );
  const raised = callsUntilOptimized(`(await import('${TIERING}')).raiseTierUpBudget();`);
  assert.equal(once, raised);
});
