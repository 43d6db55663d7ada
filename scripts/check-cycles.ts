// `npm run lint:cycles`: fails when the project's modules import each other in a circle. Reads every
// .ts file under src/, test/, bench/ and scripts/, follows its relative `import … from` and
// `export … from` specifiers (type-only ones too: a cycle of types is still a tangle), and prints each
// cycle found. Part of `npm run lint`.

import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const ROOT = resolve(dirname(new URL(import.meta.url).pathname), '..');
const FOLDERS = ['src', 'test', 'bench', 'scripts'];
const SPECIFIER = /^\s*(?:import|export)\b[^'"]*?\bfrom\s+['"](\.{1,2}\/[^'"]+)['"]/gm;

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : filesUnder(path);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [path] : [];
  });
}

const files = FOLDERS.flatMap((f) => {
  try {
    return filesUnder(join(ROOT, f));
  } catch {
    return [];
  }
});
const known = new Set(files);
const edges = new Map<string, string[]>();
for (const file of files) {
  const text = readFileSync(file, 'utf8');
  const targets = [...text.matchAll(SPECIFIER)]
    .map((m) => resolve(dirname(file), m[1]!))
    .filter((t) => known.has(t));
  edges.set(file, [...new Set(targets)]);
}

// Depth-first search with the path on a stack: an edge back into the path closes a cycle.
const state = new Map<string, 'open' | 'done'>();
const cycles: string[][] = [];
function visit(file: string, path: string[]): void {
  state.set(file, 'open');
  path.push(file);
  for (const next of edges.get(file) ?? []) {
    if (state.get(next) === 'open') cycles.push([...path.slice(path.indexOf(next)), next]);
    else if (state.get(next) === undefined) visit(next, path);
  }
  path.pop();
  state.set(file, 'done');
}
for (const file of files) if (state.get(file) === undefined) visit(file, []);

if (cycles.length > 0) {
  for (const c of cycles) console.error(`import cycle: ${c.map((f) => relative(ROOT, f)).join(' → ')}`);
  process.exit(1);
}
console.log(`no import cycles among ${files.length} files`);
