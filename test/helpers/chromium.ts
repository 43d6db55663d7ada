// Where the browser suite finds Chromium: `CHROMIUM_PATH` when set, else `chromium` (Debian's
// package) or `chromium-browser` on PATH. Looked up on PATH rather than at a fixed /usr/bin path, so
// a PATH without Chromium means "no browser" (the fresh-clone check in .ci/run relies on that).

import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';

const NAMES = ['chromium', 'chromium-browser'];

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** The command on PATH with this name, if there is one. */
export function onPath(name: string, path = process.env.PATH ?? ''): string | undefined {
  for (const dir of path.split(delimiter)) {
    if (dir === '') continue;
    const candidate = join(dir, name);
    if (executable(candidate)) return candidate;
  }
  return undefined;
}

/** The Chromium executable to drive, or undefined when there is none. */
export function findChromium(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const given = env.CHROMIUM_PATH;
  if (given !== undefined && given !== '') return executable(given) ? given : undefined;
  for (const name of NAMES) {
    const found = onPath(name, env.PATH);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** The one line a run without Chromium prints: why the browser suite is skipped and how to run it. */
export const NO_CHROMIUM =
  'Chromium not found (CHROMIUM_PATH, or chromium on PATH): the OAuth browser suite is skipped; ' +
  'run `npm test` as root with apt-get (it installs Debian’s chromium) or install it yourself to run it';
