// CI must fail when the browser suite cannot run: test/auth/oauth-browser.test.ts run as a child
// process (`node --test`, the project's Node) on a machine without Chromium — CHROMIUM_PATH naming a
// missing file and a PATH on which no `chromium` can be found — exits non-zero under CI=true, and
// exits 0 with the one explanatory skip line when CI is not set (a newcomer's `npm test`).

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findChromium, NO_CHROMIUM, onPath } from '../helpers/chromium.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const NODE = join(ROOT, 'node_modules/.bin/node');

/** The browser suite in a child without Chromium; `ci` sets CI=true, else CI is absent. */
function runBrowserSuite(ci: boolean, emptyDir: string) {
  const env: NodeJS.ProcessEnv = { ...process.env };
  // The child is a test run of its own, not a subtest reporting to this runner.
  delete env.NODE_TEST_CONTEXT;
  delete env.CI;
  if (ci) env.CI = 'true';
  env.CHROMIUM_PATH = join(emptyDir, 'no-such-chromium');
  // PATH holds only an empty directory: no `chromium` or `chromium-browser` to find there.
  env.PATH = emptyDir;
  assert.equal(findChromium(env), undefined);
  assert.equal(onPath('chromium', env.PATH), undefined);
  assert.equal(onPath('chromium-browser', env.PATH), undefined);
  const r = spawnSync(NODE, ['--test', 'test/auth/oauth-browser.test.ts'], {
    cwd: ROOT,
    env,
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

describe('the OAuth browser suite without Chromium', () => {
  test('fails under CI=true, is skipped with one line otherwise', () => {
    const empty = mkdtempSync(join(tmpdir(), 'no-chromium-'));
    try {
      const ci = runBrowserSuite(true, empty);
      assert.notEqual(ci.status, 0, ci.out);
      assert.notEqual(ci.status, null, `killed or timed out: ${ci.out}`);
      assert.match(ci.out, /CI=true and the browser suite cannot run/);

      const local = runBrowserSuite(false, empty);
      assert.equal(local.status, 0, local.out);
      assert.equal(local.out.split(NO_CHROMIUM).length - 1, 1, local.out);
      assert.match(local.out, /^﹣ OAuth pages in Chromium .*# Chromium not found/m);
      assert.match(local.out, /fail 0/);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
