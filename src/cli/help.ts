/**
 * The help text of `gym`: the command list, a group's actions, or one command's flags, operands and examples,
 * all written from the command table so the help always shows what the parser accepts.
 */
import { COMMAND_GROUPS, COMMAND_SPECS, flagsOf } from './command-specs.js';
import type { FlagSpec } from './flags.js';

function flagLine(flag: FlagSpec): string {
  const names = `${flag.short ? `${flag.short}, ` : '    '}${flag.long}${flag.metavar ? ` ${flag.metavar}` : ''}`;
  return `  ${names.padEnd(34)} ${flag.help}`;
}

const OVERRIDES_NOTE =
  'Any other setting: +key=value adds a key, ++key=value adds or replaces it, ~key deletes it (dotted keys, e.g. ++head_server.port=11001).';

/** Help text: the command list, a group's actions, or one command's flags. */
export function usage(command?: string): string {
  if (command !== undefined && Object.hasOwn(COMMAND_SPECS, command)) {
    const spec = COMMAND_SPECS[command]!;
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
  const groups = command !== undefined && Object.hasOwn(COMMAND_GROUPS, command) ? [command] : undefined;
  const listed = Object.keys(COMMAND_SPECS).filter((name) => !groups || groups.includes(name.split(' ')[0]!));
  return [
    `usage: gym ${groups ? `${command} <action>` : '<command>'} [flags] [+key=value ...]`,
    '',
    'Commands:',
    ...listed.map(
      (name) =>
        `  ${`${name}${(COMMAND_SPECS[name]!.positionals ?? []).map(operandText).join('')}`.padEnd(20)} ${COMMAND_SPECS[name]!.summary}`,
    ),
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
