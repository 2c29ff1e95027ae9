/**
 * `gym quickstart [--env NAME]`: the whole product in one command, offline. For the chosen environment (the
 * counter by default; the table is `quickstart-environments.ts`) it starts the example agent service that solves
 * its example rows, the environment and the remote agent (each on a free port), collects the example rows,
 * profiles them, shows one trajectory, says where everything is, and stops everything it started.
 */
import { createReadStream } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { applyLogFormat } from '../../logging/log.js';
import { Writable } from 'node:stream';
import { findFreePort, installRoot, loadGlobalConfig } from '../../config/index.js';
import { isPlainObject } from '../../config/types.js';
import { jsonValueText } from '../../contract/records.js';
import { UsageError } from '../../errors.js';
import { NG } from '../../runfiles/ng-keys.js';
import type { Row } from '../../runfiles/row.js';
import type { ParsedCommand } from '../argv.js';
import {
  DEFAULT_QUICKSTART_ENVIRONMENT,
  findQuickstartEnvironment,
  QUICKSTART_ENVIRONMENTS,
  stringSetting,
  type QuickstartEnvironment,
} from './quickstart-environments.js';

const DEFAULT_OUTPUT = 'results/quickstart/rollouts.jsonl';

const say = (line = ''): void => void process.stdout.write(`${line}\n`);

