/**
 * What `gym env start` runs for each server instance, decided before any process starts and printed so it is never a
 * guess (decision C5): the directory its code comes from, the command, and for a Python server the interpreter.
 *
 * Where the code comes from, first match wins:
 * 1. `server_dir` in the server's block — an explicit directory (absolute, or relative to the working directory);
 * 2. tsgym's own server of that name (`<install root>/<server_type>/<impl>`, e.g. `responses_api_agents/remote_agent`),
 *    even when `NEMO_GYM_EXTRA_ROOTS` or the working directory hold a same-named one (a NeMo Gym checkout has a Python
 *    `remote_agent` and `example_session_state_mgmt`); the listing says which one was passed over;
 * 3. the first search root holding `<server_type>/<impl>` (`NEMO_GYM_EXTRA_ROOTS`, then the working directory).
 */
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { resolveLaunch, resolveServerDir, type LaunchSpec, type ServerInstance } from '../config/index.js';
import { ConfigError } from '../errors.js';
import { withPython, type PythonChoice } from './python.js';

export interface Plan {
  instance: ServerInstance;
  dirPath: string;
  entrypoint: string;
  launch: LaunchSpec;
  /** Why this directory (`server_dir`, tsgym's own, a search root). */
  origin: string;
  /** Same-named directories under other roots that were not used. */
  shadowed: string[];
  python?: PythonChoice;
}

export interface PlanContext {
  config: Record<string, unknown>;
  roots: readonly string[];
  installRoot: string;
  cwd: string;
  env: NodeJS.ProcessEnv;
}

function isDirectory(dir: string): boolean {
  return existsSync(dir) && statSync(dir).isDirectory();
}

/** The directory a server's code comes from, and why. */
export function locateServer(
  instance: ServerInstance,
  ctx: PlanContext,
): { dirPath: string; origin: string; shadowed: string[] } {
  const relative = path.join(instance.serverType, instance.impl);
  const explicit = instance.config.server_dir;
  if (explicit !== undefined && explicit !== null) {
    const key = `${instance.name}.${instance.serverType}.${instance.impl}.server_dir`;
    if (typeof explicit !== 'string' || explicit.trim() === '') {
      throw new ConfigError(
        `${key} must be the path of the server's directory (absolute, or relative to the working directory).`,
        'GYM_CONFIG_SERVER_DIR',
      );
    }
    const dirPath = path.resolve(ctx.cwd, explicit.trim());
    if (!isDirectory(dirPath)) {
      throw new ConfigError(
        `${key} = ${dirPath} is not a directory. Point it at the directory holding the server's entrypoint, or remove it to use ${relative} from the search roots.`,
        'GYM_CONFIG_SERVER_DIR',
      );
    }
    return { dirPath, origin: 'server_dir', shadowed: [] };
  }
  const own = path.join(ctx.installRoot, relative);
  const others = ctx.roots
    .map((root) => path.join(root, relative))
    .filter((dir) => path.resolve(dir) !== path.resolve(own) && isDirectory(dir));
  if (isDirectory(own)) return { dirPath: own, origin: "tsgym's own", shadowed: others };
  const dirPath = resolveServerDir(instance.serverType, instance.impl, ctx.roots);
  return { dirPath, origin: `found under ${path.dirname(path.dirname(dirPath))}`, shadowed: [] };
}

export function planServer(instance: ServerInstance, ctx: PlanContext): Plan {
  // Listing the instances checked that its entrypoint is a non-empty string (config/servers.ts).
  const declared = instance.config.entrypoint;
  const entrypoint = typeof declared === 'string' ? declared : '';
  const { dirPath, origin, shadowed } = locateServer(instance, ctx);
  const { launch, python } = withPython(resolveLaunch(dirPath, entrypoint, ctx.installRoot), {
    instance,
    dirPath,
    config: ctx.config,
    cwd: ctx.cwd,
    env: ctx.env,
  });
  return { instance, dirPath, entrypoint, launch, origin, shadowed, ...(python ? { python } : {}) };
}

/** The start-up listing: per server its directory (and why), its command, and its Python. */
export function describePlans(plans: readonly Plan[]): string {
  const lines = [`Starting ${plans.length} server(s):`];
  for (const plan of plans) {
    const { instance } = plan;
    lines.push(`  ${instance.name} (${instance.serverType}/${instance.impl})`);
    lines.push(`    dir:     ${plan.dirPath} (${plan.origin})`);
    for (const other of plan.shadowed) {
      lines.push(`    not used: ${other} (same name; set server_dir to run it instead)`);
    }
    lines.push(`    command: ${[plan.launch.command, ...plan.launch.args].map(quoteArg).join(' ')}`);
    if (plan.python) lines.push(`    python:  ${plan.python.executable} (${plan.python.reason})`);
  }
  return `${lines.join('\n')}\n`;
}

/** One argument as a POSIX shell would need it written (plain words stay bare), so a listed command can be pasted. */
export function quoteArg(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}
