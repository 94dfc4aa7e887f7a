// Module hooks for a pool thread in this repository (worker-entry.mjs), in place of tsx's: a TypeScript module
// is loaded as the JavaScript esbuild makes of it with the options tsx uses (tsx's own esbuild), cached on disk
// by a hash of the file's path and content, so a thread loads its modules as plain JS. tsx's hooks cost a
// thread about 0.5-0.8 s of CPU more (they resolve and transform every module again in each thread).
// Imports in this repository name their files (.ts; tsc's NodeNext resolution checks it), so Node resolves
// them; the resolve hook only tries what tsx would (.js for .ts, no extension) when that fails.
// A module load costs a round trip to the hooks thread: zod's 95 modules cost a thread ~0.16 s of CPU, its one
// bundle (esbuild, cached like a module) ~0.01 s. Only what BUNDLED names is bundled, and only where code
// outside node_modules imports the package by its name (every such import gets the one bundle).
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** Bumped when the transform's options change: a new key for every file. */
const VERSION = 'rg-ts-hooks 1';
const TS = /\.m?ts$/;
/** ESM packages of many modules imported by name in the pool thread's code (core's schema imports zod). */
const BUNDLED = new Set(['zod']);
let cacheDir;
/** tsx's esbuild (tsx is this package's dependency; esbuild is tsx's), loaded at the first transform. */
const esbuildMain = createRequire(createRequire(import.meta.url).resolve('tsx')).resolve('esbuild');
const esbuildPackage = path.join(path.dirname(esbuildMain), '../package.json');
const esbuildVersion = JSON.parse(readFileSync(esbuildPackage, 'utf8')).version;
let esbuild;

export function initialize(data) {
  cacheDir = data?.cacheDir;
}

function transform(file, source) {
  esbuild ??= createRequire(import.meta.url)(esbuildMain);
  return esbuild.transformSync(source, {
    loader: 'ts',
    format: 'esm',
    target: `node${process.versions.node}`,
    sourcefile: file,
    sourcemap: 'inline',
    minifyWhitespace: true,
    keepNames: true,
    // The compiler options of the repository's tsconfig.json that change what esbuild emits.
    tsconfigRaw: { compilerOptions: { target: 'ES2022', verbatimModuleSyntax: true } },
  }).code;
}

function cached(file, source) {
  const key = createHash('sha256')
    .update(`${VERSION}\0${esbuildVersion}\0${process.versions.node}\0${file}\0`)
    .update(source)
    .digest('hex')
    .slice(0, 40);
  const out = cacheDir && path.join(cacheDir, `${key}.mjs`);
  if (out) {
    try {
      return readFileSync(out, 'utf8');
    } catch {
      // Not built yet.
    }
  }
  const code = transform(file, source);
  if (out) {
    try {
      mkdirSync(cacheDir, { recursive: true });
      // Another thread may build the same key at once: each writes its own file, the rename is atomic.
      const tmp = `${out}.${process.pid}.${Math.random().toString(36).slice(2)}`;
      writeFileSync(tmp, code);
      renameSync(tmp, out);
    } catch {
      // A cache that cannot be written costs the next thread a transform, nothing else.
    }
  }
  return code;
}

/** The one-file bundle of an ESM package entry (a file URL), built once per entry and esbuild version. */
function bundled(entryUrl) {
  const entry = fileURLToPath(entryUrl);
  const key = createHash('sha256')
    .update(`${VERSION}\0${esbuildVersion}\0bundle\0${entry}\0`)
    .update(readFileSync(entry))
    .digest('hex')
    .slice(0, 40);
  const out = path.join(cacheDir, `${key}.bundle.mjs`);
  if (existsSync(out)) return out;
  esbuild ??= createRequire(import.meta.url)(esbuildMain);
  const tmp = `${out}.${process.pid}.${Math.random().toString(36).slice(2)}`;
  mkdirSync(cacheDir, { recursive: true });
  esbuild.buildSync({
    entryPoints: [entry],
    bundle: true,
    format: 'esm',
    platform: 'node',
    packages: 'external',
    keepNames: true,
    minifyWhitespace: true,
    outfile: tmp,
    logLevel: 'silent',
  });
  renameSync(tmp, out);
  return out;
}

export async function resolve(specifier, context, nextResolve) {
  try {
    const r = await nextResolve(specifier, context);
    const fromOwnCode = context.parentURL?.startsWith('file:') && !context.parentURL.includes('/node_modules/');
    if (cacheDir && BUNDLED.has(specifier) && fromOwnCode && r.format === 'module' && r.url.startsWith('file:')) {
      try {
        return { url: pathToFileURL(bundled(r.url)).href, format: 'module', shortCircuit: true };
      } catch {
        // Unbundled, as resolved.
      }
    }
    return r;
  } catch (e) {
    const relative = specifier.startsWith('./') || specifier.startsWith('../');
    if (e?.code !== 'ERR_MODULE_NOT_FOUND' || !relative || !context.parentURL || !TS.test(context.parentURL))
      throw e;
    const tries = specifier.endsWith('.js') ? [specifier.replace(/\.js$/, '.ts')] : [`${specifier}.ts`];
    for (const t of tries) {
      try {
        return await nextResolve(t, context);
      } catch {
        // The next one.
      }
    }
    throw e;
  }
}

export async function load(url, context, nextLoad) {
  if (!url.startsWith('file:') || !TS.test(url.split('?')[0])) return nextLoad(url, context);
  const file = fileURLToPath(url);
  const source = readFileSync(file, 'utf8');
  return { format: 'module', source: cached(file, source), shortCircuit: true };
}
