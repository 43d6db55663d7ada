// `/add` and `/integrate` of many records at once (src/engine/write-batch.ts): the answer, the stored
// records and their record history are what writing the records one by one gives; a key named twice,
// a key that exists (add), refused values and a record the caller may not edit are answered as
// before, naming the element, with nothing written; a statement the database refuses leaves the batch
// to the record-by-record path; other partitions are untouched. On both databases.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { adminPrincipal, clientOf, uniqueName, type Client, type Harness } from '../helpers/app.ts';
import { writeAtOnce } from '../../src/engine/write-batch.ts';
import { loadTypeContext } from '../../src/engine/context.ts';
import { findType } from '../../src/engine/registry.ts';
import { expectError, okData } from '../helpers/envelope.ts';
import { productPartitions, productReads, refusingTx, stripCopy } from '../helpers/products.ts';

type Row = Record<string, any>;

describe('add and integrate of many records at once', () => {
  let h: Harness;
  let api: Client;
  let otherApi: Client;
  let close: () => Promise<void>;
  before(async () => {
    // attribute4 holds integers: a text there is a value the server refuses.
    ({ h, api, otherApi, close } = await productPartitions([
      { fieldName: 'attribute4', fieldType: 'INTEGER', label: 'n' },
    ]));
  });
  after(() => close());

  // (`api` is set in before(): the reads call it when they run.)
  const { historyOf, skusOf } = productReads((...args) => api(...args));

  /**
   * `op` of `batch(a)` in one call and of `batch(b)` one record a call: the same answers and record
   * histories but for the sku prefixes. Answers the rows of the batch.
   */
  const sameAsOneByOne = async (op: string, batch: (p: string) => { data: Row }[], a: string, b: string) => {
    const atOnce = okData(await api(`/${op}/P`, batch(a)));
    const oneByOne = [];
    for (const item of batch(b)) oneByOne.push(...okData(await api(`/${op}/P`, [item])));
    assert.deepEqual(
      atOnce.map((r) => stripCopy(r, a)),
      oneByOne.map((r) => stripCopy(r, b)),
    );
    for (const [i, r] of atOnce.entries()) {
      assert.deepEqual(await historyOf(r.id, a), await historyOf(oneByOne[i].id, b), r.sku);
    }
    // New records get their ids in the request's order, whatever fields each sets.
    const created = atOnce.filter((r) => r.version === 0).map((r) => Number(r.id));
    assert.deepEqual(
      created,
      [...created].sort((x, y) => x - y),
    );
    return atOnce;
  };

  test('the same answer, records and history as integrating them one by one', async () => {
    const [a, b] = [uniqueName('A'), uniqueName('B')];
    // Existing records of both copies, then one batch of new and existing records of two shapes.
    for (const p of [a, b]) {
      okData(
        await api(
          '/add/P',
          [0, 1, 2, 3].map((i) => ({
            data: { sku: `${p}-${i}`, label: `old ${i}`, attribute3: `keep ${i}` },
          })),
        ),
      );
    }
    const batch = (p: string) => [
      { data: { sku: `${p}-9`, label: 'new 9', attribute1: 'x' } },
      { data: { sku: `${p}-1`, label: 'changed 1', attribute1: 'y' } },
      { data: { sku: `${p}-8`, label: 'new 8' } },
      { data: { sku: `${p}-2`, label: 'old 2' } },
      { data: { sku: `${p}-3`, unitOfMeasure: 'kg', attribute1: 'z' } },
      { data: { sku: `${p}-7`, label: 'new 7', attribute1: 'w' } },
    ];
    const atOnce = await sameAsOneByOne('integrate', batch, a, b);
    assert.deepEqual(
      atOnce.map((r) => [r.sku, r.version]),
      [
        [`${a}-9`, 0],
        [`${a}-1`, 1],
        [`${a}-8`, 0],
        [`${a}-2`, 1],
        [`${a}-3`, 1],
        [`${a}-7`, 0],
      ],
    );
    // Fields a record leaves out keep their values.
    assert.equal(atOnce[1].attribute3, 'keep 1');
    assert.equal(atOnce[4].label, 'old 3');
    const [storedA, storedB] = [await skusOf(a), await skusOf(b)];
    assert.deepEqual(
      storedA.map((r) => stripCopy(r, a)),
      storedB.map((r) => stripCopy(r, b)),
    );
    assert.deepEqual(
      (await historyOf(atOnce[1].id, a)).map((e: Row) => e.action),
      ['ADD', 'UPDATE'],
    );
  });

  test('a key named twice: the second element updates what the first wrote', async () => {
    const p = uniqueName('T');
    const rows = okData(
      await api('/integrate/P', [
        { data: { sku: `${p}-1`, label: 'first' } },
        { data: { sku: `${p}-2`, label: 'other' } },
        { data: { sku: `${p}-1`, label: 'second' } },
      ]),
    );
    assert.deepEqual(
      rows.map((r) => [r.sku, r.label, r.version]),
      [
        [`${p}-1`, 'first', 0],
        [`${p}-2`, 'other', 0],
        [`${p}-1`, 'second', 1],
      ],
    );
  });

  test('errors name the element and leave nothing written', async () => {
    const p = uniqueName('E');
    const items = (bad: Row) => [
      { data: { sku: `${p}-1`, label: 'a' } },
      { data: { sku: `${p}-2`, label: 'b' } },
      { data: { sku: `${p}-3`, label: 'c', ...bad } },
    ];
    // Values the server refuses: a text in an integer attribute, a NUL character in a text.
    expectError(await api('/integrate/P', items({ attribute4: 'not a number' })), 400, -4, '2.attribute4');
    const nul = await api('/integrate/P', items({ label: 'nul \u0000 here' }));
    assert.ok(nul.status >= 400 && nul.status < 500, nul.text);
    assert.equal(nul.body.response.status, -4, nul.text);
    assert.deepEqual(await skusOf(p), []);
  });

  test('a record the caller may not edit: refused as before, nothing written', async () => {
    const p = uniqueName('G');
    const group = uniqueName('grp');
    okData(await api('/add/UG', { data: { uniqueName: group, label: 'g' } }));
    await h.newUser(`${p}-out`.toLowerCase(), 'outsider-password-1', ['PRICESHOP_EDIT']);
    const outsider = await clientOf(h, `${p}-out`.toLowerCase(), 'outsider-password-1');
    okData(await api('/add/P', { data: { sku: `${p}-locked`, label: 'x', userGroupEdit: group } }));
    expectError(
      await outsider('/integrate/P', [
        { data: { sku: `${p}-new`, label: 'n' } },
        { data: { sku: `${p}-locked`, label: 'y' } },
      ]),
      403,
      -3,
    );
    assert.deepEqual(
      (await skusOf(p)).map((r) => [r.sku, r.label]),
      [[`${p}-locked`, 'x']],
    );
  });

  test('batches past one statement, and other partitions untouched', async () => {
    const p = uniqueName('L');
    const attrs = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`attribute${i + 1}`, String(i)]));
    okData(await otherApi('/add/P', { data: { sku: `${p}-00007`, label: 'theirs' } }));
    const n = 2_100; // 32 fields a record: more than one statement's parameters
    const items = Array.from({ length: n }, (_, i) => ({
      data: { sku: `${p}-${String(i).padStart(5, '0')}`, label: `l${i}`, ...attrs },
    }));
    const rows = okData(await api('/integrate/P', items));
    assert.equal(rows.length, n);
    assert.deepEqual(
      rows.map((r) => r.sku),
      items.map((i) => i.data.sku),
    );
    assert.ok(rows.every((r) => r.version === 0 && r.attribute30 === '29'));
    const [theirs] = okData(await otherApi('/fetch/P', { data: { sku: `${p}-00007` } }));
    assert.equal(theirs.label, 'theirs');
    assert.equal(theirs.version, 0);
    const again = okData(
      await api(
        '/integrate/P',
        items.slice(0, 3).map((i) => ({ data: { ...i.data, label: 'again' } })),
      ),
    );
    assert.deepEqual(
      again.map((r) => [r.label, r.version]),
      [
        ['again', 1],
        ['again', 1],
        ['again', 1],
      ],
    );
  });

  test('which batches are written at once, and which are left to the record-by-record path', async () => {
    const p = uniqueName('W');
    const principal = adminPrincipal(h);
    const P = findType('P')!;
    const tries = {
      plain: [{ sku: `${p}-1`, label: 'a' }, { sku: `${p}-2` }],
      twice: [{ sku: `${p}-3` }, { sku: `${p}-3`, label: 'b' }],
      byId: [{ sku: `${p}-4` }, { typedId: '1.P', label: 'c' }],
      refusedValue: [{ sku: `${p}-5` }, { sku: `${p}-6`, attribute4: 'not a number' }],
      nul: [{ sku: `${p}-7` }, { sku: `${p}-8`, label: 'nul \u0000' }],
    };
    const answered: Record<string, number | undefined> = {};
    await h.db.transaction(async (tx) => {
      const tc = await loadTypeContext(tx, principal, P);
      for (const [name, items] of Object.entries(tries)) {
        answered[name] = (await writeAtOnce(tx, tc, principal, items, 'integrate'))?.length;
      }
      // A statement the database refuses: its savepoint is rolled back and the transaction goes on;
      // a statement cut by the request's deadline ends the request.
      const refusing = (code: string | undefined) => refusingTx(tx, /^WITH w AS \(INSERT/, code);
      // Add: what exists already (and a key named twice) is a duplicate the other path names.
      answered.add = (await writeAtOnce(tx, tc, principal, [{ sku: `${p}-11` }, { sku: `${p}-12` }], 'add'))
        ?.length;
      answered.addExisting = (
        await writeAtOnce(tx, tc, principal, [{ sku: `${p}-13` }, { sku: `${p}-1` }], 'add')
      )?.length;
      answered.addTwice = (
        await writeAtOnce(tx, tc, principal, [{ sku: `${p}-14` }, { sku: `${p}-14` }], 'add')
      )?.length;
      const two = [{ sku: `${p}-9` }, { sku: `${p}-10` }];
      answered.refusedByDatabase = (await writeAtOnce(refusing('23514'), tc, principal, two, 'integrate'))
        ?.length;
      await assert.rejects(writeAtOnce(refusing('57014'), tc, principal, two, 'integrate'), /refused/);
      // An error that is no database refusal (a fault of the server) is not hidden behind the other path.
      await assert.rejects(writeAtOnce(refusing(undefined), tc, principal, two, 'integrate'), /refused/);
      await tx.query(`ROLLBACK TO SAVEPOINT rc_write_batch`);
      await tx.query('SELECT 1');
    });
    assert.deepEqual(answered, {
      plain: 2,
      twice: undefined,
      byId: undefined,
      refusedValue: undefined,
      nul: undefined,
      add: 2,
      addExisting: undefined,
      addTwice: undefined,
      refusedByDatabase: undefined,
    });
    assert.deepEqual(
      (await skusOf(p)).map((r) => r.sku),
      [`${p}-1`, `${p}-11`, `${p}-12`, `${p}-2`],
    );
  });

  test('add: the same answer, records and history as adding them one by one; duplicates named', async () => {
    const [a, b] = [uniqueName('A'), uniqueName('B')];
    const batch = (p: string) => [
      { data: { sku: `${p}-1`, label: 'one', attribute1: 'x' } },
      { data: { sku: `${p}-2` } },
      { data: { sku: `${p}-3`, label: 'three', unitOfMeasure: 'kg' } },
    ];
    await sameAsOneByOne('add', batch, a, b);
    // A key that exists, and a key named twice: 409 naming the element; nothing of the batch written.
    const c = uniqueName('C');
    expectError(
      await api('/add/P', [{ data: { sku: `${c}-1` } }, { data: { sku: `${a}-2`, label: 'again' } }]),
      409,
      -1,
      '1.sku',
    );
    expectError(
      await api('/add/P', [
        { data: { sku: `${c}-1` } },
        { data: { sku: `${c}-2` } },
        { data: { sku: `${c}-2` } },
      ]),
      409,
      -1,
      '2.sku',
    );
    assert.deepEqual(await skusOf(c), []);
    assert.equal((await skusOf(a))[1].label, null);
  });
});
