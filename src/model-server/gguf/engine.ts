/**
 * One GGUF model run in-process (node-llama-cpp): prompts rendered with the model's own chat template and tokenized
 * as llama.cpp's server does, and generation token by token, each token with its id and log-probability, so a
 * captured call carries exactly what the model sampled, with no re-tokenization anywhere.
 *
 * The log-probability of a token is that of the distribution it was drawn from: the model's softmax after the call's
 * temperature, top_k, top_p, min_p and grammar (node-llama-cpp's `confidence`). With the defaults (temperature 1, no
 * truncation, no grammar) and with temperature 0 (greedy), that is the model's own log-softmax: re-scoring the
 * prompt and the generation from scratch gives it back (the tests hold the two within 1e-3).
 *
 * `parallel` context sequences serve that many calls at once (batched together by llama.cpp); further calls wait in
 * arrival order. A sequence keeps its state between calls, so a call whose prompt extends the previous call's on that
 * sequence (an agent's growing conversation) evaluates only the new tokens.
 */
import path from 'node:path';
import { ConfigError } from '../../errors.js';
import { FifoSemaphore } from '../../server/agent-server.js';
import {
  firstLine,
  importJinja,
  loadGgufFile,
  type Context,
  type Grammar,
  type JinjaTemplate,
  type Llama,
  type Model,
  type NodeLlamaCpp,
  type Sequence,
  type Token,
} from './runtime.js';

export interface GgufEngineOptions {
  modelPath: string;
  /** Tokens per sequence (prompt + generation). Default: the model's training context, at most 8192. */
  contextSize?: number;
  /** Calls generated at once, one context sequence each. */
  parallel: number;
  threads: number;
  /** Where the error paragraphs say the setting lives, e.g. `policy_model.responses_api_models.gguf_model`. */
  where: string;
}

export interface Sampling {
  temperature: number;
  topP: number;
  topK: number;
  minP: number;
  seed: number;
  maxTokens: number | undefined;
  /** Alternatives per token to report (OpenAI's `top_logprobs`), 0 for none. */
  topLogprobs: number;
  /** A JSON schema the output must satisfy, `'json'` for any JSON value, undefined for free text. */
  format: Record<string, unknown> | 'json' | undefined;
}

export interface GeneratedToken {
  id: Token;
  logprob: number;
  top: { id: Token; logprob: number }[];
}

export type FinishReason = 'stop' | 'length';

/** The call cannot be generated as asked (prompt too long, template failed, bad schema): the caller's fault, 400. */
export class GenerationRefused extends Error {}

export class GgufEngine {
  private readonly free: Sequence[];
  private readonly slots: FifoSemaphore;
  private readonly grammars = new Map<string, Promise<Grammar>>();
  private closed: Promise<void> | undefined;

  private constructor(
    private readonly runtime: NodeLlamaCpp,
    private readonly llama: Llama,
    private readonly model: Model,
    private readonly context: Context,
    private readonly template: JinjaTemplate,
    sequences: Sequence[],
    readonly modelName: string,
  ) {
    this.free = sequences;
    this.slots = new FifoSemaphore(sequences.length);
  }

  static async load(options: GgufEngineOptions): Promise<GgufEngine> {
    const { runtime, llama, model } = await loadGgufFile('gguf_model', options.modelPath, {
      missing: `${options.where}.model_path: no such file (${options.modelPath}); give the path of a GGUF model file.`,
      unloadable: (reason) =>
        `${options.where}.model_path: llama.cpp could not load ${options.modelPath} as a GGUF model (${reason}).`,
    });
    const source = model.fileInfo.metadata.tokenizer?.chat_template;
    if (typeof source !== 'string' || source === '') {
      await model.dispose();
      await llama.dispose();
      throw new ConfigError(
        `${options.where}.model_path: ${path.basename(options.modelPath)} has no chat template (tokenizer.chat_template), ` +
          'so chat messages cannot be turned into its prompt; use a chat (instruct) model.',
      );
    }
    const Template = await importJinja();
    const contextSize = options.contextSize ?? Math.min(model.trainContextSize, 8192);
    const context = await model.createContext({ contextSize, sequences: options.parallel, threads: options.threads });
    const sequences = Array.from({ length: options.parallel }, () => context.getSequence());
    const name = path.basename(options.modelPath);
    return new GgufEngine(runtime, llama, model, context, new Template(source), sequences, name);
  }

