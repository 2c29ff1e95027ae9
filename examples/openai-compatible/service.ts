/**
 * An OpenAI-compatible model server as an agent service:
 *
 *   node dist/examples/openai-compatible/service.js --model-url https://api.openai.com/v1 --model gpt-4.1-mini \
 *       [--api chat|responses] [--api-key-env OPENAI_API_KEY] [--port 9000] [--host 127.0.0.1]
 *
 * The API key is read from the environment variable named by --api-key-env (default OPENAI_API_KEY); local
 * servers such as vLLM usually need none. --model-url may be left out when the service runs behind a remote agent
 * with `model_server` set: Gym then sends each rollout's model URL (header `x-gym-model-base-url`), and that URL wins.
 */
import { parseArgs } from 'node:util';
import { serve } from '../../src/service/index.js';
import { createOpenAiDecide } from './brain.js';

const USAGE =
  'usage: node dist/examples/openai-compatible/service.js [--model-url URL] --model NAME [--api chat|responses] ' +
  '[--api-key-env NAME] [--port 9000] [--host 127.0.0.1]';

const { values } = parseArgs({
  options: {
    'model-url': { type: 'string' },
    model: { type: 'string' },
    api: { type: 'string', default: 'chat' },
    'api-key-env': { type: 'string', default: 'OPENAI_API_KEY' },
    port: { type: 'string', default: '9000' },
    host: { type: 'string', default: '127.0.0.1' },
  },
});
const fail = (message: string): never => {
  process.stderr.write(`Error: ${message}\n${USAGE}\n`);
  process.exit(2);
};
// Optional behind a remote agent with model_server: Gym then hands every rollout its own model URL.
const modelUrl = values['model-url'];
const model = values.model ?? fail('--model is required');
const api =
  values.api === 'chat' || values.api === 'responses'
    ? values.api
    : fail(`--api must be chat or responses, got '${values.api}'`);
const port = Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) fail(`--port must be a port number, got '${values.port}'`);
const apiKey = process.env[values['api-key-env']];
if (!apiKey) process.stderr.write(`Note: $${values['api-key-env']} is not set, so no API key is sent.\n`);

const decide = createOpenAiDecide({ model, api, ...(modelUrl ? { modelUrl } : {}), ...(apiKey ? { apiKey } : {}) });
const service = await serve(decide, { port, host: values.host, brainName: model });
process.stdout.write(
  `openai-compatible service (${api} API, model ${model} at ${modelUrl ?? "each rollout's model URL from Gym"}) ` +
    `listening on ${service.url}\n`,
);
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => void service.close().then(() => process.exit(0)));
