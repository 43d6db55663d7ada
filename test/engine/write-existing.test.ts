// `/update`, `/integrate` and `/delete` of many existing records named by typedId (or all by key),
// written at once (src/engine/write-batch.ts: updateAtOnce, deleteAtOnce): the answers, the stored
// records and their record history (in the request's order) are what writing them one by one gives
// (typed attributes, several sets of fields, returnolddata); a record missing, named twice, of another
// partition, at another version, not editable, or a value refused is answered as before, naming the
// element, with nothing written; a statement the database refuses leaves the batch to the
// record-by-record path; batches by id and by key of the same records do not deadlock. On both
// databases.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ADMIN,
  ADMIN_PASSWORD,
  adminPrincipal,
  clientOf,
  uniqueName,
  type Client,
  type Harness,
} from '../helpers/app.ts';
import { deleteAtOnce, updateAtOnce } from '../../src/engine/write-batch.ts';
import { loadTypeContext } from '../../src/engine/context.ts';
import { findType } from '../../src/engine/registry.ts';
import { expectError, okData } from '../helpers/envelope.ts';
import { productPartitions, productReads, refusingTx, stripCopy } from '../helpers/products.ts';

type Row = Record<string, any>;

describe('update, integrate and delete of many existing records by typedId or key', () => {
  let h: Harness;
  let api: Client;
  let otherApi: Client;
  let close: () => Promise<void>;
  before(async () => {
    // Typed custom attributes: integers in attribute4, decimals in attribute5, dates in attribute6.
    ({ h, api, otherApi, close } = await productPartitions([
      { fieldName: 'attribute4', fieldType: 'INTEGER', label: 'n' },
      { fieldName: 'attribute5', fieldType: 'NUMERIC', label: 'x' },
      { fieldName: 'attribute6', fieldType: 'DATE', label: 'd' },
    ]));
  });
  after(() => close());

  // (`api` is set in before(): the reads call it when they run.)
  const { historyOf, skusOf } = productReads((...args) => api(...args));

  /** Four records of a prefix: their typedIds. */
  const seed = async (p: string): Promise<string[]> =>
    okData(
      await api(
        '/add/P',
        [0, 1, 2, 3].map((i) => ({
          data: { sku: `${p}-${i}`, label: `old ${i}`, attribute3: `keep ${i}`, attribute4: i },
        })),
      ),
    ).map((r) => r.typedId);

  /**
   * `op` of `batch(ids of a)` in one call and of `batch(ids of b)` one record a call: the same answers,
   * stored records and histories but for the prefixes. Answers the rows of the batch.
   */
  const sameAsOneByOne = async (op: string, batch: (ids: string[], prefix: string) => Row[]) => {
    const [a, b] = [uniqueName('A'), uniqueName('B')];
    const [idsA, idsB] = [await seed(a), await seed(b)];
    const atOnce = okData(await api(op, batch(idsA, a)));
    const oneByOne = [];
    for (const item of batch(idsB, b)) oneByOne.push(...okData(await api(op, [item])));
    assert.deepEqual(
      atOnce.map((r) => stripCopy(r, a)),
      oneByOne.map((r) => stripCopy(r, b)),
    );
    assert.deepEqual(
      (await skusOf(a)).map((r) => stripCopy(r, a)),
      (await skusOf(b)).map((r) => stripCopy(r, b)),
    );
    for (const [i, id] of idsA.entries()) {
      assert.deepEqual(await historyOf(id, a), await historyOf(idsB[i], b), id);
    }
    // The history rows of the records follow the request's order, as one by one.
    assert.deepEqual(await historyOrder(idsA), await historyOrder(idsB));
    return atOnce;
  };

  /** The records (as positions in `typedIds`) of the history rows after their ADD, by history id. */
  const historyOrder = async (typedIds: readonly string[]) => {
    const ids = typedIds.map((t) => Number.parseInt(t, 10));
    const r = await h.db.query<{ record_id: string }>(
      `SELECT record_id FROM record_history
        WHERE partition_id = $1 AND type_code = 'P' AND record_id = ANY($2::bigint[]) AND action <> 'ADD'
        ORDER BY id`,
      [h.partitionId, ids],
    );
    return r.rows.map((row) => ids.indexOf(Number(row.record_id)));
  };

  test('update: the same answer, records and history as one by one; versions checked', async () => {
    const batch = (ids: string[]) => [
      {
        data: { typedId: ids[2], label: 'two', attribute5: '0.1000000000000000000001' },
        oldValues: { version: 0 },
      },
      { data: { typedId: ids[0], attribute4: 40, attribute6: '2026-02-28', label: null } },
      { data: { typedId: ids[3], label: 'three', attribute5: 12.5 }, oldValues: { version: 0 } },
      { data: { typedId: ids[1] } },
    ];
    const rows = await sameAsOneByOne('/update/P', batch);
    assert.deepEqual(
      rows.map((r) => [r.label, r.version, r.attribute3, r.attribute4, r.attribute5, r.attribute6]),
      [
        ['two', 1, 'keep 2', 2, '0.1000000000000000000001', null],
        [null, 1, 'keep 0', 40, null, '2026-02-28'],
        ['three', 1, 'keep 3', 3, 12.5, null],
        ['old 1', 1, 'keep 1', 1, null, null],
      ],
    );
    // With the records as they were.
    const old = await sameAsOneByOne('/update/P/returnolddata', (ids) => [
      { data: { typedId: ids[1], label: 'new 1' } },
      { data: { typedId: ids[0], label: 'new 0' } },
    ]);
    assert.deepEqual(
      old.map((r) => [r.label, r.oldValues.label, r.oldValues.version]),
      [
        ['new 1', 'old 1', 0],
        ['new 0', 'old 0', 0],
      ],
    );
  });

  test('update and delete by business key: the same as one by one', async () => {
    const rows = await sameAsOneByOne('/update/P', (_, p) => [
      { data: { sku: `${p}-3`, label: 'three' }, oldValues: { version: 0 } },
      { data: { sku: `${p}-0`, label: 'zero' } },
      { data: { sku: `${p}-2`, attribute4: 22 } },
    ]);
    assert.deepEqual(
      rows.map((r) => [r.label, r.attribute4, r.version]),
      [
        ['three', 3, 1],
        ['zero', 0, 1],
        ['old 2', 22, 1],
      ],
    );
    const deleted = await sameAsOneByOne('/delete/P', (_, p) => [
      { data: { sku: `${p}-2` } },
      { data: { sku: `${p}-1` } },
    ]);
    assert.deepEqual(
      deleted.map((r) => r.label),
      ['old 2', 'old 1'],
    );
  });

  test('integrate and delete by typedId: the same as one by one', async () => {
    const rows = await sameAsOneByOne('/integrate/P', (ids) => [
      { data: { typedId: ids[3], attribute4: 7 } },
      { data: { typedId: ids[1], label: 'one', unitOfMeasure: 'kg' } },
    ]);
    assert.deepEqual(
      rows.map((r) => [r.label, r.attribute4, r.unitOfMeasure, r.version]),
      [
        ['old 3', 7, null, 1],
        ['one', 1, 'kg', 1],
      ],
    );
    const [a, b] = [uniqueName('A'), uniqueName('B')];
    const [idsA, idsB] = [await seed(a), await seed(b)];
    const atOnce = okData(
      await api('/delete/P', [{ data: { typedId: idsA[2] } }, { data: { typedId: idsA[0] } }]),
    );
    const oneByOne = [
      ...okData(await api('/delete/P', [{ data: { typedId: idsB[2] } }])),
      ...okData(await api('/delete/P', [{ data: { typedId: idsB[0] } }])),
    ];
    assert.deepEqual(
      atOnce.map((r) => stripCopy(r, a)),
      oneByOne.map((r) => stripCopy(r, b)),
    );
    assert.deepEqual(
      (await skusOf(a)).map((r) => r.sku),
      [`${a}-1`, `${a}-3`],
    );
    assert.deepEqual(await historyOf(idsA[2], a), await historyOf(idsB[2], b));
    assert.deepEqual(await historyOrder(idsA), await historyOrder(idsB));
    assert.deepEqual(
      (await historyOf(idsA[0], a)).map((e: Row) => e.action),
      ['ADD', 'DELETE'],
    );
  });

  test('errors name the element as before and leave nothing written', async () => {
    const p = uniqueName('E');
    const ids = await seed(p);
    const [theirs] = okData(await otherApi('/add/P', { data: { sku: `${p}-theirs`, label: 'theirs' } }));
    const labels = async () => (await skusOf(p)).map((r) => `${r.label}@${r.version}`);
    const before = await labels();
    const update = (bad: Row) => [
      { data: { typedId: ids[0], label: 'a' } },
      { data: { typedId: ids[1], label: 'b' } },
      bad,
    ];
    expectError(
      await api('/update/P', update({ data: { typedId: '999999999.P', label: 'c' } })),
      404,
      -1,
      '2.typedId',
    );
    expectError(
      await api('/update/P', update({ data: { typedId: theirs.typedId, label: 'c' } })),
      404,
      -1,
      '2.typedId',
    );
    expectError(
      await api('/update/P', update({ data: { typedId: ids[2], label: 'c' }, oldValues: { version: 5 } })),
      409,
      -1,
      '2.oldValues.version',
    );
    expectError(
      await api('/update/P', update({ data: { typedId: ids[2], attribute4: 'x' } })),
      400,
      -4,
      '2.attribute4',
    );
    expectError(
      await api('/update/P', update({ data: { typedId: ids[2], sku: 'other' } })),
      400,
      -4,
      '2.sku',
    );
    expectError(await api('/update/P', update({ data: { typedId: ids[2], nope: 1 } })), 400, -4, '2.nope');
    // Named twice: the second element sees what the first wrote (its version is stale then).
    expectError(
      await api('/update/P', [
        { data: { typedId: ids[0], label: 'a' }, oldValues: { version: 0 } },
        { data: { typedId: ids[0], label: 'b' }, oldValues: { version: 0 } },
      ]),
      409,
      -1,
      '1.oldValues.version',
    );
    expectError(
      await api('/integrate/P', update({ data: { typedId: '999999999.P', label: 'c' } })),
      404,
      -1,
      '2.typedId',
    );
    expectError(
      await api('/delete/P', [{ data: { typedId: ids[0] } }, { data: { typedId: theirs.typedId } }]),
      404,
      -1,
      '1.typedId',
    );
    expectError(
      await api('/delete/P', [{ data: { typedId: ids[0] } }, { data: { typedId: ids[0] } }]),
      400,
      -4,
      '1.typedId',
    );
    assert.deepEqual(await labels(), before);
    const [stillTheirs] = okData(await otherApi(`/fetch/P/${theirs.typedId}`));
    assert.equal(stillTheirs.label, 'theirs');
    // Named twice without versions: applied in order, as one by one.
    const twice = okData(
      await api('/update/P', [
        { data: { typedId: ids[3], label: 'first' } },
        { data: { typedId: ids[3], attribute3: 'second' } },
      ]),
    );
    assert.deepEqual(
      twice.map((r) => [r.label, r.attribute3, r.version]),
      [
        ['first', 'keep 3', 1],
        ['first', 'second', 2],
      ],
    );
  });

  test('keys no column takes: refused as one by one, nothing written', async () => {
    const p = uniqueName('K');
    okData(
      await api('/add/P', [
        { data: { sku: 'Infinity', label: 'stored' } },
        { data: { sku: `${p}-b`, label: 'b' } },
      ]),
    );
    // 1e400 parses to Infinity: as text it named the record "Infinity" (and wrote it).
    for (const op of ['/integrate/P', '/update/P', '/delete/P']) {
      const raw = `[{"data":{"sku":1e400,"label":"x"}},{"data":{"sku":"${p}-b","label":"y"}}]`;
      const r = await h.call(op, { basic: { user: ADMIN, password: ADMIN_PASSWORD }, raw });
      expectError(r, 400, -4, '0.sku');
      assert.match(r.body.response.data, /sku: is a number beyond the range of a double/);
    }
    // A NUL in a key: the element's error, worded as the record-by-record path words it.
    const nul = await api('/integrate/P', [
      { data: { sku: `${p}-b`, attribute1: 'x' } },
      { data: { sku: `${p}-c\u0000`, attribute1: 'y' } },
    ]);
    expectError(nul, 400, -4, '1.sku');
    assert.equal(nul.body.response.data, 'sku: must not contain NUL characters');
    const [stored] = okData(await api('/fetch/P', { data: { sku: 'Infinity' } }));
    assert.deepEqual([stored.label, stored.version], ['stored', 0]);
    assert.deepEqual(
      (await skusOf(p)).map((r) => [r.label, r.attribute1, r.version]),
      [['b', null, 0]],
    );
  });

  test('a record the caller may not edit: refused as before, nothing written', async () => {
    const p = uniqueName('G');
    const group = uniqueName('grp');
    okData(await api('/add/UG', { data: { uniqueName: group, label: 'g' } }));
    await h.newUser(`${p}-out`.toLowerCase(), 'outsider-password-1', ['PRICESHOP_EDIT']);
    const outsider = await clientOf(h, `${p}-out`.toLowerCase(), 'outsider-password-1');
    const [open, locked] = okData(
      await api('/add/P', [
        { data: { sku: `${p}-open`, label: 'x' } },
        { data: { sku: `${p}-locked`, label: 'x', userGroupEdit: group } },
      ]),
    );
    for (const op of ['/update/P', '/integrate/P', '/delete/P']) {
      const r = await outsider(op, [
        { data: { typedId: open.typedId, label: 'y' } },
        { data: { typedId: locked.typedId, label: 'y' } },
      ]);
      expectError(r, 403, -3);
    }
    assert.deepEqual(
      (await skusOf(p)).map((r) => [r.sku, r.label, r.version]),
      [
        [`${p}-locked`, 'x', 0],
        [`${p}-open`, 'x', 0],
      ],
    );
  });

  test('a batch at once and one record by record, same records, same order, at the same time: no deadlock', async () => {
    // The at-once path locks the records in the request's order, as the record-by-record path does;
    // locked in id order, batches in descending id order deadlocked with record-by-record ones on
    // PostgreSQL, and lost five times over (409).
    const p = uniqueName('D');
    const n = 40;
    const rows = okData(
      await api(
        '/add/P',
        Array.from({ length: n }, (_, i) => ({ data: { sku: `${p}-${String(i).padStart(2, '0')}` } })),
      ),
    );
    const descending = [...rows].reverse();
    const [other] = okData(await api('/add/P', { data: { sku: `${p}-other` } }));
    for (let round = 0; round < 3; round++) {
      const byId = () =>
        api(
          '/update/P',
          descending.map((r) => ({ data: { typedId: r.typedId, attribute1: `id ${round}` } })),
        );
      // Named both ways (another record by typedId first, then these by key): the record-by-record
      // path; its record locks (lockBatch) are not the other batch's, so both run at once.
      const byKey = () =>
        api('/update/P', [
          { data: { typedId: other.typedId, attribute2: `key ${round}` } },
          ...descending.map((r) => ({ data: { sku: r.sku, attribute2: `key ${round}` } })),
        ]);
      const answers = await Promise.all([byId(), byKey(), byId(), byKey(), byId(), byKey(), byId(), byKey()]);
      for (const r of answers) okData(r);
    }
    const stored = (await skusOf(p)).filter((r) => r.sku !== `${p}-other`);
    assert.equal(stored.length, n);
    assert.ok(stored.every((r) => r.attribute1 === 'id 2' && r.attribute2 === 'key 2' && r.version === 24));
  });

  test('which batches are written at once, and which are left to the record-by-record path', async () => {
    const p = uniqueName('W');
    const ids = await seed(p);
    const principal = adminPrincipal(h);
    const P = findType('P')!;
    const answered: Record<string, number | undefined> = {};
    await h.db.transaction(async (tx) => {
      const tc = await loadTypeContext(tx, principal, P);
      const tries: Record<string, Row[]> = {
        plain: [{ data: { typedId: ids[0], label: 'a' } }, { data: { typedId: ids[1] } }],
        twice: [{ data: { typedId: ids[0] } }, { data: { typedId: ids[0], label: 'b' } }],
        byKey: [{ data: { sku: `${p}-0` } }, { data: { sku: `${p}-1`, label: 'c' } }],
        bothWays: [{ data: { typedId: ids[0] } }, { data: { sku: `${p}-1`, label: 'c' } }],
        sameTwice: [{ data: { typedId: ids[0] } }, { data: { sku: `${p}-0`, label: 'c' } }],
        missing: [{ data: { typedId: ids[0] } }, { data: { typedId: '999999999.P' } }],
        stale: [{ data: { typedId: ids[2] }, oldValues: { version: 3 } }, { data: { typedId: ids[3] } }],
        refusedValue: [{ data: { typedId: ids[2] } }, { data: { typedId: ids[3], attribute4: 'x' } }],
      };
      for (const [name, items] of Object.entries(tries)) {
        answered[name] = (await updateAtOnce(tx, tc, principal, items as never, 'update', false))?.length;
      }
      answered.integrateStale = (
        await updateAtOnce(tx, tc, principal, tries.stale as never, 'integrate', false)
      )?.length;
      // A statement the database refuses: its savepoint is rolled back and the transaction goes on;
      // a statement cut by the request's deadline ends the request.
      const refusing = (code: string | undefined) =>
        refusingTx(tx, /^WITH written AS \((UPDATE|DELETE)/, code);
      const two = [{ data: { typedId: ids[2] } }, { data: { typedId: ids[3] } }];
      answered.refusedByDatabase = (
        await updateAtOnce(refusing('23514'), tc, principal, two, 'update', false)
      )?.length;
      await assert.rejects(updateAtOnce(refusing('57014'), tc, principal, two, 'update', false), /refused/);
      await tx.query(`ROLLBACK TO SAVEPOINT rc_write_batch`);
      const records = two.map((i) => i.data);
      answered.deleteRefused = (await deleteAtOnce(refusing('23503'), tc, principal, records, []))?.length;
      answered.deleteStale = (await deleteAtOnce(tx, tc, principal, records, [null, { version: 9 }]))?.length;
      answered.deleteUnknownField = (
        await deleteAtOnce(tx, tc, principal, [records[0]!, { ...records[1], nope: 1 }], [])
      )?.length;
      answered.delete = (await deleteAtOnce(tx, tc, principal, records, []))?.length;
      await tx.query('SELECT 1');
    });
    assert.deepEqual(answered, {
      plain: 2,
      twice: undefined,
      byKey: 2,
      bothWays: undefined,
      sameTwice: undefined,
      missing: undefined,
      stale: undefined,
      refusedValue: undefined,
      integrateStale: 2,
      refusedByDatabase: undefined,
      deleteRefused: undefined,
      deleteStale: undefined,
      deleteUnknownField: undefined,
      delete: 2,
    });
    assert.deepEqual(
      (await skusOf(p)).map((r) => [r.sku, r.label, r.version]),
      [
        [`${p}-0`, 'a', 2],
        [`${p}-1`, 'c', 2],
      ],
    );
  });
});
