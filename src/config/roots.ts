/** Search roots for relative paths (reference `component_search_roots`): extra roots, cwd, install root. */
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

let cachedInstallRoot: string | undefined;

/**
 * The package root. Found by walking up from this module to the first `package.json` named `tsgym`, so it
 * holds both for the compiled module (`dist/src/config/`) and for the source (`src/config/`).
 */
export function installRoot(): string {
  if (cachedInstallRoot !== undefined) return cachedInstallRoot;
  const start = path.dirname(fileURLToPath(import.meta.url));
  for (let dir = start; ; dir = path.dirname(dir)) {
    const manifest = path.join(dir, 'package.json');
    if (existsSync(manifest)) {
      try {
        if ((JSON.parse(readFileSync(manifest, 'utf8')) as { name?: unknown }).name === 'tsgym')
          return (cachedInstallRoot = dir);
      } catch {
        // not ours; keep walking
      }
    }
    if (path.dirname(dir) === dir) return (cachedInstallRoot = path.resolve(start, '..', '..', '..'));
  }
}

function identity(dir: string): string {
  try {
    return realpathSync(dir);
  } catch {
    return dir;
  }
}

/** `NEMO_GYM_EXTRA_ROOTS` entries (os path delimiter), then cwd, then the install root; duplicates removed. */
export function searchRoots(env: NodeJS.ProcessEnv = process.env, cwd: string = process.cwd()): string[] {
  const extra = (env.NEMO_GYM_EXTRA_ROOTS ?? '').split(path.delimiter).filter((entry) => entry.trim() !== '');
  const seen = new Set<string>();
  const roots: string[] = [];
  for (const candidate of [
    ...extra.map((entry) => path.resolve(cwd, entry.trim())),
    path.resolve(cwd),
    installRoot(),
  ]) {
    const key = identity(candidate);
    if (seen.has(key)) continue;
    seen.add(key);
    roots.push(candidate);
  }
  return roots;
}

/** The first `<root>/<relative>` that exists, or undefined. Absolute paths are returned when they exist. */
export function findUnderRoots(relative: string, roots: readonly string[]): string | undefined {
  if (path.isAbsolute(relative)) return existsSync(relative) ? relative : undefined;
  for (const root of roots) {
    const candidate = path.join(root, relative);
    if (existsSync(candidate)) return candidate;
  }
  return undefined;
}
