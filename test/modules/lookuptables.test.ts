// The lookup table manager over real HTTP on both databases: tables (add, fetch, update with
// versions, delete, copy, findref), the values of every kind (SIMPLE and its typed keys, RANGE,
// MATRIX..MATRIX6, JSON) through add/update/integrate/delete/batch delete/massedit/resetcolumn,
// typed validation, overlapping ranges, the XLSX export read back, bulk loads (100,000 values with
// per-row errors), permissions, 401, partition isolation, and the general operations refused for value
// types. Look-ups from logics in every kind: test/modules/formulas-functions.test.ts.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import ExcelJS from 'exceljs';
import { startHarness, type CallOptions, type Harness, type Reply } from '../helpers/app.ts';
import { keyCountOf, TABLE_KINDS } from '../../src/engine/registry-lookup.ts';
import { okData, expectError } from '../helpers/envelope.ts';
import { adv } from '../helpers/criteria.ts';
import { sheetName } from '../../src/modules/lookuptables/export.ts';

interface Client {
  (path: string, body?: unknown): Promise<Reply>;
}

function clientOf(h: Harness, token: string): Client {
  return (path, body) => {
    const opts: CallOptions = {
      headers: { 'X-Ratecard-jwt': token },
      ...(body === undefined ? {} : { body }),
    };
    return h.call(path, opts);
  };
}

const M = '/lookuptablemanager';

/** Creates a table and answers its id. */
async function newTable(api: Client, uniqueName: string, type: string, valueType?: string): Promise<number> {
  const [t] = okData(
    await api(`${M}.add`, {
      data: { uniqueName, label: uniqueName, type, ...(valueType ? { valueType } : {}) },
    }),
  );
  return t.id as number;
}

