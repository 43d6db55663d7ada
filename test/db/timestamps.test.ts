// Date-times read back from either database are the same Date: both adapters parse timestamp and
// timestamptz text with node-postgres's parser. PGlite's own read years 1–99 as 1901–1999, so a
// notification due `0050-06-15T10:00:00Z` was answered due in 1950 on the embedded database only.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, type Harness } from '../helpers/app.ts';
import { clientOf } from '../helpers/app.ts';
import { okData } from '../helpers/envelope.ts';

let h: Harness;
before(async () => {
  h = await startHarness();
});
after(() => h.close());

test('timestamps of years 1 to 99 and far ones read back as written, on both adapters', async () => {
  const r = await h.db.query<{ a: Date; b: Date; c: Date; d: Date }>(
    `SELECT '0050-06-15 10:00:00+00'::timestamptz AS a, '0001-01-01 00:00:00.5+00'::timestamptz AS b,
            '9999-12-31 23:59:59+00'::timestamptz AS c, '2026-03-01 12:30:00+02'::timestamptz AS d`,
  );
  const row = r.rows[0]!;
  assert.deepEqual(
    [row.a, row.b, row.c, row.d].map((d) => d.toISOString()),
    [
      '0050-06-15T10:00:00.000Z',
      '0001-01-01T00:00:00.500Z',
      '9999-12-31T23:59:59.000Z',
      '2026-03-01T10:30:00.000Z',
    ],
  );
  // Over HTTP: a notification's due date of year 50.
  const api = await clientOf(h);
  okData(
    await api('/notification.send', {
      data: { notification: { title: 'old', dueDate: '0050-06-15T10:00:00Z' } },
    }),
  );
  const [n] = okData(
    await api('/notification.list', { data: { title: 'old' }, resultFields: ['title', 'dueDate'] }),
  );
  assert.equal(n.dueDate, '0050-06-15T10:00:00.000Z');
});
