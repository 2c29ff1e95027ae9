import { normalizeAgentBaseUrl } from '../../http/service-url.js';
import { parseServiceAuth, type ServiceAuth } from '../../http/service-auth.js';
import { runAgentCheck } from '../../check/agent-check.js';
import { DEFAULT_MAX_ROWS, loadRowProbes } from '../../check/row-probes.js';
import { formatReport } from '../../check/format.js';
import { closeMatches } from '../../config/did-you-mean.js';
import { parseOverrideValue } from '../../config/override-grammar.js';
import { ConfigError, UsageError } from '../../errors.js';
import type { ParsedCommand } from '../argv.js';

/** The overrides `gym agent check` reads, with their defaults. */
const SETTINGS = {
  json: false,
  timeout_secs: 60,
  max_steps: 8,
  verbose: false,
  /** Empty: unset. */
  ca_file: '',
  api_key_env: '',
  /** A dataset JSONL whose rows are the probes (`--rows`); empty: the counter conversations. */
  rows: '',
  /** With rows: probe at most this many (the first ones). */
  max_rows: DEFAULT_MAX_ROWS,
  /** Judge answers as the remote agent with `fill_echo_fields: true` does (`--fill-echo-fields`). */
  fill_echo_fields: false,
};
type Settings = typeof SETTINGS;

export interface AgentCheckIo {
  stdout: { write(text: string): unknown };
}

/**
 * `gym agent check <agent_base_url>`: probe a service the way the remote agent will call it and report each check.
 * Exit 0 when nothing failed, 1 when a check failed; a missing or malformed URL is a usage error (exit 2).
 */
export async function agentCheck(cmd: ParsedCommand, io: AgentCheckIo = process): Promise<number> {
  const [raw, ...extra] = cmd.positionals;
  if (raw === undefined) {
    throw new UsageError(
      'gym agent check needs the base URL of your service, e.g. gym agent check http://localhost:9000',
    );
  }
  if (extra.length > 0) throw new UsageError(`gym agent check takes one URL; unexpected: ${extra.join(' ')}`);
  let baseUrl: string;
  try {
    baseUrl = normalizeAgentBaseUrl(raw, 'the service URL');
  } catch (err) {
    if (err instanceof ConfigError) throw new UsageError(err.message);
    throw err;
  }
  const settings = readSettings(cmd.overrides);
  const rows = settings.rows ? await loadRowProbes(settings.rows, settings.max_rows) : undefined;
  const report = await runAgentCheck(baseUrl, {
    timeoutMs: settings.timeout_secs * 1000,
    maxSteps: settings.max_steps,
    auth: checkAuth(settings),
    fillEchoFields: settings.fill_echo_fields,
    ...(rows ? { rows } : {}),
  });
  io.stdout.write(settings.json ? `${JSON.stringify(report, null, 2)}\n` : formatReport(report));
  return report.ok ? 0 : 1;
}

/** The credential and CA to probe with, checked as the remote agent checks its own (errors are usage errors). */
function checkAuth(settings: Settings): ServiceAuth {
  const flag = (key: string): string => (key === 'agent_ca_file' ? '--ca-file' : '--api-key-env');
  try {
    return parseServiceAuth(
      {
        ...(settings.api_key_env ? { agent_api_key_env: settings.api_key_env } : {}),
        ...(settings.ca_file ? { agent_ca_file: settings.ca_file } : {}),
      },
      flag,
      process.env,
    );
  } catch (err) {
    if (err instanceof ConfigError) throw new UsageError(err.message);
    throw err;
  }
}

function readSettings(overrides: readonly string[]): Settings {
  const settings = { ...SETTINGS };
  for (const token of overrides) {
    const match = /^\+{1,2}([A-Za-z_][\w.]*)=(.*)$/s.exec(token);
    if (!match)
      throw new UsageError(`gym agent check does not understand '${token}'; it takes +key=value overrides only.`);
    const [, key, text] = match as unknown as [string, string, string];
    if (!Object.hasOwn(SETTINGS, key)) {
      const hint = closeMatches(key, Object.keys(SETTINGS), 1)[0];
      throw new UsageError(
        `gym agent check has no setting '${key}'.${hint ? ` Did you mean +${hint}?` : ''} ` +
          `Settings: ${Object.keys(SETTINGS)
            .map((name) => `+${name}`)
            .join(', ')}.`,
      );
    }
    let value: unknown;
    try {
      value = parseOverrideValue(text);
    } catch {
      value = text;
    }
    const name = key as keyof Settings;
    if (typeof SETTINGS[name] === 'string') {
      (settings as Record<string, unknown>)[name] = String(value);
    } else if (typeof SETTINGS[name] === 'boolean') {
      if (typeof value !== 'boolean') throw new UsageError(`+${key} must be true or false, got '${text}'.`);
      (settings as Record<string, unknown>)[name] = value;
    } else {
      const isCount = name === 'max_steps' || name === 'max_rows';
      const ok =
        typeof value === 'number' && Number.isFinite(value) && value > 0 && (!isCount || Number.isInteger(value));
      if (!ok)
        throw new UsageError(
          `+${key} must be ${isCount ? 'an integer ≥ 1' : 'a number of seconds > 0'}, got '${text}'.`,
        );
      (settings as Record<string, unknown>)[name] = value;
    }
  }
  return settings;
}