describe('lookup tables', () => {
  let h: Harness;
  let api: Client;
  before(async () => {
    h = await startHarness({ env: { MAX_PAGE_SIZE: '50' } });
    api = clientOf(h, (await h.login()).token);
  });
  after(() => h.close());

  test('add answers the table with its numeric id; numberOfKeyFields follows the type', async () => {
    const [t] = okData(
      await api(`${M}.add`, {
        data: {
          uniqueName: 'Discounts',
          label: 'Discounts',
          type: 'SIMPLE',
          validAfter: '2026-01-01',
          formatType: 'PERCENT',
        },
      }),
    );
    assert.equal(typeof t.id, 'number');
    assert.equal(t.typedId, `${t.id}.LT`);
    assert.equal(t.valueType, 'STRING');
    assert.equal(t.status, 'ACTIVE');
    assert.equal(t.numberOfKeyFields, 1);
    assert.equal(t.version, 0);
    for (const kind of TABLE_KINDS) {
      const [k] = okData(await api(`${M}.add`, { data: { uniqueName: `kind-${kind}`, type: kind } }));
      assert.equal(k.numberOfKeyFields, keyCountOf(kind), kind);
    }
    expectError(
      await api(`${M}.add`, { data: { uniqueName: 'Discounts', type: 'SIMPLE' } }),
      409,
      -1,
      'uniqueName',
    );
    expectError(await api(`${M}.add`, { data: { uniqueName: 'bad-kind', type: 'CUBE' } }), 400, -4, 'type');
    expectError(
      await api(`${M}.add`, { data: { uniqueName: 'bad-vt', type: 'SIMPLE', valueType: 'MONEY' } }),
      400,
      -4,
      'valueType',
    );
    expectError(await api(`${M}.add`, { data: { label: 'no name', type: 'SIMPLE' } }), 400, -4, 'uniqueName');
    expectError(await api(`${M}.add`, { data: { uniqueName: 'no-type' } }), 400, -4, 'type');
    expectError(
      await api(`${M}.add`, { data: { uniqueName: 'x', type: 'SIMPLE', colour: 1 } }),
      400,
      -4,
      'colour',
    );
  });

  test('fetch lists tables with filter, sort and paging', async () => {
    for (const n of ['list-a', 'list-b', 'list-c']) await newTable(api, n, 'MATRIX');
    const r = await api(`${M}.fetch`, {
      data: { uniqueName: 'list-' },
      textMatchStyle: 'startsWith',
      sortBy: '-uniqueName',
      startRow: 1,
      endRow: 3,
    });
    assert.deepEqual(
      okData(r).map((t) => t.uniqueName),
      ['list-b', 'list-a'],
    );
    assert.equal(r.body.response.totalRows, 3);
    const all = okData(await api(`${M}.fetch`));
    assert.ok(all.some((t) => t.uniqueName === 'list-c'));
    expectError(await api(`${M}.fetch`, { data: { colour: 'x' } }), 400, -4, 'colour');
  });

  test('update is version-checked; the kind never changes, the value type only while empty', async () => {
    const id = await newTable(api, 'upd', 'SIMPLE');
    const [u] = okData(
      await api(`${M}.update`, {
        data: { typedId: `${id}.LT`, label: 'Renamed' },
        oldValues: { version: 0 },
      }),
    );
    assert.equal(u.label, 'Renamed');
    assert.equal(u.version, 1);
    expectError(
      await api(`${M}.update`, { data: { typedId: `${id}.LT`, label: 'Stale' }, oldValues: { version: 0 } }),
      409,
      -1,
    );
    expectError(
      await api(`${M}.update`, { data: { typedId: `${id}.LT`, label: 'No version' } }),
      400,
      -4,
      'oldValues.version',
    );
    expectError(
      await api(`${M}.update`, { data: { id, type: 'RANGE' }, oldValues: { version: 1 } }),
      400,
      -4,
      'type',
    );
    // An empty table may change its value type; one with values may not.
    const [v] = okData(
      await api(`${M}.update`, { data: { uniqueName: 'upd', valueType: 'INT' }, oldValues: { version: 1 } }),
    );
    assert.equal(v.valueType, 'INT');
    okData(await api(`${M}.add/${id}`, { data: { name: 'k', value: 7 } }));
    expectError(
      await api(`${M}.update`, { data: { id, valueType: 'STRING' }, oldValues: { version: 2 } }),
      400,
      -4,
      'valueType',
    );
    expectError(
      await api(`${M}.update`, { data: { typedId: '999999.LT', label: 'x' }, oldValues: { version: 0 } }),
      404,
      -1,
    );
  });

  test('a change of the value type racing writes of values: the table never holds a value its type refuses', async () => {
    // Writes of values lock the table's row FOR KEY SHARE before they check values by its type, the
    // change locks it FOR UPDATE before it looks for values: one of them waits for the other.
    // (PGlite runs one transaction at a time, but the table was read outside the write's one.)
    for (let round = 0; round < 20; round++) {
      const id = await newTable(api, `retype-race-${round}`, 'SIMPLE');
      const retype = () =>
        api(`${M}.update`, { data: { typedId: `${id}.LT`, valueType: 'INT' }, oldValues: { version: 0 } });
      const writes = [
        () => api(`${M}.add/${id}`, { data: { name: 'a', value: 'abc' } }),
        () => api(`${M}.integrate/${id}`, { data: { name: 'b', value: 'def' } }),
        () =>
          api(`${M}.loaddata/LTV?tableId=${id}`, {
            data: { header: ['name', 'value'], data: [['c', 'ghi']] },
          }),
        () =>
          api(`${M}.massedit/${id}`, {
            filterCriteria: {},
            massEditRecords: [{ fieldName: 'value', massEditOperator: '=', fieldValue: 'jkl' }],
          }),
      ];
      // Sent together, the change among the writes at another place each round.
      const at = round % (writes.length + 1);
      const answers = await Promise.all(
        [...writes.slice(0, at), retype, ...writes.slice(at)].map((send) => send()),
      );
      const [changed] = answers.splice(at, 1);
      // Refused by INT (-4), or a load that found the type changed under it (409).
      for (const r of answers) if (r.status !== 200) assert.ok([400, 409].includes(r.status), r.text);
      const stored = await h.db.query<{ valueType: string; value: string | null }>(
        `SELECT t.value_type AS "valueType", v.value FROM lookup_tables t
           LEFT JOIN lookup_values v ON v.partition_id = t.partition_id AND v.table_ref = t.ref
          WHERE t.partition_id = $1 AND t.id = $2`,
        [h.partitionId, id],
      );
      const values = stored.rows.flatMap((r) => (r.value === null ? [] : [r.value]));
      if (changed!.status === 200) {
        assert.equal(stored.rows[0]!.valueType, 'INT');
        assert.deepEqual(values, [], `round ${round}: an INT table holds ${JSON.stringify(values)}`);
      } else {
        expectError(changed!, 400, -4, 'valueType');
        assert.equal(stored.rows[0]!.valueType, 'STRING');
        assert.ok(values.length > 0, `round ${round}: refused while the table held no value`);
      }
    }
  });

  test('delete removes the table and its values', async () => {
    const id = await newTable(api, 'gone', 'MATRIX2');
    okData(
      await api(`${M}.add/${id}`, [{ data: { key1: 'a', key2: 'b' } }, { data: { key1: 'a', key2: 'c' } }]),
    );
    const [d] = okData(await api(`${M}.delete`, { data: { typedId: `${id}.LT` } }));
    assert.equal(d.uniqueName, 'gone');
    const left = await h.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM lookup_matrix_values WHERE partition_id = $1 AND lookup_table_id = $2',
      [h.partitionId, id],
    );
    assert.equal(left.rows[0]!.n, 0);
    expectError(await api(`${M}.fetch/${id}`), 404, -1);
    expectError(await api(`${M}.delete`, { data: { typedId: `${id}.LT` } }), 404, -1);
  });

  test("delete checks a value's and a table's oldValues.version when given: a stale one deletes nothing", async () => {
    const id = await newTable(api, 'del-version', 'SIMPLE');
    okData(
      await api(`${M}.add/${id}`, [
        { data: { name: 'dv', value: '1' } },
        { data: { name: 'dw', value: '2' } },
      ]),
    );
    okData(await api(`${M}.update/${id}`, { data: { name: 'dv', value: '1b' }, oldValues: { version: 0 } }));
    // dv is at version 1, dw at 0.
    expectError(
      await api(`${M}.delete/${id}`, { data: { name: 'dv' }, oldValues: { version: 0 } }),
      409,
      -1,
      'oldValues.version',
    );
    expectError(
      await api(`${M}.delete/${id}`, [
        { data: { name: 'dw' }, oldValues: { version: 0 } },
        { data: { name: 'dv' }, oldValues: { version: 5 } },
      ]),
      409,
      -1,
      '1.oldValues.version',
    );
    expectError(
      await api(`${M}.delete/${id}`, { data: { name: 'dv' }, oldValues: { version: 'abc' } }),
      400,
      -4,
      'oldValues.version',
    );
    assert.deepEqual(
      okData(await api(`${M}.fetch/${id}`, { sortBy: 'name' })).map((v) => [v.name, v.version]),
      [
        ['dv', 1],
        ['dw', 0],
      ],
      'nothing deleted',
    );
    const gone = okData(
      await api(`${M}.delete/${id}`, [
        { data: { name: 'dw' }, oldValues: { version: 0 } },
        { data: { name: 'dv' }, oldValues: { version: 1 } },
      ]),
    );
    assert.deepEqual(
      gone.map((v) => v.name),
      ['dw', 'dv'],
    );

    const table = await newTable(api, 'del-version-table', 'SIMPLE');
    okData(
      await api(`${M}.update`, {
        data: { uniqueName: 'del-version-table', label: 'v1' },
        oldValues: { version: 0 },
      }),
    );
    expectError(
      await api(`${M}.delete`, { data: { uniqueName: 'del-version-table' }, oldValues: { version: 0 } }),
      409,
      -1,
      'oldValues.version',
    );
    expectError(
      await api(`${M}.delete`, { data: { typedId: `${table}.LT` }, oldValues: { version: 'abc' } }),
      400,
      -4,
      'oldValues.version',
    );
    assert.deepEqual(okData(await api(`${M}.fetch/${table}`)), [], 'the table is still there');
    const [t] = okData(
      await api(`${M}.delete`, { data: { uniqueName: 'del-version-table' }, oldValues: { version: 1 } }),
    );
    assert.equal(t.id, table);
    expectError(await api(`${M}.fetch/${table}`), 404, -1);
  });

  test("a value's lookupTableId or tableId names the path's table: another one is a -4 naming it", async () => {
    const one = await newTable(api, 'own-1', 'SIMPLE');
    const two = await newTable(api, 'own-2', 'SIMPLE');
    expectError(
      await api(`${M}.add/${one}`, { data: { name: 'i', value: 'I', lookupTableId: two } }),
      400,
      -4,
      'lookupTableId',
    );
    expectError(
      await api(`${M}.add/${one}`, [
        { data: { name: 'j', value: 'J' } },
        { data: { name: 'i', value: 'I', tableId: String(two) } },
      ]),
      400,
      -4,
      '1.tableId',
    );
    expectError(
      await api(`${M}.integrate/${one}`, { data: { name: 'i', value: 'I', tableId: two } }),
      400,
      -4,
      'tableId',
    );
    expectError(
      await api(`${M}.add/${one}`, { data: { name: 'i', value: 'I', lookupTableId: 'abc' } }),
      400,
      -4,
      'lookupTableId',
    );
    // The path's own id, as a number or as text, is no contradiction.
    const [i] = okData(
      await api(`${M}.add/${one}`, {
        data: { name: 'i', value: 'I', lookupTableId: one, tableId: String(one) },
      }),
    );
    expectError(
      await api(`${M}.update/${one}`, { data: { typedId: i.typedId, value: 'x', lookupTableId: two } }),
      400,
      -4,
      'lookupTableId',
    );
    expectError(
      await api(`${M}.delete/${one}`, { data: { typedId: i.typedId, tableId: two } }),
      400,
      -4,
      'tableId',
    );
    // A fetched value sent back (it carries both names of its table) updates it.
    const [echo] = okData(await api(`${M}.fetch/${one}`));
    const [u] = okData(await api(`${M}.update/${one}`, { data: { ...echo, value: 'II' } }));
    assert.equal(u.value, 'II');
    assert.deepEqual(
      okData(await api(`${M}.fetch/${one}`)).map((v) => [v.name, v.value]),
      [['i', 'II']],
    );
    assert.deepEqual(okData(await api(`${M}.fetch/${two}`)), []);
  });

  test('SIMPLE values: add, fetch, update (answers the updated values), integrate, delete', async () => {
    const id = await newTable(api, 'simple', 'SIMPLE');
    const [a] = okData(await api(`${M}.add/${id}`, { data: { name: 'red', value: 'Rot' } }));
    assert.equal(a.typedId, `${a.id}.LTV`);
    assert.equal(a.lookupTableId, id);
    // conventions.md: "Every value carries `lookupTableId`/`tableId`": both names, one value.
    assert.equal(a.tableId, id);
    assert.equal(a.value, 'Rot');
    assert.equal(a.lowerBound, undefined, 'a SIMPLE value has no bounds');
    expectError(await api(`${M}.add/${id}`, { data: { name: 'red', value: 'again' } }), 409, -1, 'name');
    expectError(await api(`${M}.add/${id}`, { data: { value: 'no name' } }), 400, -4, 'name');
    expectError(await api(`${M}.add/${id}`, { data: { name: 'b', lowerBound: 1 } }), 400, -4, 'lowerBound');
    expectError(
      await api(`${M}.add/${id}`, { data: { name: 'x', attribute1: 'no' } }),
      400,
      -4,
      'attribute1',
    );

    const updated = okData(
      await api(`${M}.update/${id}`, [
        { data: { typedId: a.typedId, value: 'Rouge' }, oldValues: { version: 0 } },
        { data: { name: 'red', value: 'Rosso' } },
      ]),
    );
    assert.deepEqual(
      updated.map((u) => [u.value, u.version]),
      [
        ['Rouge', 1],
        ['Rosso', 2],
      ],
    );
    expectError(
      await api(`${M}.update/${id}`, { data: { typedId: a.typedId, value: 'x' }, oldValues: { version: 0 } }),
      409,
      -1,
    );
    expectError(await api(`${M}.update/${id}`, { data: { name: 'nobody', value: 'x' } }), 404, -1);

    const integrated = okData(
      await api(`${M}.integrate/${id}`, [
        { data: { name: 'red', value: 'Red' } },
        { data: { name: 'blue', value: 'Blau' } },
      ]),
    );
    assert.deepEqual(
      integrated.map((v) => [v.name, v.value]),
      [
        ['red', 'Red'],
        ['blue', 'Blau'],
      ],
    );
    const rows = okData(await api(`${M}.fetch/${id}`, { sortBy: 'name' }));
    assert.deepEqual(
      rows.map((v) => [v.name, v.value]),
      [
        ['blue', 'Blau'],
        ['red', 'Red'],
      ],
    );
    const [del] = okData(await api(`${M}.delete/${id}`, { data: { typedId: a.typedId } }));
    assert.equal(del.name, 'red');
    expectError(await api(`${M}.delete/${id}`, { data: { typedId: a.typedId } }), 404, -1);
    assert.equal(okData(await api(`${M}.fetch/${id}`)).length, 1);
  });

  test('values of one table are invisible to another, even by typedId', async () => {
    const one = await newTable(api, 'scope-1', 'SIMPLE');
    const two = await newTable(api, 'scope-2', 'SIMPLE');
    const [v] = okData(await api(`${M}.add/${one}`, { data: { name: 'same', value: '1' } }));
    okData(await api(`${M}.add/${two}`, { data: { name: 'same', value: '2' } }));
    assert.deepEqual(
      okData(await api(`${M}.fetch/${two}`)).map((r) => r.value),
      ['2'],
    );
    expectError(await api(`${M}.delete/${two}`, { data: { typedId: v.typedId } }), 404, -1);
    expectError(await api(`${M}.update/${two}`, { data: { typedId: v.typedId, value: 'x' } }), 404, -1);
    assert.equal(okData(await api(`${M}.fetch/${one}`))[0].value, '1');
  });

  test('values are typed by the value type: REAL, INT and DATE tables validate, compare and sort', async () => {
    const real = await newTable(api, 'real', 'SIMPLE', 'REAL');
    expectError(await api(`${M}.add/${real}`, { data: { name: 'x', value: 'abc' } }), 400, -4, 'value');
    okData(
      await api(`${M}.add/${real}`, [
        { data: { name: 'nine', value: '9' } },
        { data: { name: 'ten', value: 10.5 } },
        { data: { name: 'hundred', value: '1e2' } },
      ]),
    );
    const below = okData(
      await api(`${M}.fetch/${real}`, {
        data: adv({ fieldName: 'value', operator: 'lessThan', value: 50 }),
        sortBy: '-value',
      }),
    );
    assert.deepEqual(
      below.map((v) => [v.name, v.value]),
      [
        ['ten', 10.5],
        ['nine', 9],
      ],
    );
    const int = await newTable(api, 'int', 'SIMPLE', 'INT');
    expectError(await api(`${M}.add/${int}`, { data: { name: 'x', value: 1.5 } }), 400, -4, 'value');
    assert.equal(okData(await api(`${M}.add/${int}`, { data: { name: 'x', value: '42' } }))[0].value, 42);
    const date = await newTable(api, 'date', 'SIMPLE', 'DATE');
    expectError(
      await api(`${M}.add/${date}`, { data: { name: 'x', value: '2026-02-30' } }),
      400,
      -4,
      'value',
    );
    assert.equal(
      okData(await api(`${M}.add/${date}`, { data: { name: 'x', value: '2026-02-28' } }))[0].value,
      '2026-02-28',
    );
    const str = await newTable(api, 'string', 'SIMPLE');
    assert.equal(okData(await api(`${M}.add/${str}`, { data: { name: 'x', value: 12 } }))[0].value, '12');
  });

  test('SIMPLE_*_KEY tables type their key', async () => {
    const intKey = await newTable(api, 'int-key', 'SIMPLE_INT_KEY', 'REAL');
    expectError(await api(`${M}.add/${intKey}`, { data: { name: 'abc', value: 1 } }), 400, -4, 'name');
    okData(
      await api(
        `${M}.add/${intKey}`,
        [10, 9, 100].map((n) => ({ data: { name: n, value: n / 10 } })),
      ),
    );
    assert.deepEqual(
      okData(await api(`${M}.fetch/${intKey}`, { sortBy: 'name' })).map((v) => v.name),
      [9, 10, 100],
    );
    const realKey = await newTable(api, 'real-key', 'SIMPLE_REAL_KEY');
    expectError(await api(`${M}.add/${realKey}`, { data: { name: 'x' } }), 400, -4, 'name');
    okData(await api(`${M}.add/${realKey}`, { data: { name: '2.5', value: 'two and a half' } }));
    // One key in any of its forms: 2.50, 2.500 and 7.0 are duplicates of 2.5 and 7 (409), in one
    // batch too; integrate and a load update the row instead of adding one.
    expectError(
      await api(`${M}.add/${realKey}`, { data: { name: '2.50', value: 'again' } }),
      409,
      -1,
      'name',
    );
    expectError(
      await api(`${M}.add/${realKey}`, [
        { data: { name: '7', value: 'a' } },
        { data: { name: '7.0', value: 'b' } },
      ]),
      409,
      -1,
    );
    okData(await api(`${M}.integrate/${realKey}`, [{ data: { name: '2.500', value: 'integrated' } }]));
    const [loaded] = okData(
      await api(`${M}.loaddata/LTV?tableId=${realKey}`, {
        data: {
          header: ['name', 'value'],
          data: [['2.5000', 'loaded']],
          options: { detectJoinFields: true },
        },
      }),
    );
    assert.deepEqual([loaded.inserted, loaded.updated, loaded.invalid], [0, 1, 0], JSON.stringify(loaded));
    assert.deepEqual(okData(await api(`${M}.fetch/${realKey}`, { valueFields: ['name', 'value'] })), [
      [2.5, 'loaded'],
    ]);
    // update and delete name it in any form too.
    const [renamed] = okData(
      await api(`${M}.update/${realKey}`, { data: { name: '2.50', value: 'updated' } }),
    );
    assert.deepEqual([renamed.name, renamed.value], [2.5, 'updated']);
    okData(await api(`${M}.delete/${realKey}`, { data: { name: '2.500' } }));
    assert.equal(okData(await api(`${M}.fetch/${realKey}`, {})).length, 0);
    const dateKey = await newTable(api, 'date-key', 'SIMPLE_DATE_KEY');
    expectError(await api(`${M}.add/${dateKey}`, { data: { name: '31.12.2026' } }), 400, -4, 'name');
    okData(await api(`${M}.add/${dateKey}`, { data: { name: '2026-12-31', value: 'new year eve' } }));
  });

  test('RANGE values: bounds in order, ranges never overlap (409 naming the bound)', async () => {
    const id = await newTable(api, 'ranges', 'RANGE', 'REAL');
    okData(
      await api(`${M}.add/${id}`, [
        { data: { name: 'low', upperBound: 10, value: 0.1 } },
        { data: { name: 'mid', lowerBound: 10, upperBound: 100, value: 0.2 } },
      ]),
    );
    expectError(
      await api(`${M}.add/${id}`, { data: { name: 'x', lowerBound: 50, upperBound: 40, value: 1 } }),
      400,
      -4,
      'upperBound',
    );
    const overlap = await api(`${M}.add/${id}`, {
      data: { name: 'clash', lowerBound: 99, upperBound: 200, value: 1 },
    });
    expectError(overlap, 409, -1, 'lowerBound');
    assert.match(overlap.body.response.data, /\[99, 200\) of clash overlaps the range \[10, 100\) of mid/);
    expectError(
      await api(`${M}.add/${id}`, { data: { name: 'under', lowerBound: -5, upperBound: 5, value: 1 } }),
      409,
      -1,
    );
    okData(await api(`${M}.add/${id}`, { data: { name: 'high', lowerBound: 100, value: 0.3 } }));
    // Bounds are compared exactly: beyond a double's precision and range they are still in order.
    const exact = await newTable(api, 'ranges-exact', 'RANGE', 'REAL');
    okData(
      await api(`${M}.add/${exact}`, [
        { data: { name: 'p', lowerBound: '9007199254740992', upperBound: '9007199254740993', value: 1 } },
        {
          data: {
            name: 'q',
            lowerBound: '0.10000000000000000001',
            upperBound: '0.10000000000000000002',
            value: 1,
          },
        },
        { data: { name: 'r', lowerBound: '1e400', upperBound: '1e401', value: 1 } },
      ]),
    );
    expectError(
      await api(`${M}.add/${exact}`, {
        data: { name: 's', lowerBound: '1e401', upperBound: '1e400', value: 1 },
      }),
      400,
      -4,
      'upperBound',
    );
    // In a batch, the element is named too (as a value refused there is: `0.lowerBound`); here the
    // first one meets the range from -infinity.
    expectError(
      await api(`${M}.add/${id}`, [
        { data: { name: 'g', lowerBound: -60, upperBound: -50, value: 1 } },
        { data: { name: 'h', lowerBound: -55, upperBound: -52, value: 1 } },
      ]),
      409,
      -1,
      '0.lowerBound',
    );
    assert.equal(okData(await api(`${M}.fetch/${id}`, { data: { name: 'g' } })).length, 0, 'nothing added');
    // An update that would overlap is refused by the database's check, named by the bound at fault.
    const [mid] = okData(await api(`${M}.fetch/${id}`, { data: { name: 'mid' } }));
    expectError(
      await api(`${M}.update/${id}`, { data: { typedId: mid.typedId, upperBound: 150 } }),
      409,
      -1,
      'upperBound',
    );
    expectError(
      await api(`${M}.update/${id}`, { data: { typedId: mid.typedId, lowerBound: 200 } }),
      400,
      -4,
      'upperBound',
    );
    expectError(
      await api(`${M}.integrate/${id}`, { data: { name: 'mid', lowerBound: 5 } }),
      409,
      -1,
      'lowerBound',
    );
    // A mass edit that shifts every range keeps them disjoint: judged on the result, not row by row.
    const [{ updatedRecords }] = okData(
      await api(`${M}.massedit/${id}`, {
        filterCriteria: { name: 'mid' },
        massEditRecords: [
          { fieldName: 'lowerBound', massEditOperator: '+', fieldValue: 0 },
          { fieldName: 'value', massEditOperator: '*', fieldValue: 10 },
        ],
      }),
    );
    assert.equal(updatedRecords, 1);
    // Criteria are required, as by /massedit ({} edits every value): without them nothing is edited.
    for (const filterCriteria of [undefined, null]) {
      expectError(
        await api(`${M}.massedit/${id}`, {
          filterCriteria,
          massEditRecords: [{ fieldName: 'value', massEditOperator: '=', fieldValue: 0 }],
        }),
        400,
        -4,
        'filterCriteria',
      );
    }
    expectError(
      await api(`${M}.massedit/${id}`, {
        filterCriteria: { name: 'low' },
        massEditRecords: [{ fieldName: 'upperBound', massEditOperator: '+', fieldValue: 1 }],
      }),
      409,
      -1,
      'upperBound',
    );
    const rows = okData(await api(`${M}.fetch/${id}`, { sortBy: 'lowerBound' }));
    assert.deepEqual(
      rows.map((v) => [v.name, v.lowerBound, v.upperBound, v.value]),
      [
        ['low', null, '10', 0.1],
        ['mid', '10', '100', 2],
        ['high', '100', null, 0.3],
      ],
    );
  });

  test('MATRIX values: name and typed attributes; MATRIX2..6: key1..keyN', async () => {
    const m = await newTable(api, 'matrix', 'MATRIX', 'REAL');
    const [row] = okData(
      await api(`${M}.add/${m}`, { data: { name: 'A', attribute1: '1.5', attribute2: 2 } }),
    );
    assert.equal(row.typedId, `${row.id}.MLTV`);
    assert.deepEqual([row.attribute1, row.attribute2, row.attribute3], [1.5, 2, null]);
    assert.equal(row.key1, undefined);
    expectError(
      await api(`${M}.add/${m}`, { data: { name: 'B', attribute1: 'abc' } }),
      400,
      -4,
      'attribute1',
    );
    expectError(await api(`${M}.add/${m}`, { data: { name: 'A' } }), 409, -1, 'name');
    expectError(await api(`${M}.add/${m}`, { data: { name: 'B', attribute31: 1 } }), 400, -4, 'attribute31');

    for (const n of [2, 3, 4, 5, 6]) {
      const id = await newTable(api, `matrix${n}`, `MATRIX${n}`);
      const keys = Object.fromEntries(Array.from({ length: n }, (_, i) => [`key${i + 1}`, `k${i + 1}`]));
      const [v] = okData(await api(`${M}.add/${id}`, { data: { ...keys, attribute30: 'last' } }));
      assert.equal(v.typedId, `${v.id}.MLTV${n}`);
      assert.equal(v.name, undefined);
      assert.equal(v[`key${n + 1}`], undefined);
      expectError(await api(`${M}.add/${id}`, { data: { ...keys } }), 409, -1, `key${n}`);
      expectError(
        await api(`${M}.add/${id}`, { data: { ...keys, [`key${n}`]: undefined } }),
        400,
        -4,
        `key${n}`,
      );
      // Same leading keys, another last key: a different value.
      okData(await api(`${M}.add/${id}`, { data: { ...keys, [`key${n}`]: 'other' } }));
    }
    const m2 = await newTable(api, 'matrix2-int', 'MATRIX2');
    okData(await api(`${M}.integrate/${m2}`, { data: { key1: 'a', key2: 'b', attribute1: 'one' } }));
    const [again] = okData(
      await api(`${M}.integrate/${m2}`, { data: { key1: 'a', key2: 'b', attribute2: 'two' } }),
    );
    assert.deepEqual([again.attribute1, again.attribute2, again.version], ['one', 'two', 1]);
    assert.equal(okData(await api(`${M}.fetch/${m2}`)).length, 1);
  });

  test('JSON values: name and any JSON value', async () => {
    const id = await newTable(api, 'json', 'JSON');
    const value = { tiers: [1, 2, 3], label: 'x', nested: { ok: true } };
    const [v] = okData(await api(`${M}.add/${id}`, { data: { name: 'cfg', value } }));
    assert.equal(v.typedId, `${v.id}.JLTV`);
    assert.deepEqual(v.value, value);
    okData(await api(`${M}.integrate/${id}`, { data: { name: 'cfg', value: [1, 'two'] } }));
    assert.deepEqual(okData(await api(`${M}.fetch/${id}`))[0].value, [1, 'two']);
    // A number past a double (JSON.parse makes it Infinity, which JSON would write as null) and text
    // no jsonb holds are refused (-4 naming the value), not stored changed; nothing is written.
    const { token } = await h.login();
    const raw = (path: string, text: string) =>
      h.call(path, { raw: text, headers: { 'x-ratecard-jwt': token } });
    for (const value of ['1e400', '{"a":[1,-1e999]}', '"a\\ud800"', '{"\\ud800":1}', '["\\u0000"]']) {
      expectError(await raw(`${M}.add/${id}`, `{"data":{"name":"big","value":${value}}}`), 400, -4, 'value');
      expectError(
        await raw(`${M}.integrate/${id}`, `{"data":{"name":"cfg","value":${value}}}`),
        400,
        -4,
        'value',
      );
    }
    // In a bulk load such a value is its row's error; the other rows are written.
    const [load] = okData(
      await raw(
        `${M}.loaddata/JLTV?tableId=${id}`,
        '{"data":{"header":["name","value"],"data":[["li",{"x":1e400}],["ok",{"x":1}]]}}',
      ),
    );
    assert.deepEqual([load.inserted, load.invalid], [1, 1], JSON.stringify(load));
    assert.deepEqual(
      okData(await api(`${M}.fetch/${id}`, { sortBy: 'name' })).map((r: any) => [r.name, r.value]),
      [
        ['cfg', [1, 'two']],
        ['ok', { x: 1 }],
      ],
    );
    expectError(
      await api(`${M}.massedit/${id}`, {
        filterCriteria: {},
        massEditRecords: [{ fieldName: 'value', massEditOperator: 'null' }],
      }),
      400,
      -4,
    );
  });

  test('JSON2 values: key1, key2 and any JSON value, with the operations of JSON values', async () => {
    const id = await newTable(api, 'json2', 'JSON2');
    const [t] = okData(await api(`${M}.fetch`, { data: { uniqueName: 'json2' } }));
    assert.deepEqual([t.type, t.numberOfKeyFields], ['JSON2', 2]);
    const value = { tiers: [1, 2, 3], label: 'x', nested: { ok: true } };
    const [v] = okData(await api(`${M}.add/${id}`, { data: { key1: 'EU', key2: 'gold', value } }));
    assert.equal(v.typedId, `${v.id}.JLTV2`);
    assert.deepEqual([v.key1, v.key2, v.lookupTableId, v.tableId, v.version], ['EU', 'gold', id, id, 0]);
    assert.deepEqual(v.value, value);
    assert.equal(v.name, undefined);
    // The same first key with another second key is another value; the same pair is a conflict.
    okData(await api(`${M}.add/${id}`, { data: { key1: 'EU', key2: 'silver', value: 2 } }));
    expectError(await api(`${M}.add/${id}`, { data: { key1: 'EU', key2: 'gold', value: 3 } }), 409, -1);
    expectError(await api(`${M}.add/${id}`, { data: { key1: 'US', value: 3 } }), 400, -4, 'key2');
    // integrate names the key left out too (it named key1 whatever was missing).
    expectError(await api(`${M}.integrate/${id}`, [{ data: { key1: 'US', value: 3 } }]), 400, -4, 'key2');
    expectError(await api(`${M}.add/${id}`, { data: { name: 'cfg', value: 3 } }), 400, -4);
    okData(await api(`${M}.integrate/${id}`, { data: { key1: 'EU', key2: 'gold', value: [1, 'two'] } }));
    const all = okData(await api(`${M}.fetch/${id}`, { sortBy: ['key2'] }));
    assert.deepEqual(
      all.map((r) => [r.key1, r.key2, r.value, r.version]),
      [
        ['EU', 'gold', [1, 'two'], 1],
        ['EU', 'silver', 2, 0],
      ],
    );
    const filtered = okData(
      await api(`${M}.fetch/${id}`, {
        data: adv({ fieldName: 'key2', operator: 'equals', value: 'silver' }),
        valueFields: ['key1', 'key2', 'value'],
      }),
    );
    assert.deepEqual(filtered, [['EU', 'silver', 2]]);
    const [updated] = okData(
      await api(`${M}.update/${id}`, { data: { key1: 'EU', key2: 'silver', value: { s: 1 } } }),
    );
    assert.deepEqual([updated.value, updated.version], [{ s: 1 }, 1]);
    expectError(
      await api(`${M}.massedit/${id}`, {
        filterCriteria: {},
        massEditRecords: [{ fieldName: 'value', massEditOperator: 'null' }],
      }),
      400,
      -4,
    );
    // Bulk load as JLTV2; a load of the wrong kind names the kind to use.
    const [loaded] = okData(
      await api(`${M}.loaddata/JLTV2?tableId=${id}`, {
        data: {
          header: ['key1', 'key2', 'value'],
          data: [
            ['US', 'gold', { a: 1 }],
            ['EU', 'gold', [3]],
          ],
          options: { joinFields: ['key1', 'key2'] },
        },
      }),
    );
    assert.deepEqual([loaded.inserted, loaded.updated, loaded.invalid], [1, 1, 0]);
    const us = okData(await api(`${M}.fetch/${id}`, { data: { key1: 'US' } }));
    assert.deepEqual(us[0].value, { a: 1 });
    expectError(
      await api(`${M}.loaddata/JLTV?tableId=${id}`, { data: { header: ['name'], data: [['x']] } }),
      400,
      -4,
    );
    // Delete one value by its keys, then the rest by filter.
    okData(await api(`${M}.delete/${id}`, { data: { key1: 'US', key2: 'gold' } }));
    okData(await api(`${M}.delete/${id}/batch`, { data: { key1: 'EU' } }));
    assert.equal(okData(await api(`${M}.fetch/${id}`)).length, 0);
  });

  test('fetch values: filter, sort, paging, resultFields and valueFields', async () => {
    const id = await newTable(api, 'paged', 'SIMPLE', 'INT');
    okData(
      await api(
        `${M}.add/${id}`,
        Array.from({ length: 12 }, (_, i) => ({
          data: { name: `n${String(i).padStart(2, '0')}`, value: i },
        })),
      ),
    );
    const r = await api(`${M}.fetch/${id}`, {
      data: adv({ fieldName: 'value', operator: 'greaterOrEqual', value: 3 }),
      sortBy: ['-value'],
      startRow: 2,
      endRow: 5,
      resultFields: ['name', 'value'],
    });
    assert.deepEqual(okData(r), [
      { name: 'n09', value: 9 },
      { name: 'n08', value: 8 },
      { name: 'n07', value: 7 },
    ]);
    assert.deepEqual(
      [r.body.response.startRow, r.body.response.endRow, r.body.response.totalRows],
      [2, 5, 9],
    );
    const arrays = okData(
      await api(`${M}.fetch/${id}`, { data: { name: 'n01' }, valueFields: ['value', 'name'] }),
    );
    assert.deepEqual(arrays, [[1, 'n01']]);
    // tableId, the other name of lookupTableId: a field of output and filters as well.
    assert.deepEqual(
      okData(
        await api(`${M}.fetch/${id}`, {
          data: { name: 'n02', tableId: id },
          valueFields: ['tableId', 'lookupTableId'],
        }),
      ),
      [[id, id]],
    );
    expectError(await api(`${M}.fetch/${id}`, { resultFields: ['colour'] }), 400, -4, 'resultFields');
    expectError(await api(`${M}.fetch/${id}`, { endRow: 500 }), 400, -4, 'endRow');
    expectError(await api(`${M}.fetch/999999`), 404, -1);
    expectError(await api(`${M}.fetch/abc`), 400, -4, 'tableId'); // a path parameter is named as itself
  });

  test('fetch with ?output=xls streams an XLSX workbook of the resultFields', async () => {
    const id = await newTable(api, 'export', 'RANGE', 'REAL');
    // More rows than a page (MAX_PAGE_SIZE 50): the export reads page after page.
    okData(
      await api(
        `${M}.add/${id}`,
        Array.from({ length: 120 }, (_, i) => ({
          data: { name: `r${i}`, lowerBound: i * 10, upperBound: i * 10 + 10, value: i / 2 },
        })),
      ),
    );
    const { token } = await h.login();
    const url = `${h.url}${h.config.basePath}/${h.partition}${M}.fetch/${id}?output=xls`;
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'X-Ratecard-jwt': token, 'content-type': 'application/json' },
      body: JSON.stringify({
        resultFields: ['name', 'lowerBound', 'value'],
        data: adv({ fieldName: 'lowerBound', operator: 'greaterOrEqual', value: 100 }),
        sortBy: 'lowerBound',
      }),
    });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /spreadsheetml/);
    assert.match(res.headers.get('content-disposition') ?? '', /export\.xlsx/);
    const workbook = new ExcelJS.Workbook();
    await workbook.xlsx.load(await res.arrayBuffer());
    const sheet = workbook.worksheets[0]!;
    assert.equal(sheet.name, 'export');
    const rows: unknown[][] = [];
    sheet.eachRow((row) => rows.push((row.values as unknown[]).slice(1)));
    assert.deepEqual(rows[0], ['name', 'lowerBound', 'value']);
    assert.equal(rows.length, 1 + 110);
    assert.deepEqual(rows[1], ['r10', 100, 5]);
    assert.deepEqual(rows.at(-1), ['r119', 1190, 59.5]);
    // A bad filter is still an error envelope, not a broken download.
    const bad = await api(`${M}.fetch/${id}?output=xls`, { resultFields: ['colour'] });
    expectError(bad, 400, -4, 'resultFields');
    expectError(await api(`${M}.fetch/${id}?output=pdf`, {}), 400, -4);
  });

  test('the XLSX export keeps numbers a double cannot hold as their text; any table name is a sheet name', async () => {
    const { token } = await h.login();
    const exported = async (id: number) => {
      const res = await fetch(`${h.url}${h.config.basePath}/${h.partition}${M}.fetch/${id}?output=xls`, {
        method: 'POST',
        headers: { 'X-Ratecard-jwt': token, 'content-type': 'application/json' },
        body: JSON.stringify({ resultFields: ['name', 'value'], sortBy: 'name' }),
      });
      assert.equal(res.status, 200);
      const bytes = await res.arrayBuffer();
      const workbook = new ExcelJS.Workbook();
      await workbook.xlsx.load(bytes);
      const sheet = workbook.worksheets[0]!;
      const rows: unknown[][] = [];
      sheet.eachRow((row) => rows.push((row.values as unknown[]).slice(1)));
      return { name: sheet.name, rows: rows.slice(1), bytes };
    };
    const id = await newTable(api, "'Q3'", 'SIMPLE', 'REAL');
    okData(
      await api(`${M}.add/${id}`, [
        { data: { name: 'a', value: '9007199254740993' } },
        { data: { name: 'b', value: '1e-400' } },
        { data: { name: 'c', value: '0.12345678901234567890123' } },
        { data: { name: 'd', value: '2.50' } },
        { data: { name: 'e', value: '9007199254740992' } },
      ]),
    );
    const q3 = await exported(id);
    assert.equal(q3.name, '_Q3_');
    assert.deepEqual(q3.rows, [
      ['a', '9007199254740993'],
      ['b', '1e-400'],
      ['c', '0.12345678901234567890123'],
      ['d', 2.5],
      ['e', 9007199254740992],
    ]);
    const history = await newTable(api, 'History', 'SIMPLE', 'REAL');
    okData(await api(`${M}.add/${history}`, [{ data: { name: 'x', value: 1 } }]));
    const historySheet = await exported(history);
    assert.deepEqual([historySheet.name, historySheet.rows], ['History_', [['x', 1]]]);
    // 31 UTF-16 units at most, cut between characters: 16 emoji (32 units) keep 15.
    const emoji = await newTable(api, '😀'.repeat(16), 'SIMPLE', 'REAL');
    okData(await api(`${M}.add/${emoji}`, [{ data: { name: 'x', value: 1 } }]));
    assert.equal((await exported(emoji)).name, '😀'.repeat(15));
    assert.equal(sheetName(`${'a'.repeat(30)}😀`), 'a'.repeat(30));
    // A JSON table's values are JSON text, whatever they are: loaded back, each is the same value.
    const json = await newTable(api, 'json-export', 'JSON');
    const values: [string, unknown][] = [
      ['a', 'hello'],
      ['b', '42'],
      ['c', 42],
      ['d', true],
      ['e', { y: 2 }],
      ['f', '{"y":2}'],
    ];
    okData(
      await api(
        `${M}.add/${json}`,
        values.map(([name, value]) => ({ data: { name, value } })),
      ),
    );
    const sheet = await exported(json);
    assert.deepEqual(
      sheet.rows,
      values.map(([name, value]) => [name, JSON.stringify(value)]),
    );
    const copy = await newTable(api, 'json-import', 'JSON');
    const form = new FormData();
    form.append('fileName', new Blob([sheet.bytes]), 'json-export.xlsx');
    const res = await fetch(
      `${h.url}${h.config.basePath}/${h.partition}/loaddata.file/JLTV?tableId=${copy}`,
      {
        method: 'POST',
        headers: { 'X-Ratecard-jwt': token },
        body: form,
      },
    );
    const loaded = ((await res.json()) as { response: { data: any[] } }).response.data[0];
    assert.deepEqual([res.status, loaded.loadedRecords, loaded.invalidRecords], [200, values.length, 0]);
    const back = okData(await api(`${M}.fetch/${copy}`, { sortBy: 'name' }));
    assert.deepEqual(
      back.map((v: any) => [v.name, v.value]),
      values,
    );
  });

  test("a value's history names its table beside its key (values of one name in two tables apart)", async () => {
    const one = await newTable(api, 'hist-one', 'SIMPLE', 'STRING');
    const two = await newTable(api, 'hist-two', 'MATRIX2');
    const [a] = okData(await api(`${M}.add/${one}`, [{ data: { name: 'same', value: 'x' } }]));
    const [b] = okData(
      await api(`${M}.add/${two}`, [{ data: { key1: 'same', key2: 'k', attribute1: 'y' } }]),
    );
    okData(await api(`${M}.update/${one}`, [{ data: { id: a.id, value: 'z' }, oldValues: { version: 0 } }]));
    const rows = async (typeCode: string, businessKey: string) =>
      okData(await api('/history.fetch', { data: { typeCode, businessKey }, sortBy: 'id' })).map((r: any) => [
        r.recordId,
        r.action,
      ]);
    assert.deepEqual(await rows('LTV', `${one}|same`), [
      [a.id, 'ADD'],
      [a.id, 'UPDATE'],
    ]);
    assert.deepEqual(await rows('MLTV2', `${two}|same|k`), [[b.id, 'ADD']]);
    assert.deepEqual(await rows('LTV', 'same'), []);
    // Deleting a table deletes its values with their history: a DELETE row each.
    okData(await api(`${M}.delete`, { data: { typedId: `${one}.LT` } }));
    okData(await api(`${M}.delete`, { data: { uniqueName: 'hist-two' } }));
    assert.deepEqual(await rows('LTV', `${one}|same`), [
      [a.id, 'ADD'],
      [a.id, 'UPDATE'],
      [a.id, 'DELETE'],
    ]);
    assert.deepEqual(await rows('MLTV2', `${two}|same|k`), [
      [b.id, 'ADD'],
      [b.id, 'DELETE'],
    ]);
  });

  test('copy makes a new table with every value, in one transaction', async () => {
    const id = await newTable(api, 'original', 'RANGE', 'INT');
    okData(
      await api(`${M}.add/${id}`, [
        { data: { name: 'a', upperBound: 0, value: 1 } },
        { data: { name: 'b', lowerBound: 0, value: 2 } },
      ]),
    );
    const [copy] = okData(await api(`${M}.copy/${id}`, { data: { uniqueName: 'copied', label: 'Copied' } }));
    assert.notEqual(copy.id, id);
    assert.deepEqual(
      [copy.uniqueName, copy.label, copy.type, copy.valueType, copy.copiedValues],
      ['copied', 'Copied', 'RANGE', 'INT', 2],
    );
    const values = okData(await api(`${M}.fetch/${copy.id}`, { sortBy: 'name' }));
    assert.deepEqual(
      values.map((v) => [v.name, v.lowerBound, v.upperBound, v.value, v.lookupTableId]),
      [
        ['a', null, '0', 1, copy.id],
        ['b', '0', null, 2, copy.id],
      ],
    );
    // The copy is a table of its own: changing it leaves the original alone.
    okData(await api(`${M}.delete/${copy.id}/batch`, { data: { name: 'a' } }));
    assert.equal(okData(await api(`${M}.fetch/${id}`)).length, 2);
    const [kept] = okData(await api(`${M}.copy/${id}`, { data: { uniqueName: 'copied-2' } }));
    assert.equal(kept.label, 'original');
    expectError(await api(`${M}.copy/${id}`, { data: { uniqueName: 'copied' } }), 409, -1, 'uniqueName');
    expectError(await api(`${M}.copy/${id}`, { data: { label: 'no name' } }), 400, -4);
    expectError(await api(`${M}.copy/999999`, { data: { uniqueName: 'x' } }), 404, -1);
    // A name another transaction takes while the copy runs (PostgreSQL: the copy has looked and
    // found it free, then meets the other's row): the same duplicate answer, naming uniqueName.
    if (h.db.kind === 'postgres') {
      let copying: Promise<Reply> | undefined;
      await h.db.transaction(async (tx) => {
        await tx.query(
          `INSERT INTO lookup_tables (partition_id, unique_name, type) VALUES ($1, 'taken-meanwhile', 'SIMPLE')`,
          [h.partitionId],
        );
        copying = api(`${M}.copy/${id}`, { data: { uniqueName: 'taken-meanwhile' } });
        await new Promise((resolve) => setTimeout(resolve, 300));
      });
      expectError(await copying!, 409, -1, 'uniqueName');
    }
  });

  test('batch delete by filter; an invalid clause deletes nothing', async () => {
    const id = await newTable(api, 'batch', 'SIMPLE', 'INT');
    okData(
      await api(
        `${M}.add/${id}`,
        Array.from({ length: 10 }, (_, i) => ({ data: { name: `b${i}`, value: i } })),
      ),
    );
    const [r] = okData(
      await api(`${M}.delete/${id}/batch`, {
        data: adv({ fieldName: 'value', operator: 'lessThan', value: 4 }),
      }),
    );
    assert.equal(r.deletedRecords, 4);
    expectError(
      await api(`${M}.delete/${id}/batch`, {
        data: adv({ fieldName: 'colour', operator: 'equals', value: 1 }),
      }),
      400,
      -4,
      'colour',
    );
    assert.equal(okData(await api(`${M}.fetch/${id}`)).length, 6);
  });

  test('massedit: =, +, -, *, / and null on LTV and MLTV value columns, by filter', async () => {
    const id = await newTable(api, 'arith', 'SIMPLE', 'REAL');
    okData(
      await api(
        `${M}.add/${id}`,
        [1, 2, 3].map((n) => ({ data: { name: `a${n}`, value: n } })),
      ),
    );
    const edit = async (op: string, fieldValue: unknown, filterCriteria?: unknown) =>
      okData(
        await api(`${M}.massedit/${id}`, {
          filterCriteria: filterCriteria ?? {},
          massEditRecords: [{ fieldName: 'value', massEditOperator: op, fieldValue }],
        }),
      )[0].updatedRecords;
    const values = async () =>
      okData(await api(`${M}.fetch/${id}`, { sortBy: 'name' })).map((v) => v.value as number | null);
    assert.equal(await edit('+', 10), 3);
    assert.deepEqual(await values(), [11, 12, 13]);
    assert.equal(await edit('-', 1, { name: 'a1' }), 1);
    assert.equal(await edit('*', 2), 3);
    assert.equal(await edit('/', 4), 3);
    assert.deepEqual(await values(), [5, 6, 6.5]);
    assert.equal(await edit('=', '7.25', adv({ fieldName: 'value', operator: 'greaterThan', value: 6 })), 1);
    assert.deepEqual(await values(), [5, 6, 7.25]);
    expectError(
      await api(`${M}.massedit/${id}`, {
        filterCriteria: {},
        massEditRecords: [{ fieldName: 'value', massEditOperator: '/', fieldValue: 0 }],
      }),
      400,
      -4,
    );
    expectError(
      await api(`${M}.massedit/${id}`, {
        filterCriteria: {},
        massEditRecords: [{ fieldName: 'value', massEditOperator: '=', fieldValue: 'abc' }],
      }),
      400,
      -4,
    );
    expectError(
      await api(`${M}.massedit/${id}`, {
        filterCriteria: {},
        massEditRecords: [{ fieldName: 'name', massEditOperator: '=', fieldValue: 'x' }],
      }),
      400,
      -4,
    );
    assert.equal(await edit('null', undefined, { name: 'a1' }), 1);
    assert.deepEqual(await values(), [null, 6, 7.25]);

    const int = await newTable(api, 'arith-int', 'MATRIX', 'INT');
    okData(await api(`${M}.add/${int}`, { data: { name: 'row', attribute1: 10, attribute2: 3 } }));
    okData(
      await api(`${M}.massedit/${int}`, {
        filterCriteria: {},
        massEditRecords: [
          { fieldName: 'attribute1', massEditOperator: '/', fieldValue: 4 },
          { fieldName: 'attribute2', massEditOperator: '*', fieldValue: 1.5 },
        ],
      }),
    );
    const [row] = okData(await api(`${M}.fetch/${int}`));
    assert.deepEqual([row.attribute1, row.attribute2], [3, 5], 'INT columns round');
    const text = await newTable(api, 'arith-text', 'MATRIX');
    okData(await api(`${M}.add/${text}`, { data: { name: 'row', attribute1: 'a' } }));
    expectError(
      await api(`${M}.massedit/${text}`, {
        filterCriteria: {},
        massEditRecords: [{ fieldName: 'attribute1', massEditOperator: '+', fieldValue: 1 }],
      }),
      400,
      -4,
    );
  });

  test('resetcolumn empties a column of matrix tables only', async () => {
    const id = await newTable(api, 'reset', 'MATRIX3');
    okData(
      await api(`${M}.add/${id}`, [
        { data: { key1: 'a', key2: 'b', key3: 'c', attribute5: 'x', attribute6: 'keep' } },
        { data: { key1: 'a', key2: 'b', key3: 'd', attribute5: 'y' } },
      ]),
    );
    const [r] = okData(await api(`${M}.resetcolumn/${id}/attribute5`));
    assert.equal(r.updatedRecords, 2);
    const rows = okData(await api(`${M}.fetch/${id}`, { sortBy: 'key3' }));
    assert.deepEqual(
      rows.map((v) => [v.attribute5, v.attribute6]),
      [
        [null, 'keep'],
        [null, null],
      ],
    );
    expectError(await api(`${M}.resetcolumn/${id}/key1`), 400, -4, 'columnName');
    expectError(await api(`${M}.resetcolumn/${id}/colour`), 400, -4, 'columnName');
    const simple = await newTable(api, 'reset-simple', 'SIMPLE');
    expectError(await api(`${M}.resetcolumn/${simple}/value`), 400, -4, 'tableId');
  });

  test('resetcolumn takes no arguments: a body that would scope it is refused, emptying nothing', async () => {
    const id = await newTable(api, 'reset-body', 'MATRIX');
    okData(
      await api(`${M}.add/${id}`, [
        { data: { name: 'wipe', attribute1: 'a' } },
        { data: { name: 'keep', attribute1: 'b' } },
      ]),
    );
    expectError(await api(`${M}.resetcolumn/${id}/attribute1`, { data: { name: 'wipe' } }), 400, -4, 'data');
    expectError(await api(`${M}.resetcolumn/${id}/attribute1`, { foo: 1 }), 400, -4, 'foo');
    assert.deepEqual(
      okData(await api(`${M}.fetch/${id}`, { sortBy: 'name' })).map((v) => v.attribute1),
      ['b', 'a'],
    );
    // What a client sends to every operation: operationType and an empty data.
    const [r] = okData(await api(`${M}.resetcolumn/${id}/attribute1`, { operationType: 'update', data: {} }));
    assert.equal(r.updatedRecords, 2);
  });

  test('findref answers the logics and elements referencing the table, from the compiled logic', async () => {
    const id = await newTable(api, 'referenced', 'SIMPLE');
    assert.deepEqual(okData(await api(`${M}.findref/${id}`)), []);
    const elements = [
      { elementName: 'A', expression: 'lookup("referenced", "k")' },
      { elementName: 'B', expression: '"referenced"' },
      { elementName: 'C', expression: 'lookupRow("referenced", A)' },
    ];
    okData(await api('/add/F', { data: { uniqueName: 'UsesIt', validAfter: '2026-01-01', elements } }));
    okData(
      await api('/add/F', {
        data: { uniqueName: 'Mentions', validAfter: '2026-01-01', elements: elements.slice(1, 2) },
      }),
    );
    const refs = okData(await api(`${M}.findref/${id}`));
    assert.deepEqual(
      refs.map((r: any) => [r.uniqueName, r.validAfter, r.elements]),
      [['UsesIt', '2026-01-01', ['A', 'C']]],
      'a text mention is no reference',
    );
    expectError(await api(`${M}.findref/999999`), 404, -1);
  });

  test('loaddata: 100,000 values in one call, with per-row errors', async (t) => {
    const id = await newTable(api, 'bulk', 'SIMPLE', 'REAL');
    const total = 100_000;
    const data = Array.from({ length: total }, (_, i) => {
      if (i === 7) return [`bulk-${i}`, 'abc']; // not a REAL
      if (i === 99_999) return ['bulk-1', '1']; // repeats the name of row 1
      if (i === 500) return ['only one value'];
      return [`bulk-${i}`, String(i / 4)];
    });
    const started = performance.now();
    const r = okData(
      await api(`${M}.loaddata/LTV?tableId=${id}`, { data: { header: ['name', 'value'], data } }),
    )[0];
    const ms = performance.now() - started;
    assert.deepEqual([r.inserted, r.updated, r.invalid, r.total], [total - 3, 0, 3, total]);
    assert.deepEqual(
      r.errors.map((e: any) => [e.row, e.field]),
      [
        [7, 'value'],
        [500, 'value'],
        [99_999, 'name'],
      ],
    );
    t.diagnostic(
      `${h.db.kind}: ${total} lookup values in ${Math.round(ms)} ms (${Math.round(total / (ms / 1000))} rows/s)`,
    );
    const count = await h.db.query<{ n: number; s: string }>(
      'SELECT count(*)::int AS n, sum(value::numeric)::text AS s FROM lookup_values WHERE partition_id = $1 AND lookup_table_id = $2',
      [h.partitionId, id],
    );
    assert.equal(count.rows[0]!.n, total - 3);

    // With join fields the same call updates: values change, nothing new.
    const again = okData(
      await api(`${M}.loaddata/LTV?tableId=${id}`, {
        data: {
          header: ['name', 'value'],
          data: [
            ['bulk-2', '99'],
            ['bulk-new', '1'],
          ],
          options: { detectJoinFields: true },
        },
      }),
    )[0];
    assert.deepEqual([again.inserted, again.updated, again.invalid], [1, 1, 0]);
    assert.equal(okData(await api(`${M}.fetch/${id}`, { data: { name: 'bulk-2' } }))[0].value, 99);
  });

  test('loaddata of a large body (rows parsed as read): stored whole, or refused whole when a row is malformed', async () => {
    const { token } = await h.login();
    const raw = (path: string, text: string) =>
      h.call(path, { headers: { 'X-Ratecard-jwt': token, 'content-type': 'application/json' }, raw: text });
    const id = await newTable(api, 'lazy', 'SIMPLE');
    const rows = Array.from({ length: 5_000 }, (_, i) => [`lazy-${i}`, `"value" ${'x'.repeat(60)} ${i}`]);
    const text = JSON.stringify({ data: { header: ['name', 'value'], data: rows } });
    assert.ok(text.length > 300_000);
    const bad = text.replace(/\]\]\}\}$/, ',]]}}');
    assert.notEqual(bad, text);
    expectError(await raw(`${M}.loaddata/LTV?tableId=${id}`, bad), 400, -4, 'body');
    // The table named per row: the rows are read (and the malformed one met) before any is written.
    const named = JSON.stringify({
      data: { header: ['lookupTable', 'name', 'value'], data: rows.map((r) => [id, ...r]) },
    });
    expectError(await raw(`${M}.loaddata/LTV`, named.replace(/\]\]\}\}$/, ',]]}}')), 400, -4, 'body');
    const none = await h.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM lookup_values WHERE partition_id = $1 AND lookup_table_id = $2',
      [h.partitionId, id],
    );
    assert.equal(none.rows[0]!.n, 0);
    const r = okData(await raw(`${M}.loaddata/LTV?tableId=${id}`, text))[0];
    assert.deepEqual([r.inserted, r.invalid], [5_000, 0]);
    const stored = okData(await api(`${M}.fetch/${id}`, { data: { name: 'lazy-4999' } }));
    assert.equal(stored[0].value, rows[4_999]![1]);
  });

  test('loaddata: tables named in a lookupTable column, kinds checked, ranges checked per row', async () => {
    const a = await newTable(api, 'load-a', 'MATRIX2');
    const b = await newTable(api, 'load-b', 'MATRIX2', 'INT');
    const simple = await newTable(api, 'load-simple', 'SIMPLE');
    const r = okData(
      await api(`${M}.loaddata/MLTV2`, {
        data: {
          header: ['key1', 'lookupTable', 'key2', 'attribute1'],
          data: [
            ['x', a, 'y', 'text'],
            ['x', b, 'y', '5'],
            ['x', String(b), 'z', 'five'], // not an INT
            ['x', 999999, 'y', '1'], // no such table
            ['x', simple, 'y', '1'], // a SIMPLE table takes LTV
            ['x', 'abc', 'y', '1'],
            ['x', a, 'y', 'again'], // duplicate key in table a
          ],
        },
      }),
    )[0];
    assert.deepEqual([r.inserted, r.invalid, r.total], [2, 5, 7]);
    assert.deepEqual(
      r.errors.map((e: any) => [e.row, e.field]),
      [
        [2, 'attribute1'],
        [3, 'lookupTable'],
        [4, 'lookupTable'],
        [5, 'lookupTable'],
        [6, 'key2'],
      ],
    );
    assert.equal(okData(await api(`${M}.fetch/${b}`))[0].attribute1, 5);
    expectError(
      await api(`${M}.loaddata/LTV?tableId=${a}`, { data: { header: ['name'], data: [['x']] } }),
      400,
      -4,
      'typeCode',
    );
    expectError(
      await api(`${M}.loaddata/LTV`, { data: { header: ['name'], data: [['x']] } }),
      400,
      -4,
      'header',
    );
    expectError(
      await api(`${M}.loaddata/P?tableId=${a}`, { data: { header: ['sku'], data: [] } }),
      400,
      -4,
      'typeCode',
    );
    expectError(
      await api(`${M}.loaddata/LTV?tableId=999999`, { data: { header: ['name'], data: [] } }),
      404,
      -1,
    );

    const range = await newTable(api, 'load-range', 'RANGE', 'REAL');
    okData(
      await api(`${M}.add/${range}`, {
        data: { name: 'stored', lowerBound: 100, upperBound: 200, value: 1 },
      }),
    );
    const ranges = okData(
      await api(`${M}.loaddata/LTV?tableId=${range}`, {
        data: {
          header: ['name', 'lowerBound', 'upperBound', 'value'],
          data: [
            ['r0', '0', '10', '1'],
            ['r1', '5', '15', '1'], // overlaps r0
            ['r2', '150', '', '1'], // overlaps the stored range
            ['r3', '10', '100', '1'],
            ['r4', '300', '250', '1'], // bounds out of order
            ['r5', '200', '', 'x'], // not a REAL: not loaded, so it overlaps nothing
            ['r6', '200', '300', '1'],
          ],
        },
      }),
    )[0];
    assert.deepEqual([ranges.inserted, ranges.invalid], [3, 4]);
    assert.deepEqual(
      ranges.errors.map((e: any) => [e.row, e.field]),
      [
        [1, 'lowerBound'],
        [2, 'lowerBound'],
        [4, 'upperBound'],
        [5, 'value'],
      ],
    );
    assert.deepEqual(
      okData(await api(`${M}.fetch/${range}`, { sortBy: 'lowerBound' })).map((v) => v.name),
      ['r0', 'r3', 'stored', 'r6'],
    );
    // Replacing a stored range by name with join fields is not an overlap with itself.
    const moved = okData(
      await api(`${M}.loaddata/LTV?tableId=${range}`, {
        data: {
          header: ['name', 'lowerBound', 'upperBound'],
          data: [['stored', '110', '190']],
          options: { joinFields: ['name'] },
        },
      }),
    )[0];
    assert.deepEqual([moved.updated, moved.invalid], [1, 0]);
    // A join on name updates only the header's columns: a stored range keeps the bounds the header
    // leaves out (they are not unbounded), so changing its value alone, or one bound, is no overlap.
    for (const [header, row] of [
      [
        ['name', 'value'],
        ['stored', '7'],
      ],
      [
        ['name', 'upperBound'],
        ['stored', '180'],
      ],
    ]) {
      const partial = okData(
        await api(`${M}.loaddata/LTV?tableId=${range}`, {
          data: { header, data: [row], options: { detectJoinFields: true } },
        }),
      )[0];
      assert.deepEqual([partial.updated, partial.invalid], [1, 0], JSON.stringify(partial));
    }
    const [kept] = okData(await api(`${M}.fetch/${range}`, { data: { name: 'stored' } }));
    assert.deepEqual([Number(kept.lowerBound), Number(kept.upperBound), Number(kept.value)], [110, 180, 7]);
    // Bounds past a double's precision: the overlap is told exactly, row by row (the others loaded).
    const exact = await newTable(api, 'load-range-exact', 'RANGE', 'REAL');
    const fine = okData(
      await api(`${M}.loaddata/LTV?tableId=${exact}`, {
        data: {
          header: ['name', 'lowerBound', 'upperBound', 'value'],
          data: [
            ['ok', '5', '6', '1'],
            ['a', '0', '0.10000000000000000001', '1'],
            ['b', '0.1', '1', '2'], // overlaps a by 0.00000000000000000001
            ['c', '0.10000000000000000001', '1', '2'],
          ],
        },
      }),
    )[0];
    assert.deepEqual([fine.inserted, fine.invalid], [3, 1], JSON.stringify(fine));
    assert.deepEqual(
      fine.errors.map((e: any) => [e.row, e.field]),
      [[2, 'lowerBound']],
    );
  });

  test('the general operations refuse lookup values and writes of tables, pointing to the manager', async () => {
    const id = await newTable(api, 'general', 'SIMPLE');
    const [v] = okData(await api(`${M}.add/${id}`, { data: { name: 'n', value: 'v' } }));
    const calls: [string, unknown][] = [
      ['/fetch/LTV', {}],
      [`/fetch/LTV/${v.id}`, undefined],
      ['/add/LTV', { data: { name: 'x' } }],
      ['/update/LTV', { data: { typedId: v.typedId, value: 'y' } }],
      ['/integrate/LTV', { data: { name: 'n', value: 'y' } }],
      ['/delete/LTV', { data: { typedId: v.typedId } }],
      ['/delete/LTV/batch/forcefilter', { data: { name: 'n' } }],
      [
        '/massedit/LTV',
        { filterCriteria: {}, massEditRecords: [{ fieldName: 'value', massEditOperator: 'null' }] },
      ],
      ['/resetcolumn/MLTV/attribute1', undefined],
      ['/fetch/MLTV', {}],
      ['/add/MLTV3', { data: { key1: 'a' } }],
      ['/fetch/JLTV', {}],
      ['/update/JLTV', { data: { name: 'a' } }],
      ['/fetch/JLTV2', {}],
      ['/add/JLTV2', { data: { key1: 'a', key2: 'b', value: 1 } }],
      ['/update/LT', { data: { uniqueName: 'x', label: 'y' } }],
      ['/add/LT', { data: { uniqueName: 'x', type: 'SIMPLE' } }],
      ['/loaddata/LTV', { data: { header: ['name'], data: [['x']] } }],
    ];
    for (const [path, body] of calls) {
      const r = await api(path, body);
      expectError(r, 400, -4, 'typeCode');
      assert.match(r.body.response.data, /lookuptablemanager/, path);
    }
    assert.equal(okData(await api(`${M}.fetch/${id}`))[0].value, 'v', 'untouched');
    const types = okData(await api('/fetch')).map((t) => t.typeCode);
    for (const code of ['LT', 'LTV', 'MLTV', 'MLTV2', 'MLTV6', 'JLTV']) assert.ok(types.includes(code), code);
  });

  test('permissions: each operation needs its own; reading needs none; no credentials is 401', async () => {
    const id = await newTable(api, 'guarded', 'SIMPLE');
    okData(await api(`${M}.add/${id}`, { data: { name: 'n', value: 'v' } }));
    const as = async (login: string, roles: string[]) => {
      await h.newUser(login, 'pw-123456789', roles);
      const r = await h.call('/login/extended', { basic: { user: login, password: 'pw-123456789' } });
      return clientOf(h, r.headers.get('x-ratecard-jwt')!);
    };
    const nobody = await as('lt-nobody', []);
    const params = await as('lt-params', ['PB_PARAMETERS']);
    const integration = await as('lt-integration', ['DATAINTEGRATION']);
    const plasma = await as('lt-plasma', ['PLASMA']);

    const calls: [string, unknown, string][] = [
      [`${M}.add`, { data: { uniqueName: 'p1', type: 'SIMPLE' } }, 'LOOKUPTABLE_ADD'],
      [`${M}.update`, { data: { id, label: 'x' }, oldValues: { version: 0 } }, 'LOOKUPTABLE_UPDATE'],
      [`${M}.copy/${id}`, { data: { uniqueName: 'p-copy' } }, 'LOOKUPTABLE_COPY'],
      [`${M}.findref/${id}`, undefined, 'LOOKUPTABLE_UPDATE'],
      [`${M}.add/${id}`, { data: { name: 'p2', value: 'v' } }, 'LOOKUPTABLE_ADD'],
      [`${M}.update/${id}`, { data: { name: 'n', value: 'w' } }, 'LOOKUPTABLE_UPDATE'],
      [`${M}.integrate/${id}`, { data: { name: 'p3', value: 'v' } }, 'LOOKUPTABLEVALUES_INTEGRATE'],
      [
        `${M}.massedit/${id}`,
        {
          filterCriteria: {},
          massEditRecords: [{ fieldName: 'value', massEditOperator: '=', fieldValue: 'z' }],
        },
        'LOOKUPTABLE_UPDATE',
      ],
      [`${M}.resetcolumn/${id}/value`, undefined, 'LOOKUPTABLE_REMOVE'],
      [`${M}.delete/${id}/batch`, { data: { name: 'nothing' } }, 'LOOKUPTABLE_REMOVE'],
      [`${M}.delete/${id}`, { data: { name: 'nothing' } }, 'LOOKUPTABLE_REMOVE'],
      [
        `${M}.loaddata/LTV?tableId=${id}`,
        { data: { header: ['name'], data: [['p4']] } },
        'LOOKUPTABLEVALUES_INTEGRATE',
      ],
      [`${M}.delete`, { data: { uniqueName: 'nothing' } }, 'LOOKUPTABLE_REMOVE'],
    ];
    for (const [path, body] of calls) {
      expectError(await nobody(path, body), 403, -3);
      expectError(await h.call(path, body === undefined ? {} : { body }), 401, -7);
    }
    // Any user may read company parameters.
    assert.equal(okData(await nobody(`${M}.fetch/${id}`))[0].name, 'n');
    assert.deepEqual(
      okData(await nobody(`${M}.fetch`, { data: { uniqueName: 'guarded' } })).map((t) => t.id),
      [id],
    );
    expectError(await h.call(`${M}.fetch/${id}`, { body: {} }), 401, -7);
    expectError(await h.call(`${M}.fetch`, { body: {} }), 401, -7);

    // PB_PARAMETERS maintains tables, but integration is DATAINTEGRATION's.
    const created = await newTable(params, 'by-params', 'SIMPLE');
    okData(await params(`${M}.add/${created}`, { data: { name: 'a', value: '1' } }));
    okData(await params(`${M}.copy/${created}`, { data: { uniqueName: 'by-params-copy' } }));
    expectError(await params(`${M}.integrate/${created}`, { data: { name: 'b' } }), 403, -3);
    okData(
      await params(`${M}.loaddata/LTV?tableId=${created}`, { data: { header: ['name'], data: [['c']] } }),
    );
    okData(await params(`${M}.delete`, { data: { uniqueName: 'by-params-copy' } }));
    // DATAINTEGRATION integrates and loads values, but cannot add tables or values one by one.
    okData(await integration(`${M}.integrate/${created}`, { data: { name: 'b', value: '2' } }));
    okData(
      await integration(`${M}.loaddata/LTV?tableId=${created}`, {
        data: { header: ['name'], data: [['d']] },
      }),
    );
    expectError(await integration(`${M}.add/${created}`, { data: { name: 'e' } }), 403, -3);
    expectError(await integration(`${M}.add`, { data: { uniqueName: 'e', type: 'SIMPLE' } }), 403, -3);
    // PLASMA updates values and tables, and nothing else.
    okData(await plasma(`${M}.update/${created}`, { data: { name: 'a', value: '3' } }));
    okData(
      await plasma(`${M}.massedit/${created}`, {
        filterCriteria: {},
        massEditRecords: [{ fieldName: 'value', massEditOperator: '=', fieldValue: '4' }],
      }),
    );
    expectError(await plasma(`${M}.delete/${created}`, { data: { name: 'a' } }), 403, -3);
    expectError(
      await plasma(`${M}.loaddata/LTV?tableId=${created}`, { data: { header: ['name'], data: [] } }),
      403,
      -3,
    );
  });
});

