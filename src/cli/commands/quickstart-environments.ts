/**
 * The environments `gym quickstart --env NAME` can run: for each, the config that declares the environment and a
 * `remote_agent` wired to it, the example rows, and the example service that solves them. The quickstart itself
 * is generic over this table; adding an environment to it is adding one entry here. An example service is loaded
 * by its path under the install's compiled tree, the way a user's own service is run, and only when its entry is
 * chosen: the CLI has no compile-time dependency on `examples/` (they sit above the kits, beside the CLI), and the
 * quickstart's start-up does not grow with the table.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { jsonValueText } from '../../contract/records.js';
import type { GlobalConfig } from '../../config/index.js';
import { installRoot } from '../../config/roots.js';
import { ConfigError } from '../../errors.js';

/** The example agent service an entry starts (each call to its `startService`). */
export interface QuickstartService {
  url: string;
  /** What answers, as reported in every response's `model` and printed by the quickstart. */
  brainName: string;
  close(): Promise<void>;
}

export interface QuickstartEnvironment {
  /** The `--env` value. */
  name: string;
  /** How the quickstart names it: `Environment: <displayName> + remote agent ready …`. */
  displayName: string;
  /**
   * The config, relative to the install root: it declares the environment's server and an agent named
   * `agentName` (a `remote_agent`) whose `resources_server` points at it. The quickstart sets the agent's
   * `agent_base_url` to the example service and the head server's port.
   */
  config: string;
  /** The agent instance in `config`. */
  agentName: string;
  /** The example rows, relative to the install root: every row must end at reward 1.0 with the example service. */
  exampleData: string;
  /** Starts the example service on a free loopback port; `settings` holds the quickstart's flags (`brain`, …). */
  startService(settings: GlobalConfig): Promise<QuickstartService>;
}

export const QUICKSTART_ENVIRONMENTS: readonly QuickstartEnvironment[] = [
  {
    name: 'counter',
    displayName: 'counter environment',
    config: 'counter_remote.yaml',
    agentName: 'remote_agent',
    exampleData: 'resources_servers/example_session_state_mgmt/data/example.jsonl',
    startService: async (settings) =>
      startExampleService(
        'examples/counter-planner/index.js',
        'startCounterPlannerService',
        counterServiceOptions(settings),
      ),
  },
  {
    name: 'workplace',
    displayName: 'workplace environment',
    config: 'resources_servers/workplace/configs/workplace.yaml',
    agentName: 'remote_agent',
    exampleData: 'resources_servers/workplace/data/example.jsonl',
    startService: async (settings) => {
      plannerOnly(settings, 'workplace', 'examples/workplace-solver');
      return startExampleService('examples/workplace-solver/index.js', 'startWorkplaceSolverService');
    },
  },
  {
    name: 'math',
    displayName: 'math environment',
    config: 'resources_servers/math/configs/math.yaml',
    agentName: 'remote_agent',
    exampleData: 'resources_servers/math/data/example.jsonl',
    startService: async (settings) => {
      plannerOnly(settings, 'math', 'examples/math-solver');
      return startExampleService('examples/math-solver/index.js', 'startMathSolver');
    },
  },
  {
    name: 'shell',
    displayName: 'shell environment (bubblewrap sandboxes)',
    config: 'resources_servers/shell/configs/shell.yaml',
    agentName: 'remote_agent',
    exampleData: 'resources_servers/shell/data/example.jsonl',
    startService: async (settings) => {
      plannerOnly(settings, 'shell', 'examples/shell-solver');
      return startExampleService('examples/shell-solver/index.js', 'startShellSolver');
    },
  },
  // Further environments: one entry each, same shape.
];

export const DEFAULT_QUICKSTART_ENVIRONMENT = 'counter';

export function findQuickstartEnvironment(name: string): QuickstartEnvironment | undefined {
  return QUICKSTART_ENVIRONMENTS.find((entry) => entry.name === name);
}

/**
 * Import an example service's module from the install's compiled tree (`dist/<modulePath>`) and call its start
 * function. A module or export that is missing means a broken install, said in one line.
 */
async function startExampleService(
  modulePath: string,
  exportName: string,
  options?: unknown,
): Promise<QuickstartService> {
  const file = path.join(installRoot(), 'dist', modulePath);
  let loaded: Record<string, unknown>;
  try {
    loaded = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  } catch (error) {
    throw new ConfigError(
      `the example service ${file} could not be loaded (${(error as Error).message.split('\n')[0]}): reinstall tsgym.`,
    );
  }
  const start = loaded[exportName];
  if (typeof start !== 'function') {
    throw new ConfigError(
      `the example service ${file} has no ${exportName}(): the install is incomplete; reinstall tsgym.`,
    );
  }
  return await (start as (options?: unknown) => Promise<QuickstartService>)(options);
}

/** Environments whose quickstart runs a deterministic solver refuse a model brain rather than ignore it. */
function plannerOnly(settings: GlobalConfig, env: string, solver: string): void {
  const brain = stringSetting(settings, 'brain') ?? 'planner';
  if (brain !== 'planner') {
    throw new ConfigError(`--env ${env} runs its deterministic solver (${solver}) only; drop --brain ${brain}.`);
  }
}

/**
 * The counter service's brain from `--brain` (planner, offline by default; claude; openai with its model flags;
 * local with a GGUF file as --model).
 */
function counterServiceOptions(settings: GlobalConfig) {
  const brain = stringSetting(settings, 'brain') ?? 'planner';
  if (brain !== 'planner' && brain !== 'claude' && brain !== 'openai' && brain !== 'local') {
    throw new ConfigError(
      `--brain ${brain} is not a brain the quickstart knows: choose planner (default, offline), claude, openai or local.`,
    );
  }
  if (brain === 'local') {
    const modelPath = stringSetting(settings, 'policy_model_name');
    if (!modelPath) {
      throw new ConfigError(
        '--brain local runs a GGUF model in-process: add --model <path of the .gguf file> ' +
          '(it needs node-llama-cpp: npm install node-llama-cpp@3.21.1).',
      );
    }
    return { brain, local: { modelPath } } as const;
  }
  if (brain === 'claude') {
    const model = stringSetting(settings, 'policy_model_name');
    return { brain, ...(model ? { claude: { model } } : {}) } as const;
  }
  if (brain === 'openai') {
    const modelUrl = stringSetting(settings, 'policy_base_url');
    const model = stringSetting(settings, 'policy_model_name');
    if (!modelUrl || !model) {
      throw new ConfigError(
        '--brain openai needs the model server: add --model-url <OpenAI-compatible base URL, e.g. http://localhost:8000/v1> ' +
          'and --model <model name>; the API key comes from --model-api-key or the OPENAI_API_KEY environment variable.',
      );
    }
    const apiKey = stringSetting(settings, 'policy_api_key') ?? process.env.OPENAI_API_KEY;
    return { brain, openai: { modelUrl, model, ...(apiKey ? { apiKey } : {}) } } as const;
  }
  return { brain } as const;
}

/** A flag's value from the settings, undefined when unset or empty. */
export function stringSetting(config: GlobalConfig, key: string): string | undefined {
  const value = config[key];
  if (value === undefined || value === null || value === '') return undefined;
  return jsonValueText(value);
}
