#!/usr/bin/env node
// `ringgrain codegen <module.ts> ...`: the TypeScript source through tsx in this repository (never a
// stale build), the built CLI (dist/cli.js) in an installed package, which has no src/; tsx is registered
// either way (grain modules may be TypeScript).
import { existsSync } from 'node:fs';
import { register } from 'tsx/esm/api';

register();
// `ringgrain codegen … | head`: the reader went away; stop quietly instead of printing an EPIPE stack.
process.stdout.on('error', (e) => {
  if (e.code === 'EPIPE') process.exit(0);
  throw e;
});
const source = new URL('../src/cli.ts', import.meta.url);
const { main } = await import(existsSync(source) ? source.href : new URL('../dist/cli.js', import.meta.url).href);
process.exitCode = await main(process.argv.slice(2), {
  out: (t) => process.stdout.write(t),
  err: (t) => process.stderr.write(t),
});
