import { execFile } from 'node:child_process';
import {
  parseJsonDecision,
  renderConversation,
  type Decide,
  type FunctionTool,
  type ConversationItem,
} from '../../src/service/index.js';

/**
 * The Claude Code CLI as an agent's brain (the Claude Code example of docs/services.md, on the tsgym kit).
 * Each call renders the conversation into one prompt and runs `claude -p <prompt> --output-format json`;
 * Claude may use its own tools inside that one invocation, and its final text must be a JSON decision.
 *
 * Requirements on the service's machine: `claude` on PATH and logged in (or ANTHROPIC_API_KEY set).
 */

export const PROMPT = `You are an agent solving a task by calling tools. You do not execute tools yourself; you ask for them and the results come back in the conversation.

Task conversation so far:
{conversation}

Tools you may ask for (JSON schemas):
{tools}

Reply with ONLY one JSON object, no prose, no code fences:
- to call tools: {"tool_calls": [{"name": "<tool>", "arguments": {...}}]}
- to finish:     {"final": "<answer text>"}
Finish once the conversation contains enough tool results to answer; the final answer must be exactly what the task asks for.
`;

export interface ClaudeCliOptions {
  /** Default: $CLAUDE_MODEL, else `haiku`. */
  model?: string;
  /** The executable. Default `claude` (looked up on PATH). */
  command?: string;
  /** Bound on one CLI run. Default 300 s. */
  timeoutMs?: number;
}

export function buildPrompt(conversation: readonly ConversationItem[], tools: readonly FunctionTool[]): string {
  return PROMPT.replace('{conversation}', () => renderConversation(conversation)).replace('{tools}', () =>
    JSON.stringify(tools),
  );
}

export function claudeModel(options: ClaudeCliOptions = {}): string {
  return options.model ?? process.env.CLAUDE_MODEL ?? 'haiku';
}

export function createClaudeCliDecide(options: ClaudeCliOptions = {}): Decide {
  const model = claudeModel(options);
  const command = options.command ?? 'claude';
  const timeoutMs = options.timeoutMs ?? 300_000;
  return async (conversation, tools, ctx) => {
    const stdout = await run(
      command,
      ['-p', buildPrompt(conversation, tools), '--output-format', 'json', '--model', model],
      {
        timeoutMs,
        signal: ctx.signal,
      },
    );
    const envelope = parseEnvelope(stdout);
    return { ...parseJsonDecision(envelope.result), usage: envelope.usage };
  };
}

interface Envelope {
  result: string;
  usage: { inputTokens: number; outputTokens: number; cachedTokens: number };
}

/**
 * The CLI's print-mode envelope (not the Anthropic Messages format): the final text is in `result`.
 * Anthropic counts cache reads and writes apart from `input_tokens`; the Responses convention counts every prompt
 * token as input and reports the cached part inside it, so they are added back.
 */
export function parseEnvelope(stdout: string): Envelope {
  let envelope: unknown;
  try {
    envelope = JSON.parse(stdout);
  } catch {
    throw new Error(`claude printed something that is not its JSON envelope: ${excerpt(stdout)}`);
  }
  const {
    result,
    is_error: isError,
    usage,
  } = (envelope ?? {}) as { result?: unknown; is_error?: unknown; usage?: Record<string, unknown> };
  if (isError === true)
    throw new Error(
      `claude reported an error: ${excerpt(typeof result === 'string' ? result : JSON.stringify(result ?? ''))}`,
    );
  if (typeof result !== 'string') throw new Error(`claude's JSON envelope has no "result" text: ${excerpt(stdout)}`);
  const count = (key: string): number => {
    const value = usage?.[key];
    return typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : 0;
  };
  const cacheRead = count('cache_read_input_tokens');
  return {
    result,
    usage: {
      inputTokens: count('input_tokens') + cacheRead + count('cache_creation_input_tokens'),
      outputTokens: count('output_tokens'),
      cachedTokens: cacheRead,
    },
  };
}

/** Run the CLI without a shell; a non-zero exit becomes an error carrying the start of its stderr. */
function run(command: string, args: string[], options: { timeoutMs: number; signal: AbortSignal }): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      command,
      args,
      { timeout: options.timeoutMs, maxBuffer: 64 * 1024 * 1024, signal: options.signal, encoding: 'utf8' },
      (err, stdout, stderr) => {
        if (!err) return resolve(stdout);
        const failure = err;
        if (failure.code === 'ENOENT') {
          return reject(
            new Error(`'${command}' is not on PATH: install Claude Code and log in (or set ANTHROPIC_API_KEY)`),
          );
        }
        if (failure.killed && !options.signal.aborted) {
          return reject(new Error(`claude did not finish within ${options.timeoutMs / 1000} s`));
        }
        const said = excerpt(stderr) || excerpt(stdout) || '(no output)';
        reject(new Error(`claude exited with code ${String(failure.code ?? failure.signal ?? '?')}: ${said}`));
      },
    );
  });
}

function excerpt(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > 500 ? `${flat.slice(0, 500)}…` : flat;
}
