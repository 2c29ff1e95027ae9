/**
 * A stand-in for the `claude` CLI in tests: same arguments, same JSON envelope on stdout, same failure shape
 * (non-zero exit, message on stderr). It "decides" by reading the rendered prompt like a careful model would on
 * the counter tasks: ask for the increments, then the count, then answer with it.
 *
 *   FAKE_CLAUDE_MODE=plain|fenced|fail   (default plain; fenced wraps the decision in ```json fences)
 *   FAKE_CLAUDE_LOG=<file>               append each invocation's arguments as one JSON line
 */
import { appendFileSync } from 'node:fs';

const args = process.argv.slice(2);
const mode = process.env.FAKE_CLAUDE_MODE ?? 'plain';
if (process.env.FAKE_CLAUDE_LOG) appendFileSync(process.env.FAKE_CLAUDE_LOG, `${JSON.stringify(args)}\n`);

if (mode === 'fail') {
  process.stderr.write('Error: Invalid API key · Please run /login\n');
  process.exit(1);
}

const prompt = args[args.indexOf('-p') + 1] ?? '';
const conversation = between(prompt, 'Task conversation so far:\n', '\n\nTools you may ask for');
const declared = (
  JSON.parse(between(prompt, 'Tools you may ask for (JSON schemas):\n', '\n\nReply with') || '[]') as { name: string }[]
).map((tool) => tool.name);
const lines = conversation.split('\n');
const adds = lines
  .filter((line) => line.startsWith('[user] '))
  .flatMap((line) => [...line.matchAll(/\badd\s+(-?\d+)/gi)].map((match) => Number(match[1])));
const asked = lines.filter((line) => line.startsWith('[you asked for] '));
const incrementsAsked = asked.filter((line) => line.includes('increment_counter(')).length;
const lastIncrement = lines.map((line) => line.startsWith('[you asked for] increment_counter(')).lastIndexOf(true);
const countAfter = lines
  .slice(lastIncrement + 1)
  .map((line) => /^\[tool result\] \{"count":(-?\d+)\}/.exec(line)?.[1])
  .find((count) => count !== undefined);

let decision: unknown;
if (declared.includes('increment_counter') && incrementsAsked < adds.length) {
  decision = {
    tool_calls: adds.slice(incrementsAsked).map((count) => ({ name: 'increment_counter', arguments: { count } })),
  };
} else if (countAfter === undefined && declared.includes('get_counter_value')) {
  decision = { tool_calls: [{ name: 'get_counter_value', arguments: {} }] };
} else {
  decision = { final: countAfter ?? 'unknown' };
}
const text = JSON.stringify(decision);
process.stdout.write(
  JSON.stringify({
    type: 'result',
    subtype: 'success',
    is_error: false,
    result: mode === 'fenced' ? `\`\`\`json\n${text}\n\`\`\`` : text,
    usage: {
      input_tokens: Math.ceil(prompt.length / 4),
      output_tokens: Math.ceil(text.length / 4),
      cache_read_input_tokens: 7,
      cache_creation_input_tokens: 0,
    },
  }),
);

function between(text: string, start: string, end: string): string {
  const from = text.indexOf(start);
  if (from < 0) return '';
  const to = text.indexOf(end, from + start.length);
  return text.slice(from + start.length, to < 0 ? undefined : to);
}
