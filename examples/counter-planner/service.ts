/**
 * The counter planner as an agent service (a deterministic planner, not a model):
 *
 *   node dist/examples/counter-planner/service.js --port 9000 [--host 0.0.0.0] [--incremental]
 */
import { parseArgs } from 'node:util';
import { startCounterPlannerService } from './index.js';

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '9000' },
    host: { type: 'string', default: '127.0.0.1' },
    incremental: { type: 'boolean', default: false },
  },
});
const port = Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  process.stderr.write(`Error: --port must be a port number, got '${values.port}'\n`);
  process.exit(2);
}
const service = await startCounterPlannerService({ port, host: values.host, incremental: values.incremental });
process.stdout.write(`${service.brainName} listening on ${service.url}\n`);
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void service.close().then(() => process.exit(0)));
