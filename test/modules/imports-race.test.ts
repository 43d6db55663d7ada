// Writes of an import's changes racing its submit, over HTTP: saves, a massedit and a massdelete
// sent together with the submit are each either applied by it (they came first) or refused with 409
// (they came after), never left NEW inside the APPLIED import; and a submit while the import still
// stages its file (LOADING) is refused, never applying part of the file. Both databases: PGlite runs
// one transaction at a time, but a write checked the status before its transaction, so the race
// showed there too; the file is staged chunk by chunk, with other requests in between.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { clientOf, startHarness, type Client, type Harness, type Reply } from '../helpers/app.ts';
import { slotWith } from '../jobs/helpers.ts';
import { okData, expectError } from '../helpers/envelope.ts';

describe('imports: writes of changes racing a submit', () => {
  let h: Harness;
  let call: Client;
  const label = async (sku: string) =>
    okData(await call('/fetch/P', { data: { sku }, textMatchStyle: 'exactCase' }))[0]?.label;
  const changesOf = async (id: number) =>
    okData(await call(`/importmanager.fetch/${id}`, { endRow: 10_000 })) as {
      key1: string;
      value: string;
      validationState: string;
    }[];
  const SKUS = Array.from({ length: 8 }, (_, n) => `R-${n}`);

  before(async () => {
    h = await startHarness();
    call = await clientOf(h);
    okData(await call('/add/P', { data: SKUS.map((sku) => ({ sku, label: 'old' })) }));
  });
  after(async () => {
    await h.close();
  });

  test('saves, a massedit and a massdelete sent with the submit: applied by it or 409', async () => {
    for (let round = 0; round < 18; round++) {
      const [im] = okData(await call('/importmanager.add', { data: { targetType: 'P' } }));
      const path = (op: string) => `/importmanager.${op}/${im.id}`;
      const value = (n: number) => `v${round}-${n}`;
      // staged before; R-1..R-6 saved during the submit; R-7 massdeleted during it.
      okData(
        await call(path('save'), {
          data: [0, 7].map((n) => ({ sku: SKUS[n], targetColumn: 'label', value: value(n) })),
        }),
      );
      const save = (n: number) => () =>
        call(path('save'), { data: { sku: SKUS[n], targetColumn: 'label', value: value(n) } });
      const writes = [
        ...[1, 2, 3, 4, 5, 6].map(save),
        () =>
          call(path('massedit'), {
            filterCriteria: { key1: SKUS.slice(0, 3) },
            massEditRecords: [{ fieldName: 'value', massEditOperator: '=', fieldValue: `m${round}` }],
          }),
        () => call(path('massdelete'), { data: { key1: SKUS[7] } }),
      ];
      // Sent in this order, the submit among the writes at another place each round.
      const at = round % (writes.length + 1);
      const sent = [...writes.slice(0, at), () => call(path('submit'), {}), ...writes.slice(at)].map((f) =>
        f(),
      );
      const answers = await Promise.all(sent);
      const [done] = okData(answers.splice(at, 1)[0]!);
      assert.equal(done.status, 'APPLIED');
      for (const r of answers) if (r.status !== 200) expectError(r, 409, -1);

      // Every change of the APPLIED import is applied: VALID, and its product holds its value.
      const changes = await changesOf(im.id);
      for (const c of changes) {
        assert.equal(c.validationState, 'VALID', `round ${round}: ${JSON.stringify(c)}`);
        assert.equal(await label(c.key1), c.value, `round ${round}: ${c.key1}`);
      }
      const staged = new Set(changes.map((c) => c.key1));
      // A save answered 200 is in the import (applied above), one answered 409 staged nothing.
      answers.slice(0, 6).forEach((r, i) => {
        assert.equal(staged.has(SKUS[i + 1]!), r.status === 200, `round ${round}: ${SKUS[i + 1]} ${r.text}`);
      });
      // The massdelete came before the submit (R-7 not applied) or after it (409, R-7 applied).
      const deleted = answers[7]!.status === 200;
      assert.equal(staged.has(SKUS[7]!), !deleted, `round ${round}: ${answers[7]!.text}`);
      if (deleted) assert.notEqual(await label(SKUS[7]!), value(7), `round ${round}`);
      expectError(await call(path('submit'), {}), 409, -1);
    }
  });

  test('a submit while the import stages its file is refused: no part of the file is applied', async () => {
    const rows = 4_500; // three chunks of the loader
    for (let round = 0; round < 3; round++) {
      const name = `load-${round}`;
      const csv = `changeType,sku,label\n${Array.from({ length: rows }, (_, n) => `ADD,L${round}-${n},x\n`).join('')}`;
      const slotId = await slotWith(h, csv, 'load.csv');
      let added = false;
      const adding = call('/importmanager.add', { data: { targetType: 'P', slotId, label: name } }).finally(
        () => (added = true),
      );
      // Submits the import as soon as it is listed, again and again while the add runs.
      const submits: Reply[] = [];
      while (!added) {
        const [im] = okData(await call('/fetch/IM', { data: { label: name } }));
        if (im !== undefined) submits.push(await call(`/importmanager.submit/${im.id}`, {}));
        if (submits.at(-1)?.status === 200) break;
      }
      const [im] = okData(await adding);
      for (const r of submits) {
        if (r.status === 200) assert.equal(okData(r)[0].messages[0].changes, rows, r.text);
        else expectError(r, 409, -1);
      }
      if (!submits.some((r) => r.status === 200)) {
        assert.equal(im.status, 'DRAFT');
        assert.equal(okData(await call(`/importmanager.submit/${im.id}`, {}))[0].messages[0].changes, rows);
      }
      const left = okData(
        await call(`/importmanager.fetch/${im.id}`, { data: { validationState: 'NEW' }, endRow: 1 }),
      );
      assert.deepEqual(left, [], `round ${round}: a change staged after the submit`);
      assert.equal(await label(`L${round}-${rows - 1}`), 'x');
    }
  });
});
