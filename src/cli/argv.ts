/**
 * The command line, in two layers as in the reference (§1.1): named flags per command, each translated into
 * `+key=value` overrides (§1.2), and every other token kept as a Hydra-style override. The final override
 * list is: `+verbose=true`, one coalesced `+config_paths=[…]`, the translated flags, the raw overrides.
 */
import path from 'node:path';
import { readdirSync } from 'node:fs';
import { closeMatches } from '../config/did-you-mean.js';
import { formatOverrideString, parseOverrideValue } from '../config/override-grammar.js';
import { findUnderRoots, searchRoots } from '../config/roots.js';
import { UsageError } from '../errors.js';

export interface ParsedCommand {
  /** e.g. 'env start', 'eval run', 'eval profile', 'eval aggregate', 'env status', 'env stop', 'env resolve',
   *  'quickstart', 'agent check', 'view', 'worker', 'version', 'help' */
  command: string;
  /** `eval run --no-serve`: use servers that are already running. */
  noServe: boolean;
  positionals: string[];
  overrides: string[];
  help: boolean;
}

type ValueKind = 'string' | 'int' | 'float' | 'raw';

interface FlagSpec {
  long: string;
  short?: string;
  /** undefined for switches */
  value?: ValueKind;
  metavar?: string;
  help: string;
  /** The override a value (or a switch) becomes; undefined for flags handled specially. */
  key?: string;
}

