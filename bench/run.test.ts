/**
 * `node dist/bench/run.js` refuses a command line it does not understand in one line plus the usage, exit 2, and
 * starts nothing: no stack trace, no scenario, no results file.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const RUN = path.join(path.dirname(fileURLToPath(import.meta.url)), 'run.js');

function bench(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [RUN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const REFUSED: Array<{ args: string[]; says: RegExp }> = [
  { args: ['--bogus'], says: /^bench: Unknown option '--bogus'/ },
  {
    args: ['--only', '42'],
    says: /^bench: --only 42: no scenario '42' \(the scenarios are 1, 2, 3, 4, 5, 6, 7, 8, 9, 10\)$/,
  },
  { args: ['--only', '1,x,3'], says: /^bench: --only 1,x,3: no scenario 'x' / },
  { args: ['--only', '1,'], says: /^bench: --only 1,: no scenario '' / },
  { args: ['--only'], says: /^bench: Option '--only <value>' argument missing/ },
  { args: ['3'], says: /^bench: Unexpected argument '3'/ },
];

describe('bench/run.js command line', () => {
  for (const { args, says } of REFUSED) {
    it(`refuses ${JSON.stringify(args.join(' '))} in one line and the usage, exit 2`, async () => {
      const result = await bench(args);
      assert.equal(result.code, 2, `exit code; stderr: ${result.stderr}`);
      const lines = result.stderr.trimEnd().split('\n');
      assert.equal(lines.length, 2, `one line and the usage, got:\n${result.stderr}`);
      assert.match(lines[0]!, says);
      assert.match(lines[1]!, /^usage: node dist\/bench\/run\.js \[--only 1,3\]/);
      assert.doesNotMatch(result.stderr, /^\s+at /m, 'no stack trace');
      assert.equal(result.stdout, '', 'no scenario started');
    });
  }
});
