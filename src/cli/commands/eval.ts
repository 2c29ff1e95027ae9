/**
 * `gym eval run`, `gym eval profile`, `gym eval aggregate`: configuration in, the collect/profile machinery out.
 */
import { loadGlobalConfig, type GlobalConfig } from '../../config/index.js';
import { readNumber, readSwitch, readText } from '../../config/switch.js';
import { ConfigError } from '../../errors.js';
import { applyLogFormat } from '../../logging/log.js';
import type { AgentDirectory } from '../../collect/agents.js';
import type { CollectIO } from '../../collect/collect.js';
import { headServerAddress, parseCollectionConfig, requireKeys } from '../../collect/config.js';
import { raiseTierUpBudget } from '../../collect/tiering.js';
import { checkOutputPath, materializedInputsPathFor } from '../../runfiles/paths.js';
import type { ProfileOptions } from '../../profile/profile.js';
import type { ParsedCommand } from '../argv.js';
import { stderrLine, stdoutLine } from '../output.js';

// Each command loads only its own machinery (profile needs no HTTP client): startup time is test time.
const collecting = () => import('../../collect/collect.js');
const agentLookup = () => import('../../collect/agents.js');
const dispatching = () => import('../../queue/collector.js');

export function collectIO(): CollectIO {
  return { out: stdoutLine, warn: stderrLine, progressStream: process.stderr, env: process.env };
}

export async function evalRun(cmd: ParsedCommand): Promise<number> {
  raiseTierUpBudget();
  if (cmd.noServe) {
    const local = await loadGlobalConfig({ overrides: cmd.overrides, allocatePorts: false });
    applyLogFormat(local, 'collector');
    const config = parseCollectionConfig(local);
    const { agentDirectoryFromHead } = await agentLookup();
    // A producer through a queue needs no environment: unless a head server is named, the agents are the
    // workers' (the queue backend learns them from Redis).
    const queued = local.queue_url !== undefined && local.queue_url !== null && local.queue_url !== '';
    const headNamed = cmd.overrides.some((override) => /^\+{0,2}head_server[.=]/.test(override));
    const agents = queued && !headNamed ? undefined : await agentDirectoryFromHead(config.head);
    const { collectWithBackend } = await dispatching();
    // Ctrl-C: the rollouts in flight stay with the running agent and cannot be recorded; every finished one is
    // already on disk (appended synchronously). Aborting marks the status file `interrupted`; then exit at once.
    const abort = new AbortController();
    const onSignal = (): void => {
      abort.abort();
      stderrLine(`Interrupted: the finished rollouts are on disk; to finish the run: ${resumeCommandLine()}`);
      process.exit(130);
    };
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    try {
      return await collectWithBackend(local, {
        config,
        agents,
        io: collectIO(),
        signal: abort.signal,
        resumeCommand: resumeCommandLine(),
      });
    } finally {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    }
  }
  return runWithEnvironment(cmd);
}

