/**
 * The commands of `gym` (the reference's verbs plus ours; docs/cli.md): the groups and their actions, each command's flags in the order their overrides
 * are written, its operands, a one-line summary and examples. The parser (`argv.ts`) and the help text
 * (`help.ts`) both read this table, so what is accepted and what is documented cannot drift apart.
 */
import { FLAGS, HELP, VERBOSE, type FlagSpec } from './flags.js';

interface CommandSpec {
  summary: string;
  /** In declaration order: translated overrides follow this order. */
  flags: FlagSpec[];
  positionals?: string[];
  examples: string[];
}

const ENV_START_FLAGS = [
  FLAGS.config,
  FLAGS.resourcesServer,
  FLAGS.searchDir,
  FLAGS.model,
  FLAGS.modelUrl,
  FLAGS.modelApiKey,
];

export const COMMAND_SPECS: Record<string, CommandSpec> = {
  'env start': {
    summary: 'Start the head server and every server instance of the composed config; run until Ctrl-C.',
    flags: [...ENV_START_FLAGS, FLAGS.logFormat],
    examples: [
      'gym env start "+config_paths=[counter_remote.yaml]"',
      'gym env start --config my_env.yaml ++head_server.port=11001',
    ],
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
    summary:
      'Collect rollouts: run every input row through its agent, verify it, and write <output>.jsonl. Without --no-serve the environment is started from the config first and stopped at the end.',
    flags: [
      FLAGS.config,
      FLAGS.resourcesServer,
      FLAGS.searchDir,
      FLAGS.model,
      FLAGS.modelUrl,
      FLAGS.modelApiKey,
      FLAGS.noServe,
      FLAGS.resume,
      FLAGS.overwrite,
      FLAGS.agent,
      FLAGS.input,
      FLAGS.output,
      FLAGS.limit,
      FLAGS.numRepeats,
      FLAGS.promptConfig,
      FLAGS.concurrency,
      FLAGS.split,
      FLAGS.temperature,
      FLAGS.topP,
      FLAGS.maxOutputTokens,
      FLAGS.disableAggregation,
      FLAGS.queue,
      FLAGS.logFormat,
    ],
    examples: [
      'gym eval run --no-serve +agent_name=remote_agent +input_jsonl_fpath=data/example.jsonl +output_jsonl_fpath=results/rollouts.jsonl',
      'gym eval run --no-serve -a remote_agent -i data/example.jsonl -o results/rollouts.jsonl --resume',
    ],
  },
  'eval profile': {
    summary: "Per-task reward statistics from a run's materialized inputs and rollouts (no servers needed).",
    flags: [
      FLAGS.config,
      FLAGS.searchDir,
      FLAGS.inputs,
      FLAGS.rollouts,
      FLAGS.json,
      FLAGS.bootstrap,
      FLAGS.seed,
      FLAGS.groupBy,
    ],
    examples: [
      'gym eval profile --inputs results/rollouts_materialized_inputs.jsonl --rollouts results/rollouts.jsonl',
      'gym eval profile --rollouts results/rollouts.jsonl --bootstrap 10000 --seed 7 --group-by difficulty',
    ],
  },
  'eval compare': {
    summary:
      'Pair two runs task by task: the mean difference with a paired 95% interval, the tasks that flipped, McNemar where it applies, and a verdict (better, worse, inconclusive).',
    flags: [FLAGS.jsonFile, FLAGS.margin, FLAGS.failOn],
    positionals: ['baseline', 'candidate'],
    examples: [
      'gym eval compare baseline/rollouts.jsonl candidate/rollouts.jsonl',
      'gym eval compare a.jsonl b.jsonl --margin 0.02 --json compare.json --fail-on worse',
    ],
  },
  'eval export': {
    summary:
      'Export a run for training: trainer samples (token ids, loss mask, log-probs, reward, GRPO group and optional advantage) from the trainable rollouts, or ATIF-v1.7 trajectories; prints how many rollouts were exported and skipped, by reason.',
    flags: [FLAGS.exportFormat, FLAGS.output, FLAGS.advantages],
    positionals: ['rollouts'],
    examples: [
      'gym eval export results/rollouts.jsonl --format trainer -o results/train.jsonl --advantages grpo',
      'gym eval export results/rollouts.jsonl --format atif -o results/trajectories.jsonl',
    ],
  },
  'eval aggregate': {
    summary:
      'Merge rollout shards, sort them by task and rollout, and compute aggregate metrics through the running agents.',
    flags: [FLAGS.config, FLAGS.searchDir, FLAGS.inputGlob, FLAGS.output],
    examples: ["gym eval aggregate -i 'results/shard_*.jsonl' -o results/merged.jsonl"],
  },
  'eval explain': {
    summary:
      'Explain one rollout from the run files alone: outcome and class, each step with its latency, tools and what they returned, the failing hop, retries, worker, trace id, and the command that re-runs it.',
    flags: [FLAGS.full, FLAGS.inputRow],
    positionals: ['results', 'task[:rollout]'],
    examples: [
      'gym eval explain results/rollouts.jsonl 812:1',
      'gym eval explain results/rollouts.jsonl 812 --full',
      'gym eval explain results/rollouts.jsonl 812:1 --input-row > task812_1.jsonl',
    ],
  },
  'eval health': {
    summary:
      "Check a run's rollouts from its files alone (duplicates, missing and failed rollouts, timeouts, max_steps, unanswered tool calls, empty answers, rewards outside [0, 1], missing usage, repeats that never differ), write <stem>_quality_summary.json and print one line; exits 0 whatever it finds.",
    flags: [FLAGS.json],
    positionals: ['rollouts'],
    examples: ['gym eval health results/rollouts.jsonl', 'gym eval health results/rollouts.jsonl --json'],
  },
  quickstart: {
    summary:
      'Run a small example end to end (environment, remote agent, a demo agent service) to check the installation.',
    flags: [
      FLAGS.quickstartEnv,
      FLAGS.brain,
      FLAGS.config,
      FLAGS.searchDir,
      FLAGS.model,
      FLAGS.modelUrl,
      FLAGS.modelApiKey,
      FLAGS.logFormat,
    ],
    examples: ['gym quickstart', 'gym quickstart --env counter', 'gym quickstart --brain NAME'],
  },
  'agent check': {
    summary:
      'Probe the agent service at <url> and report, check by check, whether it speaks the remote-agent contract.',
    flags: [FLAGS.json, FLAGS.caFile, FLAGS.apiKeyEnv, FLAGS.rows, FLAGS.fillEchoFields],
    positionals: ['url'],
    examples: [
      'gym agent check http://localhost:9000',
      'gym agent check https://agent.internal:9000 --ca-file ca.pem --api-key-env MY_AGENT_TOKEN',
      'gym agent check http://localhost:9000 --rows resources_servers/example_session_state_mgmt/data/example.jsonl',
      'gym agent check http://localhost:8080 --fill-echo-fields',
    ],
  },
  view: {
    summary:
      'Serve a local viewer of a rollouts file and its failures sidecar (live while gym eval run writes it, with charts), or compare two runs task by task.',
    flags: [FLAGS.port, FLAGS.host],
    positionals: ['rollouts', '[compare_with]'],
    examples: [
      'gym view results/rollouts.jsonl',
      'gym view results/rollouts.jsonl --port 8080',
      'gym view baseline/rollouts.jsonl candidate/rollouts.jsonl',
    ],
  },
  worker: {
    summary:
      "Take rollout jobs of gym eval run --queue from Redis and run each through this machine's environment (found through its head server); Ctrl-C drains.",
    flags: [FLAGS.config, FLAGS.searchDir, FLAGS.queue, FLAGS.workerConcurrency, FLAGS.metricsPort, FLAGS.logFormat],
    examples: [
      'gym worker --queue redis://10.0.0.2:6379 --concurrency 32',
      'gym worker --queue redis://10.0.0.2:6379 ++head_server.port=11001',
    ],
  },
  'new environment': {
    summary:
      'Write a working environment into resources_servers/<name>/ (app.ts, config with a remote agent, example rows, a scripted solver, a test, README) that collects at mean reward 1.0 as written; never overwrites.',
    flags: [],
    positionals: ['name'],
    examples: ['gym new environment trivia'],
  },
  'new service': {
    summary:
      "Write a working agent service into <name>/ (TypeScript, or --python for standard-library Python) that solves tsgym's counter tasks, with its config, example rows, a test and README; never overwrites.",
    flags: [FLAGS.python],
    positionals: ['name'],
    examples: ['gym new service my_agent', 'gym new service my_agent --python'],
  },
  'tasks check': {
    summary:
      "Run every Harbor-format task's oracle (solution/solve.sh) in a shell sandbox seeded from its Dockerfile, verify it, and list the tasks that do not reach reward 1 (exit 1 if any). Needs what the shell environment needs: Linux, root, bubblewrap.",
    flags: [FLAGS.json],
    positionals: ['dir'],
    examples: [
      'gym tasks check resources_servers/shell/data/harbor-example',
      'gym tasks check path/to/one-task --json',
      'gym tasks check tasks/ +sandbox_base_dir=/var/tmp/tsgym-check +check_timeout_secs=120',
    ],
  },
  version: {
    summary: 'Print version information.',
    flags: [FLAGS.json],
    examples: ['gym --version', 'gym --version --json'],
  },
};

/** Commands of two words (`gym env start`): the group and its actions. */
export const COMMAND_GROUPS: Record<string, string[]> = {
  env: ['start', 'status', 'stop', 'resolve'],
  eval: ['run', 'profile', 'compare', 'export', 'aggregate', 'explain', 'health'],
  agent: ['check'],
  new: ['environment', 'service'],
  tasks: ['check'],
};
/** Commands of one word. */
export const LEAF_COMMANDS = ['quickstart', 'view', 'worker', 'version', 'help'];

/** A command's own flags, then the ones every command takes. */
export function flagsOf(command: string): FlagSpec[] {
  return [...(COMMAND_SPECS[command]?.flags ?? []), VERBOSE, HELP];
}
