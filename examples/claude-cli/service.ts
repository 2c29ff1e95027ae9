/**
 * The Claude Code CLI as an agent service:
 *
 *   node dist/examples/claude-cli/service.js --port 9000 [--host 0.0.0.0] [--model haiku]
 *
 * Needs `claude` on PATH, logged in (or ANTHROPIC_API_KEY set). The model defaults to $CLAUDE_MODEL, else haiku.
 */
import { parseArgs } from 'node:util';
import { serve } from '../../src/service/index.js';
import { claudeModel, createClaudeCliDecide } from './brain.js';

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '9000' },
    host: { type: 'string', default: '127.0.0.1' },
    model: { type: 'string' },
  },
});
const port = Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  process.stderr.write(`Error: --port must be a port number, got '${values.port}'\n`);
  process.exit(2);
}
const model = claudeModel(values.model === undefined ? {} : { model: values.model });
const service = await serve(createClaudeCliDecide({ model }), {
  port,
  host: values.host,
  brainName: `claude-cli (${model})`,
});
process.stdout.write(`claude-cli service (model ${model}) listening on ${service.url}\n`);
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => void service.close().then(() => process.exit(0)));
