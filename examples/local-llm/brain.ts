/**
 * A GGUF model run in-process as an agent's brain, with llama.cpp through `node-llama-cpp` (an optional peer
 * dependency: tsgym installs and runs without it; this brain loads it on first use and says how to install it
 * when it is missing). Each call renders the conversation with the model's own chat template, lists the declared
 * tools in the system message, and generates under a grammar that admits only `{"tool": …, "arguments": …}` for a
 * declared tool or `{"final": …}` (./tool-protocol.ts), so even a model never trained for function calling answers
 * with a well-formed call. The token counts of the prompt and the reply are the response's usage.
 *
 * One model, one context sequence: calls are answered one at a time, in arrival order.
 *
 * A call that carries the rollout's model URL (`ctx.modelBaseUrl`: a remote agent with `model_server`) goes there
 * instead, as the same chat turns to `<url>/chat/completions` with the same schema as `response_format` (a
 * grammar-capable server such as llama-server holds the reply to it), so the model server records the call on the
 * rollout's row. Without a model file every call must carry one.
 */
import { cpus } from 'node:os';
import path from 'node:path';
import { loadGgufFile } from '../../src/model-server/gguf/runtime.js';
import { request } from '../../src/http/client.js';
import { toolHistory, type Decide, type FunctionTool, type TokenUsage } from '../../src/service/index.js';
import {
  chatMessages,
  chatTurns,
  parseReply,
  replySchema,
  systemPrompt,
  type ChatTurn,
  type GrammarSchema,
} from './tool-protocol.js';

export interface LocalBrainOptions {
  /** The GGUF file. Optional: without it, every call must carry the rollout's model URL (`ctx.modelBaseUrl`). */
  modelPath?: string;
  /** The most tokens one reply may take. Default 512. */
  maxTokens?: number;
  /** The context window in tokens. Default the model's training context, at most 8192. */
  contextSize?: number;
  /** CPU threads for generation. Default: half the machine's cores, at least 1. */
  threads?: number;
  /**
   * Once the conversation holds this many tool calls, the grammar admits only the final answer. Default: no limit
   * (the remote agent's max_steps still ends the rollout).
   */
  maxToolCalls?: number;
  /** Default 0 (the most likely token every time: the same conversation gets the same reply). */
  temperature?: number;
  /** Bound on one call to a model URL. Default 600 s. */
  timeoutMs?: number;
}

export interface LocalBrain {
  decide: Decide;
  /** `local (<file name>)`, or without a file what it needs, as reported in every response's `model`. */
  brainName: string;
  /** Free the model and the runtime. */
  close(): Promise<void>;
}

// The slice of node-llama-cpp's API this brain uses, typed here so tsgym compiles without the package installed.
interface Grammar {
  readonly __grammar?: never;
}
interface Tokenizable {
  tokenize(tokenizer: unknown): unknown[];
}
interface ChatWrapper {
  generateContextState(options: { chatHistory: ChatTurn[] }): { contextText: Tokenizable };
}
interface Model {
  readonly tokenizer: unknown;
  readonly trainContextSize: number;
  createContext(options: { contextSize: number; threads: number }): Promise<Context>;
  dispose(): Promise<void>;
}
interface Context {
  getSequence(): unknown;
  dispose(): Promise<void>;
}
interface Completion {
  generateCompletionWithMeta(
    input: unknown[],
    options: {
      grammar: Grammar;
      maxTokens: number;
      temperature: number;
      signal: AbortSignal;
      onToken(tokens: unknown[]): void;
    },
  ): Promise<{ response: string; metadata: { stopReason: string } }>;
}
interface Llama {
  loadModel(options: { modelPath: string }): Promise<Model>;
  createGrammarForJsonSchema(schema: GrammarSchema): Promise<Grammar>;
  dispose(): Promise<void>;
}
interface NodeLlamaCpp {
  getLlama(options: { gpu: false; build: 'never'; logLevel: 'error' }): Promise<Llama>;
  resolveChatWrapper(model: Model): ChatWrapper;
  LlamaCompletion: new (options: { contextSequence: unknown }) => Completion;
}

