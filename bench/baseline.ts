import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO } from './gym.js';

/**
 * The pinned baseline the bench compares tsgym's CPU and memory with: an older commit of this repository, exported
 * with `git archive` into a temporary directory (no worktree metadata is touched), given this checkout's
 * `node_modules` through a symlink and compiled with this checkout's TypeScript. It is built once per commit and
 * kept in the temporary directory, so later bench runs reuse it. Ratios against it hold on any machine, since both
 * sides run in the same bench run, alternating.
 */

/** main as issue 15 found it (the landing before the performance work). */
export const BASELINE_COMMIT = 'a65dbfa';

export interface Baseline {
  commit: string;
  /** A built tsgym checkout: `bin/gym.js` runs the baseline. */
  root: string;
}

function git(args: string[]): string {
  const result = spawnSync('git', ['-C', REPO, ...args], { encoding: 'utf8', timeout: 60_000, maxBuffer: 1 << 20 });
  if (result.status !== 0)
    throw new Error(`git ${args.join(' ')} failed: ${(result.stderr || result.error?.message || '').trim()}`);
  return result.stdout.trim();
}

/**
 * The baseline borrows this checkout's `node_modules`, linked again on every use: a build kept in $TMPDIR outlives the
 * checkout (a worktree, a clone) that made it, and a dangling link fails only later, as a missing package.
 */
function linkModules(root: string): void {
  const link = path.join(root, 'node_modules');
  rmSync(link, { force: true, recursive: false });
  symlinkSync(realpathSync(path.join(REPO, 'node_modules')), link, 'dir');
}

export function buildBaseline(rev: string = BASELINE_COMMIT, log: (line: string) => void = () => {}): Baseline {
  const commit = git(['rev-parse', '--verify', `${rev}^{commit}`]);
  const root = path.join(os.tmpdir(), `tsgym-bench-baseline-${commit.slice(0, 12)}`);
  const builtMarker = path.join(root, '.bench-built');
  if (existsSync(builtMarker)) {
    linkModules(root);
    return { commit, root };
  }
  log(`  building the baseline ${commit.slice(0, 12)} in ${root} (once)`);
  rmSync(root, { recursive: true, force: true });
  mkdirSync(root, { recursive: true });
  const archive = spawnSync('sh', ['-c', `git -C "$1" archive "$2" | tar -x -C "$3"`, 'sh', REPO, commit, root], {
    encoding: 'utf8',
    timeout: 120_000,
  });
  if (archive.status !== 0) throw new Error(`exporting ${commit} failed: ${archive.stderr.trim()}`);
  linkModules(root);
  const tsc = spawnSync(
    process.execPath,
    [path.join(REPO, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', path.join(root, 'tsconfig.json')],
    { encoding: 'utf8', timeout: 300_000 },
  );
  if (tsc.status !== 0)
    throw new Error(`compiling the baseline ${commit} failed:\n${(tsc.stdout + tsc.stderr).slice(-2000)}`);
  writeFileSync(builtMarker, `${commit}\n`);
  return { commit, root };
}