export async function quickstart(cmd: ParsedCommand): Promise<number> {
  const started = performance.now();
  const settings = await loadGlobalConfig({ overrides: cmd.overrides, allocatePorts: false });
  applyLogFormat(settings, 'collector');
  const output = stringSetting(settings, 'output_jsonl_fpath') ?? DEFAULT_OUTPUT;
  const chosen = chooseEnvironment(stringSetting(settings, 'quickstart_env') ?? DEFAULT_QUICKSTART_ENVIRONMENT);

  const service = await chosen.startService(settings);
  say(`Agent service: ${service.brainName} at ${service.url}`);

  let environment: { stop(): Promise<void>; kill(): void; logDir: string } | undefined;
  // Ctrl-C stops the collection and the servers (their rollouts in flight die with them); a second one kills them.
  const abort = new AbortController();
  const onSignal = (): void => {
    if (abort.signal.aborted) environment?.kill();
    abort.abort();
    process.stderr.write('Interrupted: stopping everything the quickstart started…\n');
    void environment?.stop();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    const config = await loadGlobalConfig({
      overrides: [
        `+config_paths=[${path.join(installRoot(), chosen.config)}]`,
        `++${chosen.agentName}.responses_api_agents.remote_agent.agent_base_url=${service.url}`,
        `++head_server.port=${await findFreePort()}`,
        `+input_jsonl_fpath=${path.join(installRoot(), chosen.exampleData)}`,
        `+output_jsonl_fpath=${output}`,
        `+agent_name=${chosen.agentName}`,
        '++overwrite=true',
      ],
    });
    const { startEnvironment } = await import('../../supervisor/supervisor.js');
    const envStarted = performance.now();
    // Server output goes to the log files only: the quickstart's own lines are the story.
    const running = await startEnvironment(config, { out: discard(), signal: abort.signal });
    environment = running;
    say(
      `Environment: ${chosen.displayName} + remote agent ready in ${ms(performance.now() - envStarted)} (logs: ${running.logDir})`,
    );
    say('');

    const { parseCollectionConfig } = await import('../../collect/config.js');
    const { agentDirectoryFromConfig } = await import('../../collect/agents.js');
    const { collectRollouts } = await import('../../collect/collect.js');
    const { collectIO } = await import('./eval.js');
    const collected = await collectRollouts({
      config: parseCollectionConfig(config),
      agents: agentDirectoryFromConfig(config, 'the quickstart environment'),
      io: collectIO(),
      signal: abort.signal,
      // The quickstart always starts over (++overwrite=true), so "add --resume" would be advice it cannot take.
      resumeCommand: `run gym quickstart${chosen.name === 'counter' ? '' : ` --env ${chosen.name}`} again (it starts the run over)`,
    });

    const { describeProfile, profileRollouts } = await import('../../profile/profile.js');
    const { materializedInputsPathFor } = await import('../../runfiles/paths.js');
    const report = await profileRollouts({
      inputsPath: materializedInputsPathFor(output),
      rolloutsPath: output,
      allowPartial: true,
      warn: (line) => void process.stderr.write(`${line}\n`),
    });
    say('');
    say('Profile (gym eval profile):');
    for (const line of describeProfile(report)) say(`  ${line}`);

    say('');
    const trajectory = await firstTrajectory(output);
    if (trajectory) {
      const reward = typeof trajectory.reward === 'number' ? pyNumber(trajectory.reward) : String(trajectory.reward);
      say(`One trajectory (task ${String(trajectory.task)}, reward ${reward}):`);
      say(`  ${trajectory.shape}`);
      for (const step of trajectory.steps) say(`    ${step}`);
    } else {
      say('No successful trajectory to show: see the failures file above for what went wrong.');
    }

    const { completed, expected, failedRetryable, failedTerminal, rewardSum } = report.overall;
    say('');
    say(
      `Result: ${completed} rollouts, mean reward ${pyNumber(completed > 0 ? rewardSum / completed : 0)}, ` +
        `${failedRetryable + failedTerminal} failed, ${expected - completed - failedRetryable - failedTerminal} missing.`,
    );
    say(`Artefacts: ${path.dirname(output)}/ (rollouts, failures, materialized inputs, aggregate metrics, profile).`);
    say(
      `Done in ${ms(performance.now() - started)}. Next: run your own service in the three-terminal flow (README, "Drive your own agent").`,
    );
    return collected !== 0 ? collected : completed === expected ? 0 : 1;
  } catch (err) {
    if (abort.signal.aborted) return 130;
    throw err;
  } finally {
    await environment?.stop();
    await service.close();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

function chooseEnvironment(name: string): QuickstartEnvironment {
  const found = findQuickstartEnvironment(name);
  if (found) return found;
  const known = QUICKSTART_ENVIRONMENTS.map((entry) => entry.name).join(', ');
  throw new UsageError(`--env ${name} is not an environment the quickstart knows: choose one of ${known}.`);
}

interface Trajectory {
  task: unknown;
  reward: unknown;
  shape: string;
  steps: string[];
}

/** The first successful rollout, rendered as its item types and one line per item. */
async function firstTrajectory(file: string): Promise<Trajectory | undefined> {
  const lines = createInterface({ input: createReadStream(file), crlfDelay: Infinity });
  try {
    for await (const line of lines) {
      if (!line.trim()) continue;
      const row = JSON.parse(line) as Row;
      const output = isPlainObject(row.response) ? row.response.output : undefined;
      const items = Array.isArray(output) ? (output as TrajectoryItem[]) : [];
      return {
        task: row[NG.taskIndex],
        reward: row.reward,
        shape: items.map((item) => String(item.type)).join(' → '),
        steps: items.map(describeItem),
      };
    }
    return undefined;
  } finally {
    lines.close();
  }
}

/** A trajectory item as written in the rollouts file: only the fields the summary prints. */
interface TrajectoryItem {
  type?: unknown;
  name?: unknown;
  arguments?: unknown;
  output?: unknown;
  content?: unknown;
}

function describeItem(item: TrajectoryItem): string {
  switch (item.type) {
    case 'function_call':
      return `function_call         ${String(item.name)}(${String(item.arguments)})`;
    case 'function_call_output':
      return `function_call_output  ${typeof item.output === 'string' ? item.output : JSON.stringify(item.output)}`;
    case 'message': {
      const content = Array.isArray(item.content)
        ? (item.content as Array<{ text?: unknown; refusal?: unknown }>)
            .map((part) => jsonValueText(part.text ?? part.refusal))
            .join('')
        : jsonValueText(item.content);
      return `message               ${JSON.stringify(content)}`;
    }
    default:
      return String(item.type);
  }
}

function discard(): Writable {
  return new Writable({ write: (_chunk, _encoding, done) => done() });
}

/** Numbers as Python prints them, so `mean reward 1.0` reads the same as the reference's output. */
function pyNumber(value: number): string {
  return Number.isInteger(value) ? value.toFixed(1) : String(Number(value.toFixed(4)));
}

function ms(value: number): string {
  return value >= 1000 ? `${(value / 1000).toFixed(1)} s` : `${Math.round(value)} ms`;
}