/** One reply's text and token counts, from either the in-process model or a model URL. */
interface Generated {
  text: string;
  usage: TokenUsage;
  /** True when generation stopped at the token limit (as far as the generator knows). */
  cutOff?: boolean;
}

interface Generation {
  turns: ChatTurn[];
  tools: readonly FunctionTool[];
  maxTokens: number;
  temperature: number;
  signal: AbortSignal;
}

/** The model file loaded in-process: one reply at a time. */
interface InProcessModel {
  name: string;
  generate(generation: Generation): Promise<Generated>;
  close(): Promise<void>;
}

/** Why a call fails when the service has no model file and Gym sent no model URL. */
export const NO_MODEL_MESSAGE =
  'no model for this call: the service was started without --model FILE.gguf and the call carries no model URL ' +
  '(header x-gym-model-base-url, which a remote agent with model_server sets); start it with --model, or run it ' +
  'behind such a remote agent.';

export async function loadLocalBrain(options: LocalBrainOptions): Promise<LocalBrain> {
  const local = options.modelPath === undefined ? undefined : await loadInProcessModel(options.modelPath, options);
  const maxTokens = options.maxTokens ?? 512;
  const temperature = options.temperature ?? 0;
  const timeoutMs = options.timeoutMs ?? 600_000;

  const decide: Decide = async (conversation, declared, ctx) => {
    ctx.signal.throwIfAborted();
    // One prompt for both ways: the system message listing the declared tools, the turns. Past --max-tool-calls only
    // the grammar narrows (to the final answer): the prompt stays as it was, so each call still extends the last one
    // (what token capture needs to make one training sequence of a rollout).
    const spent = options.maxToolCalls !== undefined && toolHistory(conversation).length >= options.maxToolCalls;
    const tools = spent ? [] : declared;
    const instructions = typeof ctx.request.instructions === 'string' ? ctx.request.instructions : undefined;
    const turns = chatTurns(conversation, systemPrompt(declared, instructions));
    const generation = { turns, tools, maxTokens, temperature, signal: ctx.signal };
    if (ctx.modelBaseUrl !== undefined) {
      const who = `the model at ${ctx.modelBaseUrl}`;
      const { text, usage, cutOff } = await generateAt(ctx.modelBaseUrl, generation, timeoutMs);
      if (!cutOff && !isJson(text)) {
        throw new Error(
          `${who} answered text that is not JSON (does it honour response_format json_schema?): ` + `${excerpt(text)}`,
        );
      }
      // The reply as the model wrote it goes out too: with token capture, that text is what its tokens decode to.
      return { ...parseReply(text, tools, maxTokens, who), usage, modelText: text };
    }
    if (!local) throw new Error(NO_MODEL_MESSAGE);
    const { text, usage } = await local.generate(generation);
    return { ...parseReply(text, tools, maxTokens), usage };
  };

  return {
    decide,
    brainName: local ? `local (${local.name})` : "local (no model file: needs each call's model URL from Gym)",
    close: () => local?.close() ?? Promise.resolve(),
  };
}

