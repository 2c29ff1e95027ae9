/**
 * The command line every deterministic example solver's `service.ts` is: `--port N` (default 9000), `--host H`
 * (default 127.0.0.1), the example's own on/off switches (e.g. the counter planner's `--incremental`), the
 * `… listening on URL` line the tests and users wait for, and a clean stop on Ctrl-C / SIGTERM.
 */
import { parseArgs } from 'node:util';
import type { StartedService } from './example-service.js';

/** Where to listen, and each switch: true when it was given. */
export type ServiceArgs<Switch extends string> = { port: number; host: string } & Record<Switch, boolean>;

export async function runExampleService<Switch extends string = never>(
  start: (args: ServiceArgs<Switch>) => Promise<StartedService>,
  switches: readonly Switch[] = [],
): Promise<void> {
  const { values } = parseArgs({
    options: {
      port: { type: 'string', default: '9000' },
      host: { type: 'string', default: '127.0.0.1' },
      ...Object.fromEntries(switches.map((name) => [name, { type: 'boolean' as const, default: false }])),
    },
  });
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    process.stderr.write(`Error: --port must be a port number, got '${values.port}'\n`);
    process.exit(2);
  }
  const parsed: Record<string, string | boolean | undefined> = values;
  const given = Object.fromEntries(switches.map((name) => [name, parsed[name] === true])) as Record<Switch, boolean>;
  const service = await start({ port, host: values.host, ...given });
  process.stdout.write(`${service.brainName} listening on ${service.url}\n`);
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.once(signal, () => void service.close().then(() => process.exit(0)));
}
