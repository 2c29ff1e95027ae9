/**
 * The parser of the `gym` command line, in two layers as in the reference: named flags per command, each
 * translated into `+key=value` overrides, and every other token kept as a Hydra-style override. The final
 * override list is: `+verbose=true`, one coalesced `+config_paths=[…]`, the translated flags, the raw overrides.
 * What each command accepts is in `command-specs.ts`; this module only reads tokens against it.
 */
import path from 'node:path';
import { closeMatches } from '../config/did-you-mean.js';
import { formatOverrideString, parseOverrideValue } from '../config/override-grammar.js';
import { searchRoots } from '../config/roots.js';
import { UsageError } from '../errors.js';
import { COMMAND_GROUPS, COMMAND_SPECS, LEAF_COMMANDS, flagsOf } from './command-specs.js';
import { FLAGS, HELP, VERBOSE, type FlagSpec } from './flags.js';
import { resourcesServerConfigPath } from './resources-server.js';

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
      if (raw.trim() === '' || !Number.isFinite(Number(raw)))
        throw new UsageError(`argument ${flag.long}: invalid float value: '${raw}'.`);
      return raw.trim();
    case 'raw':
      try {
        parseOverrideValue(raw);
      } catch {
        throw new UsageError(
          `argument ${flag.long}: '${raw}' is not a valid value; write an int, or a dict such as '{a: 4, _default: 1}'.`,
        );
      }
      return raw;
    default:
      return formatOverrideString(raw);
  }
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
  if (Object.hasOwn(COMMAND_GROUPS, word)) {
    const action = argv[start + 1];
    const actions = COMMAND_GROUPS[word]!;
    if (action === undefined || action.startsWith('-') || isOverrideToken(action)) {
      if (action === '-h' || action === '--help') return { command: word, next: start + 1 };
      throw new UsageError(`gym ${word} needs an action: ${actions.join(', ')}. See gym ${word} --help.`);
    }
    if (!actions.includes(action)) throw choiceError(`gym ${word} action`, action, actions);
    return { command: `${word} ${action}`, next: start + 2 };
  }
  if (LEAF_COMMANDS.includes(word)) return { command: word, next: start + 1 };
  throw choiceError('command', word, [...Object.keys(COMMAND_GROUPS), ...LEAF_COMMANDS]);
}

/** The switches that make sense without a command, read before it, and where the command starts. */
interface LeadingSwitches {
  verbose: boolean;
  help: boolean;
  version: boolean;
  json: boolean;
  next: number;
}

/** What the tokens after the command say, gathered in one pass over them. */
interface CommandTokens {
  verbose: boolean;
  help: boolean;
  /** Each flag given, with its values in order (`''` for a switch). */
  values: Map<FlagSpec, string[]>;
  positionals: string[];
  /** Hydra-style overrides, kept as typed. */
  raw: string[];
  unknown: string[];
}

