/**
 * The start-up block every scaffolded TypeScript service ends with (the environment's solver.ts and a service's
 * service.ts): listen when the file is run rather than imported by its test, on `--port N`, else `$PORT`, else 9000
 * (0 picks a free port), and print the URL it got, which is how a test or a user learns an ephemeral port.
 */

/**
 * The code after a service's `decide` function (`solve`), for a brain reported as `brainName`. The file must import
 * `realpathSync` (node:fs), `pathToFileURL` (node:url) and `serve` (tsgym/service).
 */
export function serviceMainBlock(label: string, brainName: string): string {
  return `// Listen only when run (node --import tsx <this file>), not when a test imports solve. (Node names the running
// module by its real path, hence realpathSync for a project reached through a symlink.)
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  const service = await serve(solve, { port: portOption(), host: process.env.HOST ?? '127.0.0.1', brainName: '${brainName}' });
  console.log('${label} listening on ' + service.url);
}

/** --port N, else $PORT, else 9000; 0 picks a free port (the line above prints which). */
function portOption(): number {
  const flag = process.argv.indexOf('--port');
  const text = flag >= 0 ? process.argv[flag + 1] : process.env.PORT;
  const port = Number(text ?? 9000);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error('--port / PORT must be a port number, got ' + text);
  return port;
}
`;
}

/**
 * A package.json for a folder of scaffolded `.ts` files. A project made with `npm init` is CommonJS, where tsx
 * compiles `.ts` to CommonJS too and top-level await and `import.meta` fail; this marks the folder as ES modules.
 */
export function esmPackageJson(what: string): string {
  const manifest = {
    private: true,
    description: `Marks ${what} as ES modules (top-level await, import.meta) for node and tsx, whatever the project's own type.`,
    type: 'module',
  };
  return `${JSON.stringify(manifest, null, 2)}\n`;
}