const FLAGS = {
  config: { long: '--config', value: 'string', metavar: 'PATH', help: 'A config file to compose (repeatable). Same as +config_paths=[PATH,…].' },
  resourcesServer: {
    long: '--resources-server', value: 'string', metavar: 'NAME[/FLAVOR]',
    help: 'Add resources_servers/NAME/configs/FLAVOR.yaml (FLAVOR defaults to NAME) to the config paths (repeatable).',
  },
  searchDir: { long: '--search-dir', value: 'string', metavar: 'DIR', help: 'An extra root for relative paths, searched before the working directory (repeatable; prepended to NEMO_GYM_EXTRA_ROOTS).' },
  model: { long: '--model', short: '-m', value: 'string', metavar: 'NAME', key: 'policy_model_name', help: 'Policy model name (+policy_model_name).' },
  modelUrl: { long: '--model-url', value: 'string', metavar: 'URL', key: 'policy_base_url', help: 'Policy model base URL (+policy_base_url).' },
  modelApiKey: { long: '--model-api-key', value: 'string', metavar: 'KEY', key: 'policy_api_key', help: 'Policy model API key (+policy_api_key).' },
  noServe: { long: '--no-serve', help: 'Use the servers already started by gym env start instead of starting them.' },
  resume: { long: '--resume', key: 'resume_from_cache', help: 'Keep finished rollouts and run only the missing or failed ones (+resume_from_cache=true).' },
  overwrite: { long: '--overwrite', key: 'overwrite', help: 'Start over: truncate an existing output and its failures sidecar (+overwrite=true).' },
  agent: { long: '--agent', short: '-a', value: 'string', metavar: 'NAME', key: 'agent_name', help: 'Agent instance for rows without an agent_ref (+agent_name).' },
  input: { long: '--input', short: '-i', value: 'string', metavar: 'JSONL', key: 'input_jsonl_fpath', help: 'Input rows (+input_jsonl_fpath).' },
  output: { long: '--output', short: '-o', value: 'string', metavar: 'JSONL', key: 'output_jsonl_fpath', help: 'Output file (+output_jsonl_fpath).' },
  limit: { long: '--limit', value: 'int', metavar: 'N', key: 'limit', help: 'Use only the first N input rows (+limit).' },
  numRepeats: { long: '--num-repeats', value: 'raw', metavar: 'N', key: 'num_repeats', help: "Rollouts per task: an int or a dict such as '{a: 4, _default: 1}' (+num_repeats)." },
  promptConfig: { long: '--prompt-config', value: 'string', metavar: 'PATH', key: 'prompt_config', help: 'Prompt config applied to every row (+prompt_config).' },
  concurrency: { long: '--concurrency', value: 'int', metavar: 'N', key: 'num_samples_in_parallel', help: 'Rollouts in flight at once (+num_samples_in_parallel).' },
  split: { long: '--split', value: 'string', metavar: 'SPLIT', key: 'split', help: 'Dataset split to collect: train, validation or benchmark (+split).' },
  temperature: { long: '--temperature', value: 'float', metavar: 'T', key: 'responses_create_params.temperature', help: 'Sampling temperature (+responses_create_params.temperature).' },
  topP: { long: '--top-p', value: 'float', metavar: 'P', key: 'responses_create_params.top_p', help: 'Nucleus sampling (+responses_create_params.top_p).' },
  maxOutputTokens: { long: '--max-output-tokens', value: 'int', metavar: 'N', key: 'responses_create_params.max_output_tokens', help: 'Output token cap (+responses_create_params.max_output_tokens).' },
  disableAggregation: { long: '--disable-aggregation', key: 'disable_aggregation', help: 'Skip the /aggregate_metrics call (+disable_aggregation=true).' },
  inputGlob: { long: '--input-glob', short: '-i', value: 'string', metavar: 'GLOB', key: 'input_glob', help: 'Shards to merge: one glob or comma-separated globs (+input_glob).' },
  inputs: { long: '--inputs', value: 'string', metavar: 'JSONL', key: 'materialized_inputs_jsonl_fpath', help: 'The run\'s <stem>_materialized_inputs.jsonl (+materialized_inputs_jsonl_fpath).' },
  rollouts: { long: '--rollouts', value: 'string', metavar: 'JSONL', key: 'rollouts_jsonl_fpath', help: 'The run\'s rollouts file (+rollouts_jsonl_fpath).' },
  json: { long: '--json', key: 'json', help: 'Machine-readable JSON output (+json=true).' },
  caFile: { long: '--ca-file', value: 'string', metavar: 'PATH', key: 'ca_file', help: 'Trust this PEM CA for an https:// service with a private CA, as agent_ca_file does (+ca_file).' },
  apiKeyEnv: { long: '--api-key-env', value: 'string', metavar: 'NAME', key: 'api_key_env', help: 'Send the value of environment variable NAME as Authorization: Bearer, as agent_api_key_env does (+api_key_env).' },
  rows: { long: '--rows', value: 'string', metavar: 'JSONL', key: 'rows', help: "Probe with an environment's dataset rows (each row's responses_create_params and tools) instead of the counter conversations (+rows)." },
  quickstartEnv: { long: '--env', value: 'string', metavar: 'NAME', key: 'quickstart_env', help: 'Which environment the quickstart runs: counter (default) or another listed one (+quickstart_env).' },
  brain: { long: '--brain', value: 'string', metavar: 'NAME', key: 'brain', help: 'Which brain drives the example agent service (+brain).' },
  port: { long: '--port', value: 'int', metavar: 'N', key: 'port', help: 'Port to serve on; 0 (the default) picks a free one (+port).' },
  queue: { long: '--queue', value: 'string', metavar: 'REDIS_URL', key: 'queue_url', help: 'Distribute the rollouts to gym worker processes through Redis, e.g. redis://HOST:6379/0 (+queue_url).' },
  workerConcurrency: { long: '--concurrency', value: 'int', metavar: 'N', key: 'worker_concurrency', help: 'Jobs this worker runs at once (+worker_concurrency; default 16).' },
  host: { long: '--host', value: 'string', metavar: 'HOST', key: 'host', help: 'Address to serve on (+host; default 127.0.0.1, this machine only).' },
} satisfies Record<string, FlagSpec>;

