// `npm start` logs nothing but its own JSON lines: no library warning (such as Ajv's strict-mode
// "use allowUnionTypes" line) on stdout or stderr while the app builds its routes and starts.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer, stopServer } from '../helpers/process.ts';

const dir = mkdtempSync(join(tmpdir(), 'ratecard-startup-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('start-up and shutdown print only JSON log lines', async () => {
  const server = await startServer({ DATA_DIR: dir, DATABASE_URL: '' });
  assert.equal(await stopServer(server), 0);
  const lines = server
    .output()
    .split('\n')
    .filter((l) => l.trim() !== '');
  assert.ok(lines.length >= 3, server.output());
  for (const line of lines) {
    assert.doesNotThrow(() => JSON.parse(line), `not a JSON log line: ${line}`);
  }
  assert.doesNotMatch(server.output(), /strict mode|allowUnionTypes/);
});
