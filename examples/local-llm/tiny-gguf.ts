/**
 * A tiny, untrained GGUF model written from scratch, so the local brain can be run against the real llama.cpp
 * runtime with no download: GGUF version 3, llama architecture, one transformer block, embedding width 32, four
 * heads, F32 weights drawn from a seeded generator (norms at 1), and a SentencePiece-style vocabulary of `<unk>`,
 * `<s>`, `</s>` and the 256 byte-fallback tokens `<0x00>`…`<0xFF>` (so any text tokenizes, one token per byte).
 * It knows nothing; under the local brain's grammar it still emits well-formed tool calls, which is all a test of
 * the plumbing needs. About 115 KB; written in milliseconds.
 */
import { writeFileSync } from 'node:fs';
import { seededRandom } from '../../src/seeded-random.js';

export interface TinyGgufOptions {
  /** Seed of the weights. Default 42. */
  seed?: number;
  /** The model's context length in tokens (bytes, with this vocabulary). Default 4096. */
  contextLength?: number;
  /**
   * ASCII characters the model prefers wherever the grammar lets it choose, the first most: every token's embedding
   * carries a constant on one dimension and these characters' byte tokens read it. With `'"t'` the model closes
   * every string as soon as it may and, offered `{"tool": …}` or `{"final": …}`, takes the tool — a model that
   * terminates, for tests. Default none: weights purely random.
   */
  favour?: string;
  /**
   * The chat template closes each assistant turn with the end-of-sequence token `</s>`, as real chat templates close
   * a turn with the token the model ends its reply with: a conversation replayed from the model's replies then
   * re-renders to its generated ids, end token included (what token capture's prefix merging needs). Default false.
   */
  eosClosesReply?: boolean;
}

// GGUF metadata value types.
const UINT32 = 4;
const INT32 = 5;
const FLOAT32 = 6;
const BOOL = 7;
const STRING = 8;
const ARRAY = 9;
const GGML_TYPE_F32 = 0;
const ALIGNMENT = 32;

type Scalar =
  | { type: typeof UINT32 | typeof INT32 | typeof FLOAT32; value: number }
  | { type: typeof BOOL; value: boolean }
  | { type: typeof STRING; value: string };
type Value = Scalar | { type: typeof ARRAY; of: Scalar['type']; values: (number | string)[] };

/** A chat template in the Jinja subset llama.cpp and node-llama-cpp understand: `<|role|>content` per line. */
const CHAT_TEMPLATE =
  "{% for message in messages %}<|{{ message['role'] }}|>{{ message['content'] }}\n{% endfor %}" +
  '{% if add_generation_prompt %}<|assistant|>{% endif %}';
const EOS_CLOSES_REPLY_TEMPLATE =
  "{% for message in messages %}<|{{ message['role'] }}|>{{ message['content'] }}" +
  "{% if message['role'] == 'assistant' %}{{ eos_token }}{% endif %}\n{% endfor %}" +
  '{% if add_generation_prompt %}<|assistant|>{% endif %}';

class Writer {
  private readonly parts: Buffer[] = [];
  private size = 0;
  push(buffer: Buffer): void {
    this.parts.push(buffer);
    this.size += buffer.length;
  }
  u32(value: number): void {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(value);
    this.push(b);
  }
  u64(value: number): void {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(value));
    this.push(b);
  }
  string(text: string): void {
    const bytes = Buffer.from(text, 'utf8');
    this.u64(bytes.length);
    this.push(bytes);
  }
  scalar(type: Scalar['type'], value: number | string | boolean): void {
    const b = Buffer.alloc(4);
    if (type === STRING) return this.string(String(value));
    if (type === BOOL) return this.push(Buffer.from([value ? 1 : 0]));
    if (type === UINT32) b.writeUInt32LE(Number(value));
    else if (type === INT32) b.writeInt32LE(Number(value));
    else b.writeFloatLE(Number(value));
    this.push(b);
  }
  value(v: Value): void {
    this.u32(v.type);
    if (v.type === ARRAY) {
      this.u32(v.of);
      this.u64(v.values.length);
      for (const item of v.values) this.scalar(v.of, item);
    } else {
      this.scalar(v.type, v.value);
    }
  }
  padTo(alignment: number): void {
    const pad = (alignment - (this.size % alignment)) % alignment;
    if (pad > 0) this.push(Buffer.alloc(pad));
  }
  bytes(): Buffer {
    return Buffer.concat(this.parts);
  }
}

