/**
 * `--resources-server NAME[/FLAVOR]` names a config by convention: `resources_servers/NAME/configs/FLAVOR.yaml`
 * under one of the search roots. When that file is missing, the roots are scanned for the configs that do
 * exist, so the error can suggest the closest one and say where to look.
 */
import path from 'node:path';
import { readdirSync } from 'node:fs';
import { closeMatches } from '../config/did-you-mean.js';
import { findUnderRoots } from '../config/roots.js';
import { UsageError } from '../errors.js';

/** `NAME` or `NAME/FLAVOR` → `resources_servers/NAME/configs/FLAVOR.yaml`, which must exist under a root. */
export function resourcesServerConfigPath(value: string, roots: readonly string[]): string {
  const [name, flavor] = value.includes('/')
    ? [value.slice(0, value.indexOf('/')), value.slice(value.indexOf('/') + 1)]
    : [value, value];
  const relative = `resources_servers/${name}/configs/${flavor}.yaml`;
  if (findUnderRoots(relative, roots) !== undefined) return relative;
  const hint = closeMatches(value, availableResourcesServers(roots), 1)[0];
  throw new UsageError(
    `\`--resources-server ${value}\` was specified which implies config \`${relative}\`, which does not exist.${hint ? ` Did you mean \`${hint}\`?` : ''} See available --resources-server configs in ${roots.map((root) => path.join(root, 'resources_servers')).join(', ')}.`,
  );
}

/** Every `--resources-server` value that would resolve, spelled as a user would type it (`NAME` for the default flavor). */
function availableResourcesServers(roots: readonly string[]): Set<string> {
  const available = new Set<string>();
  for (const root of roots) {
    for (const server of listDir(path.join(root, 'resources_servers'))) {
      for (const file of listDir(path.join(root, 'resources_servers', server, 'configs')).filter((entry) =>
        entry.endsWith('.yaml'),
      )) {
        const stem = file.slice(0, -'.yaml'.length);
        available.add(stem === server ? server : `${server}/${stem}`);
      }
    }
  }
  return available;
}

/** A directory's entries, or none when it is missing or unreadable (a root need not hold every server). */
function listDir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}