const VERBOSE: FlagSpec = { long: '--verbose', short: '-v', help: 'Debug logging here and in every spawned server (+verbose=true).' };
const HELP: FlagSpec = { long: '--help', short: '-h', help: 'Show this help.' };

interface CommandSpec {
  summary: string;
  /** In declaration order: translated overrides follow this order. */
  flags: FlagSpec[];
  positionals?: string[];
  examples: string[];
}

const ENV_START_FLAGS = [FLAGS.config, FLAGS.resourcesServer, FLAGS.searchDir, FLAGS.model, FLAGS.modelUrl, FLAGS.modelApiKey];

const COMMANDS: Record<string, CommandSpec> = {
  'env start': {
    summary: 'Start the head server and every server instance of the composed config; run until Ctrl-C.',
    flags: ENV_START_FLAGS,
    examples: ['gym env start "+config_paths=[counter_remote.yaml]"', 'gym env start --config my_env.yaml ++head_server.port=11001'],
  },
  'env status': {
    summary: 'List the servers of a running environment (found through the head server) and whether each answers.',
    flags: [FLAGS.config, FLAGS.searchDir, FLAGS.json],
    examples: ['gym env status', 'gym env status --json ++head_server.port=11001'],
  },
  'env stop': {
    summary: 'Stop a running environment through its head server.',
    flags: [FLAGS.config, FLAGS.searchDir],
    examples: ['gym env stop', 'gym env stop ++head_server.host=10.0.0.5'],
  },
  'env resolve': {
    summary: 'Print the composed config as YAML: interpolations resolved, ports assigned, secret values masked.',
    flags: ENV_START_FLAGS,
    examples: ['gym env resolve --config counter_remote.yaml'],
  },
  'eval run': {
    summary: 'Collect rollouts: run every input row through its agent, verify it, and write <output>.jsonl. Without --no-serve the environment is started from the config first and stopped at the end.',
    flags: [
      FLAGS.config, FLAGS.resourcesServer, FLAGS.searchDir, FLAGS.model, FLAGS.modelUrl, FLAGS.modelApiKey, FLAGS.noServe,
      FLAGS.resume, FLAGS.overwrite, FLAGS.agent, FLAGS.input, FLAGS.output, FLAGS.limit, FLAGS.numRepeats, FLAGS.promptConfig,
      FLAGS.concurrency, FLAGS.split, FLAGS.temperature, FLAGS.topP, FLAGS.maxOutputTokens, FLAGS.disableAggregation, FLAGS.queue,
    ],
    examples: [
      'gym eval run --no-serve +agent_name=remote_agent +input_jsonl_fpath=data/example.jsonl +output_jsonl_fpath=results/rollouts.jsonl',
      'gym eval run --no-serve -a remote_agent -i data/example.jsonl -o results/rollouts.jsonl --resume',
    ],
  },
  'eval profile': {
    summary: 'Per-task reward statistics from a run\'s materialized inputs and rollouts (no servers needed).',
    flags: [FLAGS.config, FLAGS.searchDir, FLAGS.inputs, FLAGS.rollouts, FLAGS.json],
    examples: ['gym eval profile --inputs results/rollouts_materialized_inputs.jsonl --rollouts results/rollouts.jsonl'],
  },
  'eval aggregate': {
    summary: 'Merge rollout shards, sort them by task and rollout, and compute aggregate metrics through the running agents.',
    flags: [FLAGS.config, FLAGS.searchDir, FLAGS.inputGlob, FLAGS.output],
    examples: ["gym eval aggregate -i 'results/shard_*.jsonl' -o results/merged.jsonl"],
  },
  quickstart: {
    summary: 'Run a small example end to end (environment, remote agent, a demo agent service) to check the installation.',
    flags: [FLAGS.quickstartEnv, FLAGS.brain, FLAGS.config, FLAGS.searchDir, FLAGS.model, FLAGS.modelUrl, FLAGS.modelApiKey],
    examples: ['gym quickstart', 'gym quickstart --env counter', 'gym quickstart --brain NAME'],
  },
  'agent check': {
    summary: 'Probe the agent service at <url> and report, check by check, whether it speaks the remote-agent contract.',
    flags: [FLAGS.json, FLAGS.caFile, FLAGS.apiKeyEnv, FLAGS.rows],
    positionals: ['url'],
    examples: [
      'gym agent check http://localhost:9000',
      'gym agent check https://agent.internal:9000 --ca-file ca.pem --api-key-env MY_AGENT_TOKEN',
      'gym agent check http://localhost:9000 --rows resources_servers/example_session_state_mgmt/data/example.jsonl',
    ],
  },
  view: {
    summary: 'Serve a local viewer of a rollouts file and its failures sidecar (live while gym eval run writes it, with charts), or compare two runs task by task.',
    flags: [FLAGS.port, FLAGS.host],
    positionals: ['rollouts', '[compare_with]'],
    examples: ['gym view results/rollouts.jsonl', 'gym view results/rollouts.jsonl --port 8080', 'gym view baseline/rollouts.jsonl candidate/rollouts.jsonl'],
  },
  worker: {
    summary: 'Take rollout jobs of gym eval run --queue from Redis and run each through this machine\'s environment (found through its head server); Ctrl-C drains.',
    flags: [FLAGS.config, FLAGS.searchDir, FLAGS.queue, FLAGS.workerConcurrency],
    examples: ['gym worker --queue redis://10.0.0.2:6379 --concurrency 32', 'gym worker --queue redis://10.0.0.2:6379 ++head_server.port=11001'],
  },
  version: {
    summary: 'Print version information.',
    flags: [FLAGS.json],
    examples: ['gym --version', 'gym --version --json'],
  },
};