describe('lookup tables across partitions', () => {
  let h: Harness;
  let other: Harness;
  before(async () => {
    h = await startHarness();
    other = await startHarness({ shareDbWith: h });
  });
  after(async () => {
    await other.close();
    await h.close();
  });

  test("a partition never sees or changes another partition's tables and values", async () => {
    const api = clientOf(h, (await h.login()).token);
    const theirs = clientOf(other, (await other.login()).token);
    const id = await newTable(api, 'shared-name', 'SIMPLE');
    const [v] = okData(await api(`${M}.add/${id}`, { data: { name: 'n', value: 'mine' } }));
    // The same unique name is free in the other partition.
    const otherId = await newTable(theirs, 'shared-name', 'SIMPLE');
    assert.notEqual(otherId, id);
    assert.deepEqual(
      okData(await theirs(`${M}.fetch`, { data: { uniqueName: 'shared-name' } })).map((t) => t.id),
      [otherId],
    );
    expectError(await theirs(`${M}.fetch/${id}`), 404, -1);
    expectError(await theirs(`${M}.add/${id}`, { data: { name: 'x' } }), 404, -1);
    expectError(await theirs(`${M}.delete/${id}`, { data: { typedId: v.typedId } }), 404, -1);
    expectError(await theirs(`${M}.copy/${id}`, { data: { uniqueName: 'stolen' } }), 404, -1);
    expectError(await theirs(`${M}.delete`, { data: { typedId: `${id}.LT` } }), 404, -1);
    expectError(
      await theirs(`${M}.loaddata/LTV?tableId=${id}`, { data: { header: ['name'], data: [['x']] } }),
      404,
      -1,
    );
    expectError(await theirs(`${M}.delete/${otherId}`, { data: { typedId: v.typedId } }), 404, -1);
    assert.equal(okData(await api(`${M}.fetch/${id}`))[0].value, 'mine');
  });
});