function readLeadingSwitches(argv: readonly string[]): LeadingSwitches {
  const leading = { verbose: false, help: false, version: false, json: false, next: 0 };
  // Only switches that make sense without a command may come before it.
  for (; leading.next < argv.length && argv[leading.next]!.startsWith('-'); leading.next++) {
    const token = argv[leading.next]!;
    if (token === '-v' || token === '--verbose') leading.verbose = true;
    else if (token === '-h' || token === '--help') leading.help = true;
    else if (token === '--version') leading.version = true;
    else if (token === '--json') leading.json = true;
    else {
      const hint = closeMatches(token, ['--verbose', '--help', '--version'], 1)[0];
      throw new UsageError(
        `unrecognized arguments: ${token}.${hint ? ` Did you mean \`${hint}\`?` : ''} Flags of a command go after it, e.g. gym eval run ${token} ….`,
      );
    }
  }
  return leading;
}

/** A command line that only asks for help (or the version): nothing to translate. */
function helpOnly(command: string, help: boolean, overrides: string[] = []): ParsedCommand {
  return { command, noServe: false, positionals: [], overrides, help };
}

/** The tokens after a command: operands, flags and their values, overrides. */
function readCommandTokens(
  argv: readonly string[],
  start: number,
  command: string,
  leading: LeadingSwitches,
): CommandTokens {
  const spec = COMMAND_SPECS[command]!;
  const flags = flagsOf(command);
  const tokens: CommandTokens = {
    verbose: leading.verbose,
    help: leading.help,
    values: new Map(),
    positionals: [],
    raw: [],
    unknown: [],
  };
  if (leading.json) {
    if (!flags.includes(FLAGS.json)) throw unknownFlagsError(command, ['--json']);
    tokens.values.set(FLAGS.json, ['']);
  }
  for (let index = start, onlyOperands = false; index < argv.length; index++) {
    const token = argv[index]!;
    if (!onlyOperands && token === '--') {
      onlyOperands = true;
      continue;
    }
    if (onlyOperands || !token.startsWith('-') || token === '-' || looksLikeNumber(token)) {
      if (token === '+h' || token === '+help') tokens.help = true;
      else if (tokens.positionals.length < (spec.positionals?.length ?? 0) && !isOverrideToken(token))
        tokens.positionals.push(token);
      else tokens.raw.push(token);
      continue;
    }
    index = readFlag(argv, index, command, flags, tokens);
  }
  return tokens;
}

/** The flag at `argv[index]` and its value; answers the index of the last token it took. */
function readFlag(
  argv: readonly string[],
  index: number,
  command: string,
  flags: readonly FlagSpec[],
  tokens: CommandTokens,
): number {
  const token = argv[index]!;
  // `--flag=value`, and for short flags `-aVALUE` / `-a=VALUE`
  const isLong = token.startsWith('--');
  const split = isLong ? token.indexOf('=') : token.length > 2 ? 2 : -1;
  const name = split === -1 ? token : token.slice(0, split);
  const explicit = split === -1 ? undefined : token.slice(split).replace(/^=/, '');
  const flag = findFlag(flags, name);
  if (!flag) {
    tokens.unknown.push(token);
    return index;
  }
  if (flag === VERBOSE) tokens.verbose = true;
  if (flag === HELP) tokens.help = true;
  let value = '';
  if (flag.value !== undefined) {
    if (explicit !== undefined) value = explicit;
    else {
      const next = argv[index + 1];
      if (next === undefined || (next.startsWith('-') && next !== '-' && !looksLikeNumber(next))) {
        throw new UsageError(
          `argument ${flag.long}${flag.short ? `/${flag.short}` : ''}: expected one argument (${flag.metavar ?? 'VALUE'}). See gym ${command} --help.`,
        );
      }
      value = next;
      index++;
    }
  } else if (explicit !== undefined) {
    throw new UsageError(
      `argument ${flag.long}: ignored explicit argument '${explicit}'; ${flag.long} is a switch and takes no value.`,
    );
  }
  tokens.values.set(flag, [...(tokens.values.get(flag) ?? []), value]);
  return index;
}

function requirePositionals(command: string, positionals: readonly string[]): void {
  // A positional named `[name]` is optional.
  const missing = (COMMAND_SPECS[command]!.positionals ?? [])
    .slice(positionals.length)
    .filter((name) => !name.startsWith('['));
  if (missing.length > 0)
    throw new UsageError(
      `gym ${command}: the following arguments are required: ${missing.join(', ')}. See gym ${command} --help.`,
    );
}

/** `--search-dir` entries, resolved, go before the roots already in `NEMO_GYM_EXTRA_ROOTS`. */
function addSearchDirs(searchDirs: readonly string[], env: NodeJS.ProcessEnv): void {
  if (searchDirs.length === 0) return;
  const existing = env.NEMO_GYM_EXTRA_ROOTS ? [env.NEMO_GYM_EXTRA_ROOTS] : [];
  env.NEMO_GYM_EXTRA_ROOTS = [...searchDirs.map((dir) => path.resolve(dir)), ...existing].join(path.delimiter);
}

/** The final override list: `+verbose=true`, one coalesced `+config_paths=[…]`, the translated flags, the raw overrides. */
function overridesOf(command: string, tokens: CommandTokens, env: NodeJS.ProcessEnv): string[] {
  const configPaths: string[] = [];
  const translated: string[] = [];
  for (const flag of COMMAND_SPECS[command]!.flags) {
    const given = tokens.values.get(flag);
    if (!given) continue;
    if (flag === FLAGS.config) configPaths.push(...given);
    else if (flag === FLAGS.resourcesServer) {
      const roots = searchRoots(env, process.cwd());
      configPaths.push(...given.map((name) => resourcesServerConfigPath(name, roots)));
    } else if (flag.key !== undefined) {
      const last = given[given.length - 1]!;
      translated.push(`+${flag.key}=${flag.value === undefined ? 'true' : formatFlagValue(flag, last)}`);
    }
  }
  const rest: string[] = [];
  for (const token of tokens.raw) {
    const paths = rawConfigPaths(token);
    if (paths) configPaths.push(...paths);
    else rest.push(token);
  }
  return [
    ...(tokens.verbose ? ['+verbose=true'] : []),
    ...(configPaths.length > 0 ? [`+config_paths=[${configPaths.map(formatOverrideString).join(',')}]`] : []),
    ...translated,
    ...rest,
  ];
}

/**
 * Parse `gym …` arguments. `--search-dir` entries are prepended to `NEMO_GYM_EXTRA_ROOTS` in `env`
 * (so spawned servers inherit them). Throws `UsageError` (exit 2) for unknown flags and bad flag values.
 */
export function parseArgv(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): ParsedCommand {
  const leading = readLeadingSwitches(argv);
  // Like argparse's version action: `--version` answers whatever follows.
  if (leading.version) return helpOnly('version', false, leading.json ? ['+json=true'] : []);
  if (leading.next >= argv.length) return helpOnly('help', leading.help);
  const { command, next } = readCommand(argv, leading.next);
  if (command === 'help') {
    // `gym help eval run` is `gym eval run --help`.
    return helpOnly(next >= argv.length ? 'help' : readCommand(argv, next).command, true);
  }
  // A bare group such as `gym env --help`.
  if (!Object.hasOwn(COMMAND_SPECS, command)) return helpOnly(command, true);

  const tokens = readCommandTokens(argv, next, command, leading);
  if (tokens.unknown.length > 0) throw unknownFlagsError(command, tokens.unknown);
  const { positionals } = tokens;
  const noServe = tokens.values.has(FLAGS.noServe);
  if (tokens.help) return { command, noServe, positionals, overrides: tokens.raw, help: true };
  requirePositionals(command, positionals);
  addSearchDirs(tokens.values.get(FLAGS.searchDir) ?? [], env);
  return { command, noServe, positionals, overrides: overridesOf(command, tokens, env), help: false };
}