const GROUPS: Record<string, string[]> = {
  env: ['start', 'status', 'stop', 'resolve'],
  eval: ['run', 'profile', 'aggregate'],
  agent: ['check'],
};
const LEAVES = ['quickstart', 'view', 'worker', 'version', 'help'];

function flagsOf(command: string): FlagSpec[] {
  return [...(COMMANDS[command]?.flags ?? []), VERBOSE, HELP];
}

function findFlag(flags: readonly FlagSpec[], name: string): FlagSpec | undefined {
  return flags.find((flag) => flag.long === name || flag.short === name);
}

function looksLikeNumber(token: string): boolean {
  return /^-\d/.test(token) || /^-\.\d/.test(token);
}

function unknownFlagsError(command: string, unknown: readonly string[]): UsageError {
  const known = flagsOf(command).map((flag) => flag.long);
  const hints = unknown
    .map((flag) => closeMatches(flag.split('=')[0]!, known, 1)[0])
    .filter((hint): hint is string => hint !== undefined)
    .map((hint) => ` Did you mean \`${hint}\`?`)
    .join('');
  return new UsageError(`unrecognized arguments: ${unknown.join(' ')}.${hints} See gym ${command} --help.`);
}

function choiceError(kind: string, given: string, choices: readonly string[]): UsageError {
  const hint = closeMatches(given, choices, 1)[0];
  return new UsageError(
    `invalid ${kind}: '${given}' (choose from ${choices.map((choice) => `'${choice}'`).join(', ')}).${hint ? ` Did you mean \`${hint}\`?` : ''}`,
  );
}

/** Flag value → the literal to write after `+key=`. */
function formatFlagValue(flag: FlagSpec, raw: string): string {
  switch (flag.value) {
    case 'int':
      if (!/^\s*[+-]?\d+\s*$/.test(raw)) throw new UsageError(`argument ${flag.long}: invalid int value: '${raw}'.`);
      return String(Number(raw));
    case 'float':
      if (raw.trim() === '' || !Number.isFinite(Number(raw))) throw new UsageError(`argument ${flag.long}: invalid float value: '${raw}'.`);
      return raw.trim();
    case 'raw':
      try {
        parseOverrideValue(raw);
      } catch {
        throw new UsageError(`argument ${flag.long}: '${raw}' is not a valid value; write an int, or a dict such as '{a: 4, _default: 1}'.`);
      }
      return raw;
    default:
      return formatOverrideString(raw);
  }
}

/** `NAME` or `NAME/FLAVOR` → `resources_servers/NAME/configs/FLAVOR.yaml`, which must exist under a root. */
function resourcesServerConfig(value: string, roots: readonly string[]): string {
  const [name, flavor] = value.includes('/') ? [value.slice(0, value.indexOf('/')), value.slice(value.indexOf('/') + 1)] : [value, value];
  const relative = `resources_servers/${name}/configs/${flavor}.yaml`;
  if (findUnderRoots(relative, roots) !== undefined) return relative;
  const available = new Set<string>();
  for (const root of roots) {
    let servers: string[] = [];
    try {
      servers = readdirSync(path.join(root, 'resources_servers'));
    } catch {
      continue;
    }
    for (const server of servers) {
      let configs: string[] = [];
      try {
        configs = readdirSync(path.join(root, 'resources_servers', server, 'configs'));
      } catch {
        continue;
      }
      for (const file of configs.filter((entry) => entry.endsWith('.yaml'))) {
        const stem = file.slice(0, -'.yaml'.length);
        available.add(stem === server ? server : `${server}/${stem}`);
      }
    }
  }
  const hint = closeMatches(value, available, 1)[0];
  throw new UsageError(
    `\`--resources-server ${value}\` was specified which implies config \`${relative}\`, which does not exist.${hint ? ` Did you mean \`${hint}\`?` : ''} See available --resources-server configs in ${roots.map((root) => path.join(root, 'resources_servers')).join(', ')}.`,
  );
}

/** `+config_paths=[a,b]` typed raw → its entries; undefined when the token is anything else. */
function rawConfigPaths(token: string): string[] | undefined {
  if (!token.startsWith('+config_paths=') || token.startsWith('++')) return undefined;
  try {
    const value = parseOverrideValue(token.slice('+config_paths='.length));
    return Array.isArray(value) && value.every((entry) => typeof entry === 'string') ? value : undefined;
  } catch {
    return undefined;
  }
}

function isOverrideToken(token: string): boolean {
  return token.startsWith('+') || token.startsWith('~') || token.includes('=');
}

/** Split the leading words into a command; returns the command and where its arguments start. */
function readCommand(argv: readonly string[], start: number): { command: string; next: number } {
  const word = argv[start]!;
  if (Object.hasOwn(GROUPS, word)) {
    const action = argv[start + 1];
    const actions = GROUPS[word]!;
    if (action === undefined || action.startsWith('-') || isOverrideToken(action)) {
      if (action === '-h' || action === '--help') return { command: word, next: start + 1 };
      throw new UsageError(`gym ${word} needs an action: ${actions.join(', ')}. See gym ${word} --help.`);
    }
    if (!actions.includes(action)) throw choiceError(`gym ${word} action`, action, actions);
    return { command: `${word} ${action}`, next: start + 2 };
  }
  if (LEAVES.includes(word)) return { command: word, next: start + 1 };
  throw choiceError('command', word, [...Object.keys(GROUPS), ...LEAVES]);
}

/**
 * Parse `gym …` arguments. `--search-dir` entries are prepended to `NEMO_GYM_EXTRA_ROOTS` in `env`
 * (so spawned servers inherit them). Throws `UsageError` (exit 2) for unknown flags and bad flag values.
 */
export function parseArgv(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): ParsedCommand {
  let verbose = false;
  let help = false;
  let index = 0;
  let sawVersion = false;
  let sawJson = false;
  // Only switches that make sense without a command may come before it.
  for (; index < argv.length && argv[index]!.startsWith('-'); index++) {
    const token = argv[index]!;
    if (token === '-v' || token === '--verbose') verbose = true;
    else if (token === '-h' || token === '--help') help = true;
    else if (token === '--version') sawVersion = true;
    else if (token === '--json') sawJson = true;
    else {
      const hint = closeMatches(token, ['--verbose', '--help', '--version'], 1)[0];
      throw new UsageError(`unrecognized arguments: ${token}.${hint ? ` Did you mean \`${hint}\`?` : ''} Flags of a command go after it, e.g. gym eval run ${token} ….`);
    }
  }

  let command: string;
  if (sawVersion) {
    // Like argparse's version action: `--version` answers whatever follows.
    return { command: 'version', noServe: false, positionals: [], overrides: sawJson ? ['+json=true'] : [], help: false };
  }
  if (index >= argv.length) {
    return { command: 'help', noServe: false, positionals: [], overrides: [], help };
  } else {
    const read = readCommand(argv, index);
    command = read.command;
    index = read.next;
    if (command === 'help') {
      // `gym help eval run` is `gym eval run --help`.
      if (index >= argv.length) return { command: 'help', noServe: false, positionals: [], overrides: [], help: true };
      const topic = readCommand(argv, index);
      return { command: topic.command, noServe: false, positionals: [], overrides: [], help: true };
    }
  }
  if (!Object.hasOwn(COMMANDS, command)) {
    // A bare group such as `gym env --help`.
    return { command, noServe: false, positionals: [], overrides: [], help: true };
  }

  const spec = COMMANDS[command]!;
  const flags = flagsOf(command);
  const values = new Map<FlagSpec, string[]>();
  const positionals: string[] = [];
  const raw: string[] = [];
  const unknown: string[] = [];
  if (sawJson) {
    if (!flags.includes(FLAGS.json)) throw unknownFlagsError(command, ['--json']);
    values.set(FLAGS.json, ['']);
  }

  for (let onlyOperands = false; index < argv.length; index++) {
    const token = argv[index]!;
    if (!onlyOperands && token === '--') {
      onlyOperands = true;
      continue;
    }
    if (onlyOperands || !token.startsWith('-') || token === '-' || looksLikeNumber(token)) {
      if (token === '+h' || token === '+help') help = true;
      else if (positionals.length < (spec.positionals?.length ?? 0) && !isOverrideToken(token)) positionals.push(token);
      else raw.push(token);
      continue;
    }
    // `--flag=value`, and for short flags `-aVALUE` / `-a=VALUE`
    const isLong = token.startsWith('--');
    const split = isLong ? token.indexOf('=') : token.length > 2 ? 2 : -1;
    const name = split === -1 ? token : token.slice(0, split);
    const explicit = split === -1 ? undefined : token.slice(split).replace(/^=/, '');
    const flag = findFlag(flags, name);
    if (!flag) {
      unknown.push(token);
      continue;
    }
    if (flag === VERBOSE) verbose = true;
    if (flag === HELP) help = true;
    let value = '';
    if (flag.value !== undefined) {
      if (explicit !== undefined) value = explicit;
      else {
        const next = argv[index + 1];
        if (next === undefined || (next.startsWith('-') && next !== '-' && !looksLikeNumber(next))) {
          throw new UsageError(`argument ${flag.long}${flag.short ? `/${flag.short}` : ''}: expected one argument (${flag.metavar ?? 'VALUE'}). See gym ${command} --help.`);
        }
        value = next;
        index++;
      }
    } else if (explicit !== undefined) {
      throw new UsageError(`argument ${flag.long}: ignored explicit argument '${explicit}'; ${flag.long} is a switch and takes no value.`);
    }
    values.set(flag, [...(values.get(flag) ?? []), value]);
  }
  if (unknown.length > 0) throw unknownFlagsError(command, unknown);
  if (help) return { command, noServe: values.has(FLAGS.noServe), positionals, overrides: raw, help };
  // A positional named `[name]` is optional.
  const missing = (spec.positionals ?? []).slice(positionals.length).filter((name) => !name.startsWith('['));
  if (missing.length > 0) throw new UsageError(`gym ${command}: the following arguments are required: ${missing.join(', ')}. See gym ${command} --help.`);

  const searchDirs = values.get(FLAGS.searchDir) ?? [];
  if (searchDirs.length > 0) {
    const existing = env.NEMO_GYM_EXTRA_ROOTS ? [env.NEMO_GYM_EXTRA_ROOTS] : [];
    env.NEMO_GYM_EXTRA_ROOTS = [...searchDirs.map((dir) => path.resolve(dir)), ...existing].join(path.delimiter);
  }

  const configPaths: string[] = [];
  const translated: string[] = [];
  for (const flag of spec.flags) {
    const given = values.get(flag);
    if (!given) continue;
    if (flag === FLAGS.config) configPaths.push(...given);
    else if (flag === FLAGS.resourcesServer) {
      const roots = searchRoots(env, process.cwd());
      configPaths.push(...given.map((name) => resourcesServerConfig(name, roots)));
    } else if (flag.key !== undefined) {
      const last = given[given.length - 1]!;
      translated.push(`+${flag.key}=${flag.value === undefined ? 'true' : formatFlagValue(flag, last)}`);
    }
  }
  const rest: string[] = [];
  for (const token of raw) {
    const paths = rawConfigPaths(token);
    if (paths) configPaths.push(...paths);
    else rest.push(token);
  }

  const overrides = [
    ...(verbose ? ['+verbose=true'] : []),
    ...(configPaths.length > 0 ? [`+config_paths=[${configPaths.map(formatOverrideString).join(',')}]`] : []),
    ...translated,
    ...rest,
  ];
  return { command, noServe: values.has(FLAGS.noServe), positionals, overrides, help: false };
}

function flagLine(flag: FlagSpec): string {
  const names = `${flag.short ? `${flag.short}, ` : '    '}${flag.long}${flag.metavar ? ` ${flag.metavar}` : ''}`;
  return `  ${names.padEnd(34)} ${flag.help}`;
}

const OVERRIDES_NOTE =
  'Any other setting: +key=value adds a key, ++key=value adds or replaces it, ~key deletes it (dotted keys, e.g. ++head_server.port=11001).';

/** Help text: the command list, a group's actions, or one command's flags. */
export function usage(command?: string): string {
  if (command !== undefined && Object.hasOwn(COMMANDS, command)) {
    const spec = COMMANDS[command]!;
    const operands = (spec.positionals ?? []).map(operandText).join('');
    return [
      `usage: gym ${command}${operands} [flags] [+key=value ...]`,
      '',
      spec.summary,
      '',
      'Flags:',
      ...flagsOf(command).map(flagLine),
      '',
      OVERRIDES_NOTE,
      '',
      'Examples:',
      ...spec.examples.map((example) => `  ${example}`),
      '',
    ].join('\n');
  }
  const groups = command !== undefined && Object.hasOwn(GROUPS, command) ? [command] : undefined;
  const listed = Object.keys(COMMANDS).filter((name) => !groups || groups.includes(name.split(' ')[0]!));
  return [
    `usage: gym ${groups ? `${command} <action>` : '<command>'} [flags] [+key=value ...]`,
    '',
    'Commands:',
    ...listed.map((name) => `  ${`${name}${(COMMANDS[name]!.positionals ?? []).map(operandText).join('')}`.padEnd(20)} ${COMMANDS[name]!.summary}`),
    '',
    '  -v, --verbose        Debug logging (accepted before or after the command).',
    '      --version        Print version information.',
    '',
    `Run gym <command> --help for a command's flags. ${OVERRIDES_NOTE}`,
    '',
  ].join('\n');
}

function operandText(name: string): string {
  return name.startsWith('[') ? ` ${name}` : ` <${name}>`;
}
