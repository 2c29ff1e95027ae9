/**
 * `gguf_model`'s block: `model_path` (required), `context_size` (tokens per sequence; default the model's training
 * context, at most 8192), `parallel` (calls generated at once, default 1), `threads` (default half the cores),
 * `model` (the name answers and records carry; default the file's name), plus the bounds every model server has.
 */
import { cpus } from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { instanceKeyParagraph, integerAtLeast, parseBlock } from '../../config/fields.js';
import { MISSING_VALUE } from '../../config/types.js';
import { ConfigError } from '../../errors.js';
import type { ServeContext } from '../../server/serve.js';
import { isUnset, parseServerSettings } from '../config.js';
import { keyPath, modelServerAround } from '../entry.js';
import type { ModelServer } from '../server.js';
import { GgufEngine } from './engine.js';
import { GgufUpstream } from './upstream.js';

const ENGINE_KEYS = z.object({
  context_size: integerAtLeast(16, undefined),
  parallel: integerAtLeast(1, 1),
  threads: integerAtLeast(1, undefined),
});

export interface GgufModelServer {
  server: ModelServer;
  engine: GgufEngine;
}

export async function ggufModelServer(ctx: ServeContext): Promise<GgufModelServer> {
  const where = keyPath(ctx);
  const inner = ctx.instance.config;
  const modelPath = inner.model_path;
  if (typeof modelPath !== 'string' || modelPath.trim() === '' || modelPath === MISSING_VALUE) {
    throw new ConfigError(
      `${where('model_path')} is required: the path of a GGUF model file (a chat model: its chat template turns ` +
        `messages into the prompt), got ${JSON.stringify(modelPath ?? null)}.`,
    );
  }
  const name = inner.model;
  if (!isUnset(name) && (typeof name !== 'string' || name.trim() === '')) {
    throw new ConfigError(`${where('model')} must be a non-empty string (the name answers carry), or left out.`);
  }
  const scalars = Object.fromEntries(
    Object.keys(ENGINE_KEYS.shape).map((key) => [key, isUnset(inner[key]) ? undefined : inner[key]]),
  );
  const engineKeys = parseBlock(ENGINE_KEYS, scalars, instanceKeyParagraph(where('')));
  const settings = parseServerSettings(inner, where);
  const engine = await GgufEngine.load({
    modelPath,
    ...(engineKeys.context_size !== undefined ? { contextSize: engineKeys.context_size } : {}),
    parallel: engineKeys.parallel,
    threads: engineKeys.threads ?? Math.max(1, Math.floor(cpus().length / 2)),
    where: where(''),
  });
  const upstream = new GgufUpstream(engine, {
    model: typeof name === 'string' ? name : path.basename(modelPath),
    extraBody: settings.extraBody,
    timeoutMs: settings.timeoutMs,
  });
  return { server: modelServerAround(ctx, upstream, settings), engine };
}
