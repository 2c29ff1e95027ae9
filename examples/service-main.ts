/**
 * The command line every deterministic example solver shares: `--port N` (default 9000) and `--host H` (default
 * 127.0.0.1), the `… listening on URL` line the tests and users wait for, and a clean stop on Ctrl-C / SIGTERM.
 */
import { parseArgs } from 'node:util';

export interface StartedExampleService {
  brainName: string;
  url: string;
  close(): Promise<void>;
}

export async function runExampleService(start: (options: { port: number; host: string }) => Promise<StartedExampleService>): Promise<void> {
  const { values } = parseArgs({ options: { port: { type: 'string', default: '9000' }, host: { type: 'string', default: '127.0.0.1' } } });
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    process.stderr.write(`Error: --port must be a port number, got '${values.port}'\n`);
    process.exit(2);
  }
  const service = await start({ port, host: values.host });
  process.stdout.write(`${service.brainName} listening on ${service.url}\n`);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void service.close().then(() => process.exit(0)));
}
