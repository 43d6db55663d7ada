// `npm run lint:openapi`: builds the app (in-memory database, nothing listens), writes its OpenAPI
// document to a temporary file and lints it with Redocly under redocly.yaml. Part of `npm run lint`.

import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { createDb } from '../src/db/db.ts';

const config = loadConfig({ DATA_DIR: ':memory:', LOG_LEVEL: 'silent', BOOTSTRAP_PARTITIONS: '' });
const db = await createDb(config);
const app = await buildApp({ config, db });
const dir = mkdtempSync(join(tmpdir(), 'ratecard-openapi-'));
let status: number;
try {
  await app.ready();
  const file = join(dir, 'openapi.json');
  writeFileSync(file, JSON.stringify(app.swagger(), null, 2));
  const root = new URL('../', import.meta.url).pathname;
  const r = spawnSync(
    join(root, 'node_modules/.bin/redocly'),
    ['lint', file, '--config', join(root, 'redocly.yaml')],
    {
      stdio: 'inherit',
    },
  );
  status = r.status ?? 1;
} finally {
  await app.close();
  await db.close();
  rmSync(dir, { recursive: true, force: true });
}
process.exitCode = status;
