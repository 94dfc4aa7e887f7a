#!/usr/bin/env node
// `ringgrain codegen <module.ts> ...`: the CLI is TypeScript, run through tsx (a root devDependency).
import { register } from 'tsx/esm/api';

register();
// `ringgrain codegen … | head`: the reader went away; stop quietly instead of printing an EPIPE stack.
process.stdout.on('error', (e) => {
  if (e.code === 'EPIPE') process.exit(0);
  throw e;
});
const { main } = await import('../src/cli.ts');
process.exitCode = await main(process.argv.slice(2), { out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t) });
