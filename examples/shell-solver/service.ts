/**
 * The shell solver as an agent service (scripted solutions of the example tasks, not a model):
 *
 *   node dist/examples/shell-solver/service.js --port 9000 [--host 0.0.0.0]
 */
import { parseArgs } from 'node:util';
import { startShellSolver } from './index.js';

const { values } = parseArgs({ options: { port: { type: 'string', default: '9000' }, host: { type: 'string', default: '127.0.0.1' } } });
const port = Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  process.stderr.write(`Error: --port must be a port number, got '${values.port}'\n`);
  process.exit(2);
}
const service = await startShellSolver({ port, host: values.host });
process.stdout.write(`${service.brainName} listening on ${service.url}\n`);
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void service.close().then(() => process.exit(0)));