async function loadInProcessModel(file: string, options: LocalBrainOptions): Promise<InProcessModel> {
  const { runtime, llama, model } = await loadGgufFile<NodeLlamaCpp>('--brain local', file, {
    missing: `--model ${file}: no such file; give the path of a GGUF model file.`,
    unloadable: (reason) => `--model ${file}: llama.cpp could not load it as a GGUF model (${reason}).`,
  });
  const contextSize = options.contextSize ?? Math.min(model.trainContextSize, 8192);
  const threads = options.threads ?? Math.max(1, Math.floor(cpus().length / 2));
  const context = await model.createContext({ contextSize, threads });
  const completion = new runtime.LlamaCompletion({ contextSequence: context.getSequence() });
  const chatWrapper = runtime.resolveChatWrapper(model);

  // One grammar per distinct tool list (a dataset declares the same few lists over and over).
  const grammars = new Map<string, Promise<Grammar>>();
  const grammarFor = (tools: readonly FunctionTool[]): Promise<Grammar> => {
    const key = JSON.stringify(tools.map((tool) => [tool.name, tool.parameters ?? null]));
    let grammar = grammars.get(key);
    if (!grammar) {
      if (grammars.size >= 64) grammars.clear();
      grammar = llama.createGrammarForJsonSchema(replySchema(tools));
      grammar.catch(() => grammars.delete(key));
      grammars.set(key, grammar);
    }
    return grammar;
  };

  let queue: Promise<unknown> = Promise.resolve();
  const generate = (generation: Generation): Promise<Generated> => {
    const turn = async (): Promise<Generated> => {
      generation.signal.throwIfAborted();
      const prompt = chatWrapper
        .generateContextState({ chatHistory: generation.turns })
        .contextText.tokenize(model.tokenizer);
      let outputTokens = 0;
      const { response } = await completion.generateCompletionWithMeta(prompt, {
        grammar: await grammarFor(generation.tools),
        maxTokens: generation.maxTokens,
        temperature: generation.temperature,
        signal: generation.signal,
        onToken: (tokens) => (outputTokens += tokens.length),
      });
      return { text: response, usage: { inputTokens: prompt.length, outputTokens } };
    };
    const answer = queue.then(turn, turn);
    queue = answer.catch(() => undefined);
    return answer;
  };

  let closed: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (closed ??= queue.then(async () => {
      await context.dispose();
      await model.dispose();
      await llama.dispose();
    }));
  return { name: path.basename(file), generate, close };
}

/** The most of a model server's answer read: a reply of a few thousand tokens is far below it. */
const MAX_ANSWER_BYTES = 8 * 1024 * 1024;

/**
 * One reply from an OpenAI-compatible `/chat/completions` at `base`, not streamed. No `model` is sent: the model
 * server puts in its configured one.
 */
async function generateAt(base: string, generation: Generation, timeoutMs: number): Promise<Generated> {
  const url = `${base}/chat/completions`;
  const res = await request(url, {
    method: 'POST',
    json: {
      messages: chatMessages(generation.turns),
      response_format: { type: 'json_schema', json_schema: { name: 'reply', schema: replySchema(generation.tools) } },
      max_tokens: generation.maxTokens,
      temperature: generation.temperature,
      stream: false,
    },
    timeoutMs,
    maxBodyBytes: MAX_ANSWER_BYTES,
    signal: generation.signal,
  });
  if (res.status < 200 || res.status >= 300) {
    throw new Error(`the model server answered HTTP ${res.status} at ${url}: ${excerpt(res.text())}`);
  }
  let parsed: unknown;
  try {
    parsed = res.json();
  } catch {
    throw new Error(`the answer from ${url} is not JSON: ${excerpt(res.text())}`);
  }
  const answer = answerOf(parsed);
  const content = answer.choices?.[0]?.message?.content;
  if (typeof content !== 'string') {
    throw new Error(`the answer from ${url} has no choices[0].message.content text: ${excerpt(res.text())}`);
  }
  return {
    text: content,
    usage: { inputTokens: count(answer.usage?.prompt_tokens), outputTokens: count(answer.usage?.completion_tokens) },
    cutOff: answer.choices?.[0]?.finish_reason === 'length',
  };
}

/** A /chat/completions answer as far as this brain reads it; every field unchecked (the server is not ours). */
interface ChatAnswer {
  choices?: { message?: { content?: unknown }; finish_reason?: unknown }[];
  usage?: { prompt_tokens?: unknown; completion_tokens?: unknown };
}

function answerOf(value: unknown): ChatAnswer {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? value : {};
}

function count(value: unknown): number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : 0;
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

function excerpt(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > 300 ? `${flat.slice(0, 300)}…` : flat;
}
