/** A task directory's subtree read whole, as bytes: a Harbor task's tests/ and solution/. */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { MAX_FILES } from '../tasks.js';
import { HarborTaskError } from './dockerfile.js';

/** Regular files under `root`, keyed by their path relative to it (a missing root is an empty tree; symlinks are skipped). */
export function readTreeBytes(root: string): Record<string, Buffer> {
  const files: Record<string, Buffer> = {};
  const walk = (dir: string, prefix: string, depth: number): void => {
    if (depth > 32) throw new HarborTaskError(`${dir}: nested deeper than 32 levels`);
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      const relative = prefix ? `${prefix}/${entry.name}` : entry.name;
      if (entry.isDirectory()) walk(path.join(dir, entry.name), relative, depth + 1);
      else if (entry.isFile()) {
        files[relative] = readFileSync(path.join(dir, entry.name));
        if (Object.keys(files).length > MAX_FILES) throw new HarborTaskError(`${root}: more than ${MAX_FILES} files`);
      }
    }
  };
  walk(root, '', 0);
  return files;
}
