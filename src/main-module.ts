/**
 * The "am I the script node was started with" test, for modules that run something only when executed, not when a
 * test imports them (environment apps, data generators). Kept at the bottom layer so a generator can ask without
 * loading the server base.
 */
import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

/** True when the module at `importMetaUrl` is the process's entry script (`node app.js`). */
export function isMainModule(importMetaUrl: string): boolean {
  const entry = process.argv[1];
  if (entry === undefined) return false;
  // Node reports a module's URL by its real path, but argv[1] as typed: a project reached through a symlink
  // (macOS's /tmp, a linked checkout) must still count as the entry.
  let real = entry;
  try {
    real = realpathSync(entry);
  } catch {
    // not a file on disk (e.g. `node -e`): compare as given
  }
  return pathToFileURL(real).href === importMetaUrl;
}
