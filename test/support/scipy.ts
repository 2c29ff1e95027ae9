/**
 * An independent implementation to check the statistics against: scipy, run by Debian's python3 with python3-scipy
 * (which `npm test` provisions). A test sends a JSON value on stdin to a short Python program and reads one JSON
 * value back. Missing scipy fails the test with the package to install, never a skip: these tests are the proof that
 * the intervals are right.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/** Debian's interpreter first: it is the one python3-scipy installs into. */
const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';

export function runScipy(program: string, input: unknown): unknown {
  const run = spawnSync(PYTHON, ['-c', `import json, sys\n${program}`], {
    input: JSON.stringify(input),
    encoding: 'utf8',
    timeout: 120_000,
  });
  if (run.status !== 0) {
    const missing = /No module named '(scipy|numpy)'/.test(run.stderr);
    throw new Error(
      missing
        ? `${PYTHON} has no scipy: install Debian's python3-scipy (npm test does) and run the test again.`
        : `the scipy check failed (exit ${run.status}): ${run.stderr || run.error?.message}`,
    );
  }
  return JSON.parse(run.stdout) as unknown;
}