/** Without `--no-serve`: start the configured environment, collect against it, stop it (also on Ctrl-C). */
async function runWithEnvironment(cmd: ParsedCommand): Promise<number> {
  const local = await loadGlobalConfig({ overrides: cmd.overrides, allocatePorts: true });
  applyLogFormat(local, 'collector');
  const config = parseCollectionConfig(local);
  const { startEnvironment } = await import('../../supervisor/supervisor.js');
  const { agentDirectoryFromConfig } = await agentLookup();
  const { resolveInputPath } = await collecting();
  const { collectWithBackend } = await dispatching();
  resolveInputPath(config.inputPath); // a missing input fails before any server starts
  const abort = new AbortController();
  let interrupted = 0;
  let environment: Awaited<ReturnType<typeof startEnvironment>> | undefined;
  const onSignal = (): void => {
    interrupted++;
    if (interrupted > 1) environment?.kill();
    // First stop recording (in-flight rollouts die with the servers: they are not failures), then stop servers.
    abort.abort();
    stderrLine(
      'Interrupted: stopping the environment… (the finished rollouts are on disk; rerun with --resume to finish)',
    );
    void environment?.stop().then(() => process.exit(130));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    environment = await startEnvironment(local, { signal: abort.signal, out: process.stderr });
    const agents = agentDirectoryFromConfig(local, `the environment started from ${describeConfigPaths(local)}`);
    const serverDied = environment.done.then((reason) => {
      if (reason.kind === 'server_exited') {
        throw new ConfigError(
          `Server '${reason.name}' kept exiting during collection (a crash loop: ${reason.restarts} restart(s) did not keep it up; ` +
            `see ${reason.logFile}); the rollouts so far are on disk. Fix it and rerun with --resume.`,
          'GYM_SERVER_EXITED',
        );
      }
      return new Promise<never>(() => {});
    });
    serverDied.catch(() => undefined); // a late death (after the race is decided) must not crash the process
    return await Promise.race([
      collectWithBackend(local, {
        config,
        agents,
        io: collectIO(),
        signal: abort.signal,
        resumeCommand: resumeCommandLine(),
      }),
      serverDied,
    ]);
  } finally {
    await environment?.stop();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/** This very command line with resume switched on, shell-quoted, for messages that end a run early. */
function resumeCommandLine(): string {
  const args = process.argv.slice(2);
  const resuming = args.some((arg) => arg === '--resume' || /^\+*resume_from_cache=true$/.test(arg));
  const quoted = [
    ...args.filter((arg) => arg !== '++overwrite=true' && arg !== '+overwrite=true'),
    ...(resuming ? [] : ['+resume_from_cache=true']),
  ].map((arg) => (/^[\w@%+=:,./[\]-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`));
  return `gym ${quoted.join(' ')}`;
}

function describeConfigPaths(config: GlobalConfig): string {
  return Array.isArray(config.config_paths) && config.config_paths.length > 0
    ? config.config_paths.join(', ')
    : 'the given config';
}

export async function evalProfile(cmd: ParsedCommand): Promise<number> {
  const config = await loadGlobalConfig({ overrides: cmd.overrides, allocatePorts: false });
  const rollouts = config.rollouts_jsonl_fpath;
  if (typeof rollouts === 'string' && rollouts !== '' && (config.materialized_inputs_jsonl_fpath ?? '') === '') {
    config.materialized_inputs_jsonl_fpath = materializedInputsPathFor(rollouts);
  }
  requireKeys(config, [
    { key: 'materialized_inputs_jsonl_fpath', flag: '--inputs' },
    { key: 'rollouts_jsonl_fpath', flag: '--rollouts' },
  ]);
  const { describeProfile, profileJson, profileRollouts } = await import('../../profile/profile.js');
  const report = await profileRollouts({
    inputsPath: String(config.materialized_inputs_jsonl_fpath),
    rolloutsPath: String(config.rollouts_jsonl_fpath),
    allowPartial: readSwitch(config, 'allow_partial_rollouts'),
    warn: stderrLine,
    ...profileExtras(config),
  });
  if (readSwitch(config, 'json')) stdoutLine(JSON.stringify(profileJson(report)));
  else for (const line of describeProfile(report)) stdoutLine(line);
  return 0;
}

/** `--bootstrap N [--seed S]` and `--group-by FIELD`, when given. */
function profileExtras(config: GlobalConfig): Pick<ProfileOptions, 'bootstrap' | 'groupBy'> {
  const samples = readNumber(config, 'bootstrap_samples', { min: 1, max: 1_000_000, integer: true });
  const seed = readNumber(config, 'bootstrap_seed', { min: 0, max: 2 ** 32 - 1, integer: true }) ?? 0;
  const groupBy = readText(config, 'group_by');
  return {
    ...(samples === undefined ? {} : { bootstrap: { samples, seed } }),
    ...(groupBy === undefined ? {} : { groupBy }),
  };
}

export async function evalAggregate(cmd: ParsedCommand): Promise<number> {
  const config = await loadGlobalConfig({ overrides: cmd.overrides, allocatePorts: false });
  requireKeys(config, [
    { key: 'input_glob', flag: '--input-glob' },
    { key: 'output_jsonl_fpath', flag: '--output' },
  ]);
  const outputPath = String(config.output_jsonl_fpath);
  checkOutputPath(outputPath);
  const head = headServerAddress(config);
  const { agentDirectoryFromHead, headUrl } = await agentLookup();
  const { agentMetricsSource } = await import('../../collect/aggregate.js');
  const { aggregateShards } = await import('../../collect/shards.js');
  let agents: AgentDirectory | undefined;
  try {
    agents = await agentDirectoryFromHead(head);
  } catch (err) {
    if (!(err instanceof ConfigError && err.code === 'GYM_HEAD_UNREACHABLE')) throw err;
    stdoutLine(`The head server at ${headUrl(head)} is not reachable; computing aggregate metrics locally.`);
  }
  const remote = agents ? agentMetricsSource(agents) : undefined;
  return aggregateShards({
    inputGlob: String(config.input_glob),
    outputPath,
    mergeShards: config.merge_shards === undefined ? true : readSwitch(config, 'merge_shards'),
    remoteSource: (agent) => (remote && agents?.urlOf(agent) !== undefined ? remote : undefined),
    out: stdoutLine,
    warn: stderrLine,
  });
}
