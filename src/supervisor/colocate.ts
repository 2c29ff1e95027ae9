/**
 * Which servers of one `gym env start` share a process (decision D23). tsgym's own `remote_agent` and the resources
 * server it names run in one process when both are TypeScript servers run by node and neither sets `colocate: false`;
 * the agent then reaches the environment in-process, and each keeps its own HTTP listener, port, log file and status
 * record. A Python server is never co-located. Each other server (and a second agent naming an already co-located
 * environment, which reaches it over HTTP) is a unit of its own, as before.
 *
 * A unit is what the supervisor starts, watches and restarts: a co-located pair lives and dies together, so a crash
 * of either (SIGKILL, an exception thrown from environment code) restarts both; there is never a half-dead process.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CONFIG_DICT_ENV, type LaunchSpec } from '../config/index.js';
import { ConfigError } from '../errors.js';
import type { Plan } from './plan.js';

export interface Unit {
  /** The terminal prefix of its output: the server's name, or `<environment>+<agent>`. */
  name: string;
  /** Its servers (a co-located pair: the environment first). */
  plans: Plan[];
  launch: LaunchSpec;
  /** Variables for the process (a co-located pair: each member's config, see `host-main.ts`). */
  env: Record<string, string>;
}

/** What `host-main.ts` reads: the members in start order (the environment first), each with its config's variable. */
export interface HostMember {
  name: string;
  script: string;
  configVar: string;
  /** The resources server: registered for in-process calls. */
  inProcess: boolean;
}

export const HOST_MEMBERS_ENV = 'GYM_COLOCATED_MEMBERS';

/** The line the shared process writes before exiting when one of its servers cannot start (read back below). */
export function didNotStartLine(name: string): string {
  return `co-located server '${name}' did not start; the process exits with it`;
}

/** Which server of a co-located pair could not start, from the process's last lines. */
export function failedMember(tail: readonly string[]): string | undefined {
  for (const line of tail) {
    const found = /^co-located server '([^']+)' did not start; the process exits with it$/.exec(line);
    if (found) return found[1];
  }
  return undefined;
}

const HOST_MAIN = fileURLToPath(new URL('./host-main.js', import.meta.url));

/**
 * The units to run, in the plans' order (a pair takes the place of its environment). `configEnv(name)` is the pair
 * of variables a server reads its config from (`serverEnv`).
 */
export function groupIntoUnits(
  plans: readonly Plan[],
  installRoot: string,
  configEnv: (name: string) => Record<string, string>,
): Unit[] {
  const partner = new Map<Plan, Plan>();
  const taken = new Set<Plan>();
  for (const agent of plans) {
    if (!isOwnRemoteAgent(agent, installRoot) || !colocates(agent)) continue;
    const ref = agent.instance.config.resources_server as { name?: unknown } | undefined;
    const environment = plans.find(
      (plan) => plan.instance.name === ref?.name && plan.instance.serverType === 'resources_servers',
    );
    if (!environment || taken.has(environment) || !runsOnNode(environment) || !colocates(environment)) continue;
    taken.add(environment);
    taken.add(agent);
    partner.set(environment, agent);
  }
  const units: Unit[] = [];
  for (const plan of plans) {
    const agent = partner.get(plan);
    if (agent) units.push(pairUnit(plan, agent, configEnv));
    else if (!taken.has(plan)) {
      units.push({ name: plan.instance.name, plans: [plan], launch: plan.launch, env: configEnv(plan.instance.name) });
    }
  }
  return units;
}

function pairUnit(environment: Plan, agent: Plan, configEnv: (name: string) => Record<string, string>): Unit {
  const members = [environment, agent];
  const env: Record<string, string> = { ...environment.launch.env };
  const described: HostMember[] = members.map((plan, index) => {
    const configVar = `GYM_COLOCATED_CONFIG_${index}`;
    env[configVar] = configEnv(plan.instance.name)[CONFIG_DICT_ENV]!;
    return { name: plan.instance.name, script: scriptOf(plan.launch), configVar, inProcess: plan === environment };
  });
  env[HOST_MEMBERS_ENV] = JSON.stringify(described);
  return {
    name: `${environment.instance.name}+${agent.instance.name}`,
    plans: members,
    // The environment's node flags (tsx's loader for a TypeScript environment of the user's), then the host.
    launch: {
      command: process.execPath,
      args: [...nodeFlags(environment.launch), HOST_MAIN],
      cwd: environment.launch.cwd,
    },
    env,
  };
}

function isOwnRemoteAgent(plan: Plan, installRoot: string): boolean {
  const { instance } = plan;
  return (
    instance.serverType === 'responses_api_agents' &&
    instance.impl === 'remote_agent' &&
    path.resolve(plan.dirPath) === path.resolve(installRoot, 'responses_api_agents', 'remote_agent') &&
    runsOnNode(plan)
  );
}

export function runsOnNode(plan: Plan): boolean {
  return plan.python === undefined && plan.launch.command === process.execPath && plan.launch.args.length > 0;
}

/**
 * `colocate` in a server's block: unset or true co-locates where it applies, false never. Checked here without the
 * zod field builders of src/config/fields.ts: this is the supervisor's only config check, and loading zod for it
 * would add about 150 ms to every `gym env start` (bench scenario 4).
 */
function colocates({ instance }: Plan): boolean {
  const value = instance.config.colocate;
  if (value === undefined || value === null) return true;
  if (typeof value === 'boolean') return value;
  throw new ConfigError(
    `${instance.name}.${instance.serverType}.${instance.impl}.colocate must be true or false, got ${JSON.stringify(value)}. ` +
      'It says whether the remote agent and its TypeScript resources server may share one process (default true); ' +
      'set it to false on either server to run each in its own process.',
    'GYM_CONFIG_COLOCATE',
  );
}

function scriptOf(launch: LaunchSpec): string {
  return path.resolve(launch.cwd, launch.args[launch.args.length - 1]!);
}

function nodeFlags(launch: LaunchSpec): string[] {
  return launch.args.slice(0, -1);
}

/** The start-up listing's note on each co-located pair. */
export function describeUnits(units: readonly Unit[]): string {
  return units
    .filter((unit) => unit.plans.length > 1)
    .map(
      (unit) =>
        `  ${unit.plans.map((plan) => plan.instance.name).join(' and ')} share one process (co-located: in-process ` +
        'calls, each on its own port; colocate: false on either runs them apart)\n',
    )
    .join('');
}
