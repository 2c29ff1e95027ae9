/**
 * node-llama-cpp, loaded on first use: an optional peer dependency, so tsgym installs and runs without it and only a
 * `gguf_model` (or the local-model example) needs it. The slice of its API used here is typed here, so the project
 * compiles without the package. The model's chat template is rendered with `@huggingface/jinja`, the renderer
 * node-llama-cpp itself depends on, resolved from node-llama-cpp's own location (it is not tsgym's dependency).
 */
import { existsSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ConfigError } from '../../errors.js';

/** The release tsgym is written and tested against. */
export const NODE_LLAMA_CPP_VERSION = '3.21.1';
const RUNTIME_PACKAGE = 'node-llama-cpp';

export type Token = number;

export interface Grammar {
  readonly __grammar?: never;
}
export interface GrammarEvaluationState {
  readonly __grammarState?: never;
}

export interface SamplingOptions {
  temperature: number;
  topK: number;
  topP: number;
  minP: number;
  seed: number;
  grammarEvaluationState?: GrammarEvaluationState;
  yieldEogToken: true;
}

export interface EvaluateOutput {
  token: Token;
  confidence: number;
  probabilities?: Map<Token, number>;
}

export interface Sequence {
  readonly contextSize: number;
  readonly nextTokenIndex: number;
  readonly contextTokens: Token[];
  clearHistory(): Promise<void>;
  adaptStateToTokens(tokens: Token[], allowShift?: boolean): Promise<void>;
  evaluateWithMetadata(
    tokens: Token[],
    metadata: { confidence: true; probabilities: boolean },
    options: SamplingOptions,
  ): AsyncGenerator<EvaluateOutput, void, void>;
  dispose(): void;
}

export interface Context {
  getSequence(): Sequence;
  dispose(): Promise<void>;
}

export interface Model {
  readonly tokens: { readonly bos: Token | null; readonly bosString: string | null; readonly eosString: string | null };
  readonly fileInfo: { metadata: { tokenizer?: { chat_template?: unknown } } };
  readonly trainContextSize: number;
  tokenize(text: string, specialTokens?: boolean): Token[];
  detokenize(tokens: readonly Token[], specialTokens?: boolean): string;
  isEogToken(token: Token | undefined): boolean;
  createContext(options: { contextSize: number; sequences: number; threads: number }): Promise<Context>;
  dispose(): Promise<void>;
}

export interface Llama {
  loadModel(options: { modelPath: string }): Promise<Model>;
  createGrammarForJsonSchema(schema: unknown): Promise<Grammar>;
  getGrammarFor(type: 'json'): Promise<Grammar>;
  dispose(): Promise<void>;
}

export interface NodeLlamaCpp {
  getLlama(options: { gpu: false; build: 'never'; logLevel: 'error' }): Promise<Llama>;
  LlamaGrammarEvaluationState: new (options: { model: Model; grammar: Grammar }) => GrammarEvaluationState;
}

export interface JinjaTemplate {
  render(context: Record<string, unknown>): string;
}
export type JinjaTemplateClass = new (source: string) => JinjaTemplate;

/**
 * node-llama-cpp, or a ConfigError saying how to install it; `who` names what needs it (`gguf_model`). `Runtime` is
 * the slice of its API the caller types (the local-model example uses another slice than gguf_model).
 */
async function importRuntime<Runtime = NodeLlamaCpp>(who: string): Promise<Runtime> {
  try {
    return (await import(RUNTIME_PACKAGE)) as Runtime;
  } catch (error) {
    const err = error as NodeJS.ErrnoException;
    if (err.code === 'ERR_MODULE_NOT_FOUND' && err.message.includes(`'${RUNTIME_PACKAGE}'`)) {
      throw new ConfigError(
        `${who} runs the model with ${RUNTIME_PACKAGE}, which is not installed (an optional peer dependency of ` +
          `tsgym): run npm install ${RUNTIME_PACKAGE}@${NODE_LLAMA_CPP_VERSION} where tsgym is installed, then start again.`,
        'GYM_LOCAL_RUNTIME_MISSING',
      );
    }
    throw error;
  }
}

/** The CPU runtime, never a build or a download at run time: the prebuilt binary from the npm registry or nothing. */
async function cpuLlama<L = Llama>(runtime: {
  getLlama(options: { gpu: false; build: 'never'; logLevel: 'error' }): Promise<L>;
}): Promise<L> {
  try {
    return await runtime.getLlama({ gpu: false, build: 'never', logLevel: 'error' });
  } catch (error) {
    throw new ConfigError(
      `${RUNTIME_PACKAGE} found no prebuilt llama.cpp binary for this machine (${firstLine(error)}): install ` +
        `${RUNTIME_PACKAGE}@${NODE_LLAMA_CPP_VERSION} with its optional dependencies, or the one for your platform ` +
        `(e.g. @node-llama-cpp/linux-x64@${NODE_LLAMA_CPP_VERSION}).`,
    );
  }
}

type CpuOptions = { gpu: false; build: 'never'; logLevel: 'error' };
type LlamaOf<Runtime> = Runtime extends { getLlama(options: CpuOptions): Promise<infer L> } ? L : never;
type ModelOf<L> = L extends { loadModel(options: { modelPath: string }): Promise<infer M> } ? M : never;

/** What to say when the GGUF file is not there, or llama.cpp cannot load it (`reason`: its first line). */
export interface GgufFileErrors {
  missing: string;
  unloadable: (reason: string) => string;
}

/**
 * The runtime, its CPU llama.cpp and the GGUF file loaded in it; a missing file, a missing runtime or a file llama.cpp
 * cannot load is a ConfigError (`who` names what needs the runtime). `Runtime` is the caller's slice of node-llama-cpp.
 */
export async function loadGgufFile<Runtime extends { getLlama(options: CpuOptions): Promise<unknown> } = NodeLlamaCpp>(
  who: string,
  file: string,
  errors: GgufFileErrors,
): Promise<{ runtime: Runtime; llama: LlamaOf<Runtime>; model: ModelOf<LlamaOf<Runtime>> }> {
  const modelPath = path.resolve(file);
  if (!existsSync(modelPath) || !statSync(modelPath).isFile()) throw new ConfigError(errors.missing);
  const runtime = await importRuntime<Runtime>(who);
  const llama = (await cpuLlama(runtime)) as LlamaOf<Runtime> & {
    loadModel(options: { modelPath: string }): Promise<ModelOf<LlamaOf<Runtime>>>;
    dispose(): Promise<void>;
  };
  try {
    return { runtime, llama, model: await llama.loadModel({ modelPath }) };
  } catch (error) {
    await llama.dispose();
    throw new ConfigError(errors.unloadable(firstLine(error)));
  }
}

/** The Jinja renderer node-llama-cpp ships with, found beside it. */
export async function importJinja(): Promise<JinjaTemplateClass> {
  const runtimeEntry = createRequire(import.meta.url).resolve(RUNTIME_PACKAGE);
  const jinjaEntry = createRequire(runtimeEntry).resolve('@huggingface/jinja');
  const jinja = (await import(pathToFileURL(jinjaEntry).href)) as { Template: JinjaTemplateClass };
  return jinja.Template;
}

export function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0]!;
}
