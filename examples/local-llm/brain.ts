/**
 * A GGUF model run in-process as an agent's brain, with llama.cpp through `node-llama-cpp` (an optional peer
 * dependency: tsgym installs and runs without it; this brain loads it on first use and says how to install it
 * when it is missing). Each call renders the conversation with the model's own chat template, lists the declared
 * tools in the system message, and generates under a grammar that admits only `{"tool": …, "arguments": …}` for a
 * declared tool or `{"final": …}` (./tool-protocol.ts), so even a model never trained for function calling answers
 * with a well-formed call. The token counts of the prompt and the reply are the response's usage.
 *
 * One model, one context sequence: calls are answered one at a time, in arrival order.
 */
import { existsSync, statSync } from 'node:fs';
import { cpus } from 'node:os';
import path from 'node:path';
import { ConfigError } from '../../src/errors.js';
import { toolHistory, type Decide, type FunctionTool } from '../../src/service/index.js';
import {
  chatTurns,
  parseReply,
  replySchema,
  systemPrompt,
  type ChatTurn,
  type GrammarSchema,
} from './tool-protocol.js';

/** The release this brain is written and tested against. */
export const NODE_LLAMA_CPP_VERSION = '3.21.1';

export interface LocalBrainOptions {
  /** The GGUF file. */
  modelPath: string;
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
}

export interface LocalBrain {
  decide: Decide;
  /** `local (<file name>)`, as reported in every response's `model`. */
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

const RUNTIME_PACKAGE = 'node-llama-cpp';

/** node-llama-cpp, or one line saying how to install it. */
export async function importRuntime(): Promise<NodeLlamaCpp> {
  try {
    return (await import(RUNTIME_PACKAGE)) as NodeLlamaCpp;
  } catch (error) {
    const err = error as NodeJS.ErrnoException;
    if (err.code === 'ERR_MODULE_NOT_FOUND' && err.message.includes(`'${RUNTIME_PACKAGE}'`)) {
      throw new ConfigError(
        `--brain local runs the model with ${RUNTIME_PACKAGE}, which is not installed (an optional peer dependency of ` +
          `tsgym): run npm install ${RUNTIME_PACKAGE}@${NODE_LLAMA_CPP_VERSION} where tsgym is installed, then start again.`,
        'GYM_LOCAL_RUNTIME_MISSING',
      );
    }
    throw error;
  }
}

export async function loadLocalBrain(options: LocalBrainOptions): Promise<LocalBrain> {
  const modelPath = path.resolve(options.modelPath);
  if (!existsSync(modelPath) || !statSync(modelPath).isFile()) {
    throw new ConfigError(`--model ${options.modelPath}: no such file; give the path of a GGUF model file.`);
  }
  const runtime = await importRuntime();
  let llama: Llama;
  try {
    // CPU only, and never a build or download at run time: the prebuilt binary from the npm registry or nothing.
    llama = await runtime.getLlama({ gpu: false, build: 'never', logLevel: 'error' });
  } catch (error) {
    throw new ConfigError(
      `${RUNTIME_PACKAGE} found no prebuilt llama.cpp binary for this machine (${firstLine(error)}): install ` +
        `${RUNTIME_PACKAGE}@${NODE_LLAMA_CPP_VERSION} with its optional dependencies, or the one for your platform ` +
        `(e.g. @node-llama-cpp/linux-x64@${NODE_LLAMA_CPP_VERSION}).`,
    );
  }
  let model: Model;
  try {
    model = await llama.loadModel({ modelPath });
  } catch (error) {
    await llama.dispose();
    throw new ConfigError(
      `--model ${options.modelPath}: llama.cpp could not load it as a GGUF model (${firstLine(error)}).`,
    );
  }
  const contextSize = options.contextSize ?? Math.min(model.trainContextSize, 8192);
  const threads = options.threads ?? Math.max(1, Math.floor(cpus().length / 2));
  const context = await model.createContext({ contextSize, threads });
  const completion = new runtime.LlamaCompletion({ contextSequence: context.getSequence() });
  const chatWrapper = runtime.resolveChatWrapper(model);
  const maxTokens = options.maxTokens ?? 512;
  const temperature = options.temperature ?? 0;

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
  const decide: Decide = (conversation, declared, ctx) => {
    const turn = async () => {
      ctx.signal.throwIfAborted();
      const spent = options.maxToolCalls !== undefined && toolHistory(conversation).length >= options.maxToolCalls;
      const tools = spent ? [] : declared;
      const instructions = typeof ctx.request.instructions === 'string' ? ctx.request.instructions : undefined;
      const turns = chatTurns(conversation, systemPrompt(tools, instructions));
      const prompt = chatWrapper.generateContextState({ chatHistory: turns }).contextText.tokenize(model.tokenizer);
      let outputTokens = 0;
      const { response } = await completion.generateCompletionWithMeta(prompt, {
        grammar: await grammarFor(tools),
        maxTokens,
        temperature,
        signal: ctx.signal,
        onToken: (tokens) => (outputTokens += tokens.length),
      });
      return { ...parseReply(response, tools, maxTokens), usage: { inputTokens: prompt.length, outputTokens } };
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
  return { decide, brainName: `local (${path.basename(modelPath)})`, close };
}

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0]!;
}
