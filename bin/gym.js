#!/usr/bin/env node
// The compiled CLI lives in dist/ (built by `npm ci` through the `prepare` script).
import { main } from '../dist/src/cli/main.js';

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`Error: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
