// Builds the dashboard into OUT (default: ../build/web): index.html,
// app.js and app.css (every module and package bundled by esbuild: no code
// is loaded from elsewhere at run time) and favicon.svg. pacerd serves
// that folder (--web-root: "/" and "/assets/NAME"); `meson install` copies
// it. Run by the build (web/meson.build).
//
//   node build.mjs [OUT]
import * as esbuild from 'esbuild';
import { copyFileSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const out = resolve(process.argv[2] || join(here, '..', 'build', 'web'));
mkdirSync(out, { recursive: true });

await esbuild.build({
  entryPoints: { app: join(here, 'src', 'main.js') },
  bundle: true,
  format: 'iife',
  target: ['es2020'],
  minify: true,
  sourcemap: false,
  legalComments: 'none',
  outdir: out,
  loader: { '.css': 'css' },
  logLevel: 'warning',
});
copyFileSync(join(here, 'index.html'), join(out, 'index.html'));
copyFileSync(join(here, 'favicon.svg'), join(out, 'favicon.svg'));
