/**
 * V8's tier-up budget for the collector process (`gym eval run`).
 *
 * A collection is a batch job in a fresh process: its per-row code (reading lines, the `/run` exchange, stamping,
 * appending) runs a few thousand times and is done. V8 hands a function to TurboFan, its optimizing compiler, once
 * the function has used up an "interrupt budget" of executed bytecode; for code this short-lived the compiles cost
 * more than the faster code gives back. Measured in scenario 8's collector (2,000 rollouts): about a third of its CPU
 * was TurboFan compiling on V8's background threads. A four times larger budget lets only the really hot code
 * tier up, a little later; a long collection reaches the same optimized code, so only the warm-up is cheaper (see
 * bench/README.md, "the collector's own CPU"). The servers are separate, long-lived processes and keep V8's default.
 */
import { setFlagsFromString } from 'node:v8';

/** V8's default (`node --v8-options`, Node 20: 67584 bytes of bytecode) times four. */
const COLLECTOR_INTERRUPT_BUDGET = 4 * 67_584;

let applied = false;

/**
 * Raises the budget for the rest of this process. Call it once, before the collection's modules load; a process
 * started with its own `--interrupt-budget` keeps that.
 */
export function raiseTierUpBudget(execArgv: readonly string[] = process.execArgv): void {
  if (applied || execArgv.some((arg) => arg.startsWith('--interrupt-budget'))) return;
  applied = true;
  setFlagsFromString(`--interrupt-budget=${COLLECTOR_INTERRUPT_BUDGET}`);
}
