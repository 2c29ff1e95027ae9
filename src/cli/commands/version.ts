import { readFileSync } from 'node:fs';
import os from 'node:os';
import type { ParsedCommand } from '../argv.js';

export function version(cmd: ParsedCommand): number {
  const pkgUrl = new URL('../../../../package.json', import.meta.url);
  const pkg = JSON.parse(readFileSync(pkgUrl, 'utf8')) as { version: string; dependencies?: Record<string, string> };
  const info = {
    tsgym: pkg.version,
    node: process.version,
    installation_path: new URL('../../../../', import.meta.url).pathname,
    dependencies: pkg.dependencies ?? {},
    system: { os: os.type(), platform: process.platform, architecture: process.arch, cpus: os.cpus().length },
  };
  if (cmd.overrides.includes('+json=true')) process.stdout.write(`${JSON.stringify(info, null, 2)}\n`);
  else
    process.stdout.write(
      `tsgym ${info.tsgym} (node ${info.node}, ${info.system.platform}-${info.system.architecture})\n`,
    );
  return 0;
}
