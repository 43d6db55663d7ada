// `npm pretest`: make the browser suite runnable where the machine allows it. When Chromium is
// missing and we are root with apt-get on PATH, install Debian's `chromium`; otherwise do nothing —
// the suite then skips itself with one line saying why (or fails under CI=true, so CI never goes
// green without it). Never fails `npm test` itself: a failed install only means the suite skips.

import { spawnSync } from 'node:child_process';
import { findChromium, onPath } from '../helpers/chromium.ts';

function run(cmd: string, args: string[]): boolean {
  const r = spawnSync(cmd, args, {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
  return r.status === 0;
}

if (findChromium() === undefined) {
  const aptGet = onPath('apt-get');
  const root = process.getuid?.() === 0;
  if (aptGet !== undefined && root) {
    process.stdout.write('pretest: Chromium missing: installing Debian’s chromium for the browser suite\n');
    const installed =
      run(aptGet, ['install', '-y', '-qq', '--no-install-recommends', 'chromium']) ||
      (run(aptGet, ['update', '-qq']) &&
        run(aptGet, ['install', '-y', '-qq', '--no-install-recommends', 'chromium']));
    if (!installed || findChromium() === undefined) {
      process.stdout.write('pretest: installing chromium failed: the browser suite will be skipped\n');
    }
  }
}
