/**
 * The one shape of the example services: `serveExample(decide, brainName, options)` serves a brain on a port
 * (loopback and a free one by default), naming the brain in every response's `model`, and returns what
 * `gym quickstart`, the tests and the command line (./service-main.ts) use of it. Each example's index.ts is that
 * call with its own brain.
 */
import { serve, type Decide } from '../src/service/index.js';

/** Where an example service listens, and where request failures are logged (stderr by default). */
export interface ExampleServiceOptions {
  /** Default 0 (a free port). */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  log?: (line: string) => void;
}

export interface StartedService {
  url: string;
  /** What answers, as reported in every response's `model`. */
  brainName: string;
  close(): Promise<void>;
}

export async function serveExample(
  decide: Decide,
  brainName: string,
  options: ExampleServiceOptions = {},
): Promise<StartedService> {
  const service = await serve(decide, {
    port: options.port ?? 0,
    host: options.host ?? '127.0.0.1',
    brainName,
    ...(options.log ? { log: options.log } : {}),
  });
  return { url: service.url, brainName, close: () => service.close() };
}
