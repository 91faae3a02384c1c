// Bundles the dashboard into static files: node build.mjs OUTDIR (default: dist).
// OUTDIR gets index.html, app.css and app.js (src/main.js with Chart.js, minified, no external imports).
import { build } from 'esbuild';
import { copyFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const outdir = path.resolve(process.argv[2] || path.join(here, 'dist'));

await mkdir(outdir, { recursive: true });
await build({
  entryPoints: [path.join(here, 'src/main.js')],
  outfile: path.join(outdir, 'app.js'),
  bundle: true,
  format: 'esm',
  minify: true,
  target: ['es2020'],
  charset: 'ascii',
  legalComments: 'eof',
  logLevel: 'warning',
});
for (const name of ['index.html', 'app.css']) {
  await copyFile(path.join(here, 'src', name), path.join(outdir, name));
}
