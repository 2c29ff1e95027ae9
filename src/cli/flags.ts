/**
 * Every named flag `gym` knows, once: its spellings, its value kind, its help line and the `+key=value` override
 * it becomes (docs/cli.md, "Flags and overrides"). Commands pick their flags from this table (`command-specs.ts`), so a flag shared by several
 * commands is described in one place.
 */

type ValueKind = 'string' | 'int' | 'float' | 'raw';

export interface FlagSpec {
  long: string;
  short?: string;
  /** undefined for switches */
  value?: ValueKind;
  metavar?: string;
  help: string;
  /** The override a value (or a switch) becomes; undefined for flags handled specially. */
  key?: string;
}

export const FLAGS = {
  config: {
    long: '--config',
    value: 'string',
    metavar: 'PATH',
    help: 'A config file to compose (repeatable). Same as +config_paths=[PATH,…].',
  },
  resourcesServer: {
    long: '--resources-server',
    value: 'string',
    metavar: 'NAME[/FLAVOR]',
    help: 'Add resources_servers/NAME/configs/FLAVOR.yaml (FLAVOR defaults to NAME) to the config paths (repeatable).',
  },
  searchDir: {
    long: '--search-dir',
    value: 'string',
    metavar: 'DIR',
    help: 'An extra root for relative paths, searched before the working directory (repeatable; prepended to NEMO_GYM_EXTRA_ROOTS).',
  },
  model: {
    long: '--model',
    short: '-m',
    value: 'string',
    metavar: 'NAME',
    key: 'policy_model_name',
    help: 'Policy model name (+policy_model_name).',
  },
  modelUrl: {
    long: '--model-url',
    value: 'string',
    metavar: 'URL',
    key: 'policy_base_url',
    help: 'Policy model base URL (+policy_base_url).',
  },
  modelApiKey: {
    long: '--model-api-key',
    value: 'string',
    metavar: 'KEY',
    key: 'policy_api_key',
    help: 'Policy model API key (+policy_api_key).',
  },
  noServe: { long: '--no-serve', help: 'Use the servers already started by gym env start instead of starting them.' },
  resume: {
    long: '--resume',
    key: 'resume_from_cache',
    help: 'Keep finished rollouts and run only the missing or failed ones (+resume_from_cache=true).',
  },
  overwrite: {
    long: '--overwrite',
    key: 'overwrite',
    help: 'Start over: truncate an existing output and its failures sidecar (+overwrite=true).',
  },
  agent: {
    long: '--agent',
    short: '-a',
    value: 'string',
    metavar: 'NAME',
    key: 'agent_name',
    help: 'Agent instance for rows without an agent_ref (+agent_name).',
  },
  input: {
    long: '--input',
    short: '-i',
    value: 'string',
    metavar: 'JSONL',
    key: 'input_jsonl_fpath',
    help: 'Input rows (+input_jsonl_fpath).',
  },
  output: {
    long: '--output',
    short: '-o',
    value: 'string',
    metavar: 'JSONL',
    key: 'output_jsonl_fpath',
    help: 'Output file (+output_jsonl_fpath).',
  },
  limit: {
    long: '--limit',
    value: 'int',
    metavar: 'N',
    key: 'limit',
    help: 'Use only the first N input rows (+limit).',
  },
  numRepeats: {
    long: '--num-repeats',
    value: 'raw',
    metavar: 'N',
    key: 'num_repeats',
    help: "Rollouts per task: an int or a dict such as '{a: 4, _default: 1}' (+num_repeats).",
  },
  promptConfig: {
    long: '--prompt-config',
    value: 'string',
    metavar: 'PATH',
    key: 'prompt_config',
    help: 'Prompt config applied to every row (+prompt_config).',
  },
  concurrency: {
    long: '--concurrency',
    value: 'int',
    metavar: 'N',
    key: 'num_samples_in_parallel',
    help: 'Rollouts in flight at once (+num_samples_in_parallel).',
  },
  split: {
    long: '--split',
    value: 'string',
    metavar: 'SPLIT',
    key: 'split',
    help: 'Dataset split to collect: train, validation or benchmark (+split).',
  },
  temperature: {
    long: '--temperature',
    value: 'float',
    metavar: 'T',
    key: 'responses_create_params.temperature',
    help: 'Sampling temperature (+responses_create_params.temperature).',
  },
  topP: {
    long: '--top-p',
    value: 'float',
    metavar: 'P',
    key: 'responses_create_params.top_p',
    help: 'Nucleus sampling (+responses_create_params.top_p).',
  },
  maxOutputTokens: {
    long: '--max-output-tokens',
    value: 'int',
    metavar: 'N',
    key: 'responses_create_params.max_output_tokens',
    help: 'Output token cap (+responses_create_params.max_output_tokens).',
  },
  disableAggregation: {
    long: '--disable-aggregation',
    key: 'disable_aggregation',
    help: 'Skip the /aggregate_metrics call (+disable_aggregation=true).',
  },
  inputGlob: {
    long: '--input-glob',
    short: '-i',
    value: 'string',
    metavar: 'GLOB',
    key: 'input_glob',
    help: 'Shards to merge: one glob or comma-separated globs (+input_glob).',
  },
  inputs: {
    long: '--inputs',
    value: 'string',
    metavar: 'JSONL',
    key: 'materialized_inputs_jsonl_fpath',
    help: "The run's <stem>_materialized_inputs.jsonl (+materialized_inputs_jsonl_fpath).",
  },
  rollouts: {
    long: '--rollouts',
    value: 'string',
    metavar: 'JSONL',
    key: 'rollouts_jsonl_fpath',
    help: "The run's rollouts file (+rollouts_jsonl_fpath).",
  },
  json: { long: '--json', key: 'json', help: 'Machine-readable JSON output (+json=true).' },
  jsonFile: {
    long: '--json',
    value: 'string',
    metavar: 'FILE',
    key: 'json_file',
    help: 'Also write the machine-readable result to FILE (+json_file).',
  },
  bootstrap: {
    long: '--bootstrap',
    value: 'int',
    metavar: 'N',
    key: 'bootstrap_samples',
    help: 'Add a cluster bootstrap 95% interval from N resamples of the tasks, seeded by --seed (+bootstrap_samples).',
  },
  seed: {
    long: '--seed',
    value: 'int',
    metavar: 'N',
    key: 'bootstrap_seed',
    help: "The bootstrap's seed (+bootstrap_seed; default 0): the same files and seed give the same interval.",
  },
  groupBy: {
    long: '--group-by',
    value: 'string',
    metavar: 'FIELD',
    key: 'group_by',
    help: 'Also report each agent per value of FIELD, read from the rollout or its input row, e.g. difficulty (+group_by).',
  },
  margin: {
    long: '--margin',
    value: 'float',
    metavar: 'X',
    key: 'margin',
    help: 'The difference that matters (default 0): better needs the interval above X, worse below −X (+margin).',
  },
  exportFormat: {
    long: '--format',
    value: 'string',
    metavar: 'trainer|atif',
    key: 'format',
    help: 'trainer: one token-level sample per trainable rollout (input_ids, loss_mask, logprobs, reward, group); atif: one ATIF-v1.7 trajectory per rollout (+format).',
  },
  advantages: {
    long: '--advantages',
    value: 'string',
    metavar: 'grpo',
    key: 'advantages',
    help: "Add each sample's GRPO advantage: (reward - mean) / (std + 1e-6) over the exported rollouts of its task (+advantages).",
  },
  failOn: {
    long: '--fail-on',
    value: 'string',
    metavar: 'worse',
    key: 'fail_on',
    help: 'Exit 1 when the verdict is worse, for CI gating; otherwise the exit code never reflects the verdict (+fail_on).',
  },
  metricsPort: {
    long: '--metrics-port',
    value: 'int',
    metavar: 'N',
    key: 'metrics_port',
    help: 'Serve Prometheus metrics on GET http://<metrics_host>:N/metrics (+metrics_port; host +metrics_host, default 127.0.0.1).',
  },
  full: {
    long: '--full',
    key: 'full',
    help: 'Print tool arguments, tool outputs, messages and error bodies whole instead of truncated (+full=true).',
  },
  inputRow: {
    long: '--input-row',
    key: 'input_row',
    help: "Print the selected rollouts' input rows as dispatched (one JSON line each), to feed back to gym eval run -i (+input_row=true).",
  },
  caFile: {
    long: '--ca-file',
    value: 'string',
    metavar: 'PATH',
    key: 'ca_file',
    help: 'Trust this PEM CA for an https:// service with a private CA, as agent_ca_file does (+ca_file).',
  },
  apiKeyEnv: {
    long: '--api-key-env',
    value: 'string',
    metavar: 'NAME',
    key: 'api_key_env',
    help: 'Send the value of environment variable NAME as Authorization: Bearer, as agent_api_key_env does (+api_key_env).',
  },
  fillEchoFields: {
    long: '--fill-echo-fields',
    key: 'fill_echo_fields',
    help: 'Judge answers completed from the request where they lack only echo fields (tools, tool_choice, parallel_tool_calls) or usage details, as fill_echo_fields: true in the remote_agent config does (+fill_echo_fields=true).',
  },
  rows: {
    long: '--rows',
    value: 'string',
    metavar: 'JSONL',
    key: 'rows',
    help: "Probe with an environment's dataset rows (each row's responses_create_params and tools) instead of the counter conversations (+rows).",
  },
  quickstartEnv: {
    long: '--env',
    value: 'string',
    metavar: 'NAME',
    key: 'quickstart_env',
    help: 'Which environment the quickstart runs: counter (default) or another listed one (+quickstart_env).',
  },
  brain: {
    long: '--brain',
    value: 'string',
    metavar: 'NAME',
    key: 'brain',
    help: 'Which brain drives the example agent service (+brain).',
  },
  port: {
    long: '--port',
    value: 'int',
    metavar: 'N',
    key: 'port',
    help: 'Port to serve on; 0 (the default) picks a free one (+port).',
  },
  queue: {
    long: '--queue',
    value: 'string',
    metavar: 'REDIS_URL',
    key: 'queue_url',
    help: 'Distribute the rollouts to gym worker processes through Redis, e.g. redis://HOST:6379/0 (+queue_url).',
  },
  workerConcurrency: {
    long: '--concurrency',
    value: 'int',
    metavar: 'N',
    key: 'worker_concurrency',
    help: 'Jobs this worker runs at once (+worker_concurrency; default 16).',
  },
  python: {
    long: '--python',
    key: 'python',
    help: 'Write the service in Python 3 (standard library only) instead of TypeScript (+python=true).',
  },
  host: {
    long: '--host',
    value: 'string',
    metavar: 'HOST',
    key: 'host',
    help: 'Address to serve on (+host; default 127.0.0.1, this machine only).',
  },
  logFormat: {
    long: '--log-format',
    value: 'string',
    metavar: 'text|json',
    key: 'log_format',
    help: 'json: this process and every server it starts log one JSON object per line, with trace ids and rollout keys (+log_format; default text, or TSGYM_LOG_FORMAT).',
  },
} satisfies Record<string, FlagSpec>;

/** Accepted by every command, and before the command too. */
export const VERBOSE: FlagSpec = {
  long: '--verbose',
  short: '-v',
  help: 'Debug logging here and in every spawned server (+verbose=true).',
};
export const HELP: FlagSpec = { long: '--help', short: '-h', help: 'Show this help.' };
