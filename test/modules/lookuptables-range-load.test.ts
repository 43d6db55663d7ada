// RANGE bulk loads over real HTTP on both databases: a row is refused for an overlap only with a
// range that exists once the load is written — not with a row refused for a duplicate or repeated
// key, nor with a stored range a join moves away (JSON loads and file loads, one loader); the
// refusal of an invalid valueType on /lookuptablemanager.update whatever the table holds.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, type Harness, type Reply } from '../helpers/app.ts';
import { expectError, okData } from '../helpers/envelope.ts';
import { admin, assertOk, form, send } from '../jobs/helpers.ts';

const M = '/lookuptablemanager';
const HEADER = ['name', 'lowerBound', 'upperBound', 'value'];

describe('RANGE loads: overlaps only with ranges that exist after the load', () => {
  let h: Harness;
  let token: string;
  const api = (path: string, body?: unknown): Promise<Reply> =>
    h.call(path, { headers: { 'X-Ratecard-jwt': token }, ...(body === undefined ? {} : { body }) });

  before(async () => {
    h = await startHarness();
    token = (await h.login()).token;
  });
  after(() => h.close());

  let n = 0;
  async function rangeTable(stored: unknown[][] = []): Promise<number> {
    const [t] = okData(
      await api(`${M}.add`, { data: { uniqueName: `range-load-${n++}`, type: 'RANGE', valueType: 'REAL' } }),
    );
    for (const [name, lowerBound, upperBound, value] of stored) {
      okData(await api(`${M}.add/${t.id}`, { data: { name, lowerBound, upperBound, value } }));
    }
    return t.id as number;
  }

  const load = async (id: number, data: unknown[][], options?: unknown, header = HEADER) =>
    okData(
      await api(`${M}.loaddata/LTV?tableId=${id}`, {
        data: { header, data, ...(options === undefined ? {} : { options }) },
      }),
    )[0];

  async function rangesOf(id: number): Promise<string[]> {
    const rows = okData(await api(`${M}.fetch/${id}`, { sortBy: 'name' }));
    return rows.map((r) => `${r.name}:${Number(r.lowerBound)}..${Number(r.upperBound)}`);
  }

  const errorsOf = (r: any) => r.errors.map((e: any) => [e.row, e.field, e.message]);

  test('a row refused for a stored key overlaps nothing: the next row is written', async () => {
    const id = await rangeTable([['z', 0, 10, 1]]);
    const r = await load(id, [
      ['z', '1000', '1100', '1'],
      ['w', '1050', '1150', '2'],
    ]);
    assert.deepEqual([r.inserted, r.invalid], [1, 1], JSON.stringify(r));
    assert.equal(r.errors.length, 1);
    assert.equal(r.errors[0].row, 0);
    assert.match(r.errors[0].message, /duplicate key/);
    assert.deepEqual(await rangesOf(id), ['w:1050..1150', 'z:0..10']);
  });

  test('a row repeating a key of the load overlaps nothing: the next row is written', async () => {
    const id = await rangeTable();
    const r = await load(id, [
      ['a', '100', '200', '1'],
      ['a', '300', '400', '1'],
      ['b', '350', '450', '2'],
    ]);
    assert.deepEqual([r.inserted, r.invalid], [2, 1], JSON.stringify(r));
    assert.deepEqual(
      r.errors.map((e: any) => e.row),
      [1],
    );
    assert.match(r.errors[0].message, /repeats the business key/);
    assert.deepEqual(await rangesOf(id), ['a:100..200', 'b:350..450']);
  });

  test('a row that overlaps a row written is still refused, named with its row', async () => {
    const id = await rangeTable([['s', 500, 600, 1]]);
    const r = await load(id, [
      ['a', '100', '200', '1'],
      ['b', '150', '250', '2'], // overlaps a
      ['c', '550', '', '2'], // overlaps the stored s
      ['a', '900', '950', '1'], // repeats a: overlaps nothing
    ]);
    assert.deepEqual([r.inserted, r.invalid], [1, 3], JSON.stringify(r));
    assert.deepEqual(
      errorsOf(r).map(([row, field]: any) => [row, field]),
      [
        [1, 'lowerBound'],
        [2, 'lowerBound'],
        [3, 'name'],
      ],
    );
    assert.match(r.errors[0].message, /overlaps the range \[100, 200\) of a of row 0/);
    assert.match(r.errors[1].message, /overlaps the stored range \[500, 600\) of s/);
  });

  test('a row whose key is repeated later and refused for an overlap leaves the key to the repeat', async () => {
    const id = await rangeTable([['s', 0, 10, 1]]);
    const r = await load(id, [
      ['a', '5', '20', '1'], // overlaps s: not written
      ['a', '20', '30', '1'], // then not a repeat: written
    ]);
    assert.deepEqual([r.inserted, r.invalid], [1, 1], JSON.stringify(r));
    assert.deepEqual(
      r.errors.map((e: any) => e.row),
      [0],
    );
    assert.deepEqual(await rangesOf(id), ['a:20..30', 's:0..10']);
  });

  test('join fields: a stored range moved by the load is free for other rows; a repeat overlaps nothing', async () => {
    for (const options of [{ detectJoinFields: true }, { joinFields: ['name'] }]) {
      const id = await rangeTable([
        ['z', 0, 10, 1],
        ['y', 20, 30, 1],
      ]);
      const r = await load(
        id,
        [
          ['n', '0', '5', '3'], // takes the place z leaves (z moved by row 1)
          ['z', '100', '110', '1'], // an update of z, no duplicate
          ['z', '200', '210', '1'], // repeats the join fields: not written
          ['w', '205', '215', '2'], // overlaps only row 2, never written
          ['v', '25', '40', '2'], // overlaps the stored y
        ],
        options,
      );
      assert.deepEqual([r.inserted, r.updated, r.invalid], [2, 1, 2], JSON.stringify(r));
      assert.deepEqual(
        r.errors.map((e: any) => e.row),
        [2, 4],
      );
      assert.match(r.errors[0].message, /repeats the join fields/);
      assert.match(r.errors[1].message, /overlaps the stored range \[20, 30\) of y/);
      assert.deepEqual(await rangesOf(id), ['n:0..5', 'w:205..215', 'y:20..30', 'z:100..110']);
    }
  });

  test('join fields: a bound the header leaves out is the stored one; an empty range is its row error', async () => {
    const id = await rangeTable([['z', 0, 10, 1]]);
    const r = await load(id, [['z', '20']], { joinFields: ['name'] }, ['name', 'lowerBound']);
    assert.deepEqual([r.updated, r.invalid], [0, 1], JSON.stringify(r));
    assert.equal(r.errors[0].field, 'lowerBound');
    assert.match(r.errors[0].message, /\[20, 10\) of z is empty/);
    assert.deepEqual(await rangesOf(id), ['z:0..10']);
  });

  test('a file load: a row refused for a stored key overlaps nothing', async () => {
    const id = await rangeTable([['z', 0, 10, 1]]);
    const res = assertOk(
      await send(h, `/loaddata.file/LTV?tableId=${id}`, {
        who: admin,
        body: form(
          {},
          {
            field: 'fileName',
            name: 'ranges.csv',
            data: 'name,lowerBound,upperBound,value\nz,1000,1100,1\nw,1050,1150,2\na,100,200,1\na,300,400,1\nb,350,450,2\n',
          },
        ),
      }),
    )[0];
    assert.deepEqual(
      [res.loadedRecords, res.invalidRecords, res.totalRecords],
      [3, 2, 5],
      JSON.stringify(res),
    );
    assert.deepEqual(await rangesOf(id), ['a:100..200', 'b:350..450', 'w:1050..1150', 'z:0..10']);
  });

  test('update: an invalid valueType is "must be one of" whether or not the table holds values', async () => {
    const empty = await rangeTable();
    const full = await rangeTable([['z', 0, 10, 1]]);
    for (const id of [empty, full]) {
      const [t] = okData(await api(`${M}.fetch`, { data: { id } }));
      const r = await api(`${M}.update`, {
        data: { typedId: `${id}.LT`, valueType: 'int' },
        oldValues: { version: t.version },
      });
      expectError(r, 400, -4, 'valueType');
      assert.match(r.text, /must be one of STRING, REAL, INT, DATE/);
      const [after] = okData(await api(`${M}.fetch`, { data: { id } }));
      assert.deepEqual([after.valueType, after.version], ['REAL', t.version]);
    }
    // A valid change of a table holding values is still refused.
    const [t] = okData(await api(`${M}.fetch`, { data: { id: full } }));
    const r = await api(`${M}.update`, {
      data: { typedId: `${full}.LT`, valueType: 'INT' },
      oldValues: { version: t.version },
    });
    expectError(r, 400, -4, 'valueType');
    assert.match(r.text, /cannot be changed while the table holds values/);
  });
});