  /** The prompt's token ids: the messages through the model's chat template, special tokens parsed, BOS once. */
  prompt(messages: readonly Record<string, unknown>[], tools: readonly unknown[] | undefined): Token[] {
    let text: string;
    try {
      text = this.template.render({
        messages,
        ...(tools && tools.length > 0 ? { tools } : {}),
        add_generation_prompt: true,
        bos_token: this.model.tokens.bosString ?? '',
        eos_token: this.model.tokens.eosString ?? '',
      });
    } catch (err) {
      throw new GenerationRefused(`the model's chat template could not render these messages: ${firstLine(err)}`);
    }
    const tokens = this.model.tokenize(text, true);
    const bos = this.model.tokens.bos;
    // Templates that write the BOS themselves would otherwise get it twice.
    return bos !== null && tokens[0] !== bos ? [bos, ...tokens] : tokens;
  }

  /** The text of generated tokens as the caller sees it: special tokens (the end-of-generation one) left out. */
  text(tokens: readonly Token[]): string {
    return this.model.detokenize(tokens, false);
  }

  /** One token's text, special tokens included (`logprobs.content[i].token`). */
  piece(token: Token): string {
    return this.model.detokenize([token], true);
  }

  /**
   * Generate for `prompt`, yielding each token as it is sampled; the return value says why it ended. Stops at the
   * model's end-of-generation token (yielded: it is part of what the model generated), at `maxTokens`, at the end
   * of the context, or when `signal` aborts (the generator just ends).
   */
  async *generate(
    prompt: Token[],
    sampling: Sampling,
    signal: AbortSignal,
  ): AsyncGenerator<GeneratedToken, FinishReason> {
    const grammar = sampling.format === undefined ? undefined : await this.grammarFor(sampling.format);
    const release = await this.slots.acquire(signal);
    const sequence = this.free.pop()!;
    try {
      const room = sequence.contextSize - prompt.length;
      if (room < 1) {
        throw new GenerationRefused(
          `the prompt is ${prompt.length} tokens, and the context holds ${sequence.contextSize}: shorten the ` +
            'conversation or raise context_size',
        );
      }
      const limit = Math.min(sampling.maxTokens ?? room, room);
      const rest = await this.resume(sequence, prompt);
      const iterator = sequence.evaluateWithMetadata(
        rest,
        { confidence: true, probabilities: sampling.topLogprobs > 0 },
        {
          temperature: sampling.temperature,
          topK: sampling.topK,
          topP: sampling.topP,
          minP: sampling.minP,
          seed: sampling.seed,
          yieldEogToken: true,
          ...(grammar
            ? { grammarEvaluationState: new this.runtime.LlamaGrammarEvaluationState({ model: this.model, grammar }) }
            : {}),
        },
      );
      let count = 0;
      for await (const out of iterator) {
        if (signal.aborted) return 'stop';
        yield { id: out.token, logprob: Math.log(out.confidence), top: topOf(out.probabilities, sampling.topLogprobs) };
        count += 1;
        if (this.model.isEogToken(out.token)) return 'stop';
        if (count >= limit) return 'length';
      }
      return 'stop';
    } finally {
      this.free.push(sequence);
      release();
    }
  }

  /**
   * Bring a sequence to `prompt`, keeping what it already holds of it; returns the tokens still to evaluate (at least
   * one: the next token's distribution comes from evaluating the prompt's last token).
   */
  private async resume(sequence: Sequence, prompt: Token[]): Promise<Token[]> {
    await sequence.adaptStateToTokens(prompt, false);
    let kept = Math.min(sequence.nextTokenIndex, prompt.length - 1);
    if (kept < sequence.nextTokenIndex || kept < 0) {
      await sequence.clearHistory();
      kept = 0;
    }
    return prompt.slice(kept);
  }

  private grammarFor(format: Record<string, unknown> | 'json'): Promise<Grammar> {
    const key = format === 'json' ? 'json' : JSON.stringify(format);
    let grammar = this.grammars.get(key);
    if (!grammar) {
      if (this.grammars.size >= 64) this.grammars.clear();
      grammar = (
        format === 'json' ? this.llama.getGrammarFor('json') : this.llama.createGrammarForJsonSchema(format)
      ).catch((err: unknown) => {
        this.grammars.delete(key);
        throw new GenerationRefused(`response_format's schema cannot be turned into a grammar: ${firstLine(err)}`);
      });
      this.grammars.set(key, grammar);
    }
    return grammar;
  }

  close(): Promise<void> {
    return (this.closed ??= (async () => {
      await this.context.dispose();
      await this.model.dispose();
      await this.llama.dispose();
    })());
  }
}

function topOf(probabilities: Map<Token, number> | undefined, count: number): { id: Token; logprob: number }[] {
  if (!probabilities || count <= 0) return [];
  const top: { id: Token; logprob: number }[] = [];
  // The map is sorted by probability, highest first.
  for (const [id, probability] of probabilities) {
    if (top.length >= count) break;
    top.push({ id, logprob: Math.log(probability) });
  }
  return top;
}
