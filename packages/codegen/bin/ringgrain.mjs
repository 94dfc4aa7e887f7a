#!/usr/bin/env node
// `ringgrain codegen <module.ts> ...`: the CLI is TypeScript, run through tsx (a root devDependency).
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli.ts');
process.exitCode = await main(process.argv.slice(2), { out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t) });