/** The GGUF file's bytes. */
export function tinyGguf(options: TinyGgufOptions = {}): Buffer {
  const embedding = 32;
  const heads = 4;
  const feedForward = 64;
  const byteTokens = Array.from({ length: 256 }, (_, i) => `<0x${i.toString(16).toUpperCase().padStart(2, '0')}>`);
  const tokens = ['<unk>', '<s>', '</s>', ...byteTokens];
  // token types: 2 unknown, 3 control, 6 byte
  const tokenTypes = [2, 3, 3, ...byteTokens.map(() => 6)];
  const u32 = (value: number): Value => ({ type: UINT32, value });
  const metadata: [string, Value][] = [
    ['general.architecture', { type: STRING, value: 'llama' }],
    ['general.name', { type: STRING, value: 'tsgym-tiny' }],
    ['general.alignment', u32(ALIGNMENT)],
    ['llama.context_length', u32(options.contextLength ?? 4096)],
    ['llama.embedding_length', u32(embedding)],
    ['llama.block_count', u32(1)],
    ['llama.feed_forward_length', u32(feedForward)],
    ['llama.attention.head_count', u32(heads)],
    ['llama.attention.head_count_kv', u32(heads)],
    ['llama.rope.dimension_count', u32(embedding / heads)],
    ['llama.attention.layer_norm_rms_epsilon', { type: FLOAT32, value: 1e-5 }],
    ['tokenizer.ggml.model', { type: STRING, value: 'llama' }],
    ['tokenizer.ggml.tokens', { type: ARRAY, of: STRING, values: tokens }],
    ['tokenizer.ggml.scores', { type: ARRAY, of: FLOAT32, values: tokens.map(() => 0) }],
    ['tokenizer.ggml.token_type', { type: ARRAY, of: INT32, values: tokenTypes }],
    ['tokenizer.ggml.bos_token_id', u32(1)],
    ['tokenizer.ggml.eos_token_id', u32(2)],
    ['tokenizer.ggml.unknown_token_id', u32(0)],
    ['tokenizer.ggml.add_space_prefix', { type: BOOL, value: false }],
    [
      'tokenizer.chat_template',
      { type: STRING, value: options.eosClosesReply ? EOS_CLOSES_REPLY_TEMPLATE : CHAT_TEMPLATE },
    ],
  ];
  // Dimensions as GGUF lists them: the fastest-varying first.
  const vocab = tokens.length;
  const tensors: [string, number[]][] = [
    ['token_embd.weight', [embedding, vocab]],
    ['output_norm.weight', [embedding]],
    ['output.weight', [embedding, vocab]],
    ['blk.0.attn_norm.weight', [embedding]],
    ['blk.0.attn_q.weight', [embedding, embedding]],
    ['blk.0.attn_k.weight', [embedding, embedding]],
    ['blk.0.attn_v.weight', [embedding, embedding]],
    ['blk.0.attn_output.weight', [embedding, embedding]],
    ['blk.0.ffn_norm.weight', [embedding]],
    ['blk.0.ffn_gate.weight', [embedding, feedForward]],
    ['blk.0.ffn_up.weight', [embedding, feedForward]],
    ['blk.0.ffn_down.weight', [feedForward, embedding]],
  ];

  const out = new Writer();
  out.push(Buffer.from('GGUF', 'ascii'));
  out.u32(3);
  out.u64(tensors.length);
  out.u64(metadata.length);
  for (const [key, value] of metadata) {
    out.string(key);
    out.value(value);
  }
  const random = seededRandom(options.seed ?? 42);
  const data: Buffer[] = [];
  let offset = 0;
  for (const [name, dims] of tensors) {
    const count = dims.reduce((a, b) => a * b, 1);
    const weights = Buffer.alloc(count * 4);
    for (let i = 0; i < count; i++) weights.writeFloatLE(name.includes('norm') ? 1 : (random() - 0.5) * 0.2, i * 4);
    if (options.favour) favourBytes(name, weights, options.favour, embedding, vocab);
    out.string(name);
    out.u32(dims.length);
    for (const dim of dims) out.u64(dim);
    out.u32(GGML_TYPE_F32);
    out.u64(offset);
    data.push(weights);
    offset += Math.ceil(weights.length / ALIGNMENT) * ALIGNMENT;
  }
  out.padTo(ALIGNMENT);
  for (const weights of data) {
    out.push(weights);
    out.padTo(ALIGNMENT);
  }
  return out.bytes();
}

/**
 * The bias behind `favour`: dimension 0 of every token embedding is 10, so it dominates the residual stream after
 * the norm; the favoured bytes' output rows weigh dimension 0 by 3, 2.5, 2, … where other rows weigh it by ±0.1.
 */
function favourBytes(tensor: string, weights: Buffer, favour: string, embedding: number, vocab: number): void {
  const firstByteToken = 3; // after <unk>, <s>, </s>
  if (tensor === 'token_embd.weight') {
    for (let token = 0; token < vocab; token++) weights.writeFloatLE(10, token * embedding * 4);
  } else if (tensor === 'output.weight') {
    [...favour].forEach((char, rank) => {
      const token = firstByteToken + char.charCodeAt(0);
      if (char.charCodeAt(0) > 0x7f) throw new Error(`favour takes ASCII characters, got '${char}'`);
      weights.writeFloatLE(3 - rank * 0.5, token * embedding * 4);
    });
  }
}

/** Write the tiny model to `file`; returns its size in bytes. */
export function writeTinyGguf(file: string, options: TinyGgufOptions = {}): number {
  const bytes = tinyGguf(options);
  writeFileSync(file, bytes);
  return bytes.length;
}
