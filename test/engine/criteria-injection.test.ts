// Hostile input against the criteria compiler: SQL in values, field names, sortBy and operator
// names; placeholders, quotes, backslashes and NUL in values; nesting and counts past the limits.
// The filters run on a real table (PGlite, and PostgreSQL when DATABASE_URL is set): only the
// matching rows come back, and the table a payload tries to drop is still there at the end.

// describe/test return promises that the runner tracks itself, hence `void` (no-floating-promises).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { rawDatabases, type RawDb } from '../helpers/raw-db.ts';
import {
  compileCriteria,
  compileSort,
  MAX_CRITERIA,
  MAX_CRITERIA_DEPTH,
  parseCriteria,
  resolveCriteria,
} from '../../src/engine/criteria.ts';
import { Params } from '../../src/db/sql.ts';
import { AppError } from '../../src/http/errors.ts';
import type { FieldSpec } from '../../src/engine/types.ts';

const FIELDS: ReadonlyMap<string, FieldSpec> = new Map([
  ['id', { name: 'id', column: 'id', type: 'integer' }],
  ['name', { name: 'name', column: 'name', type: 'string' }],
  ['qty', { name: 'qty', column: 'qty', type: 'integer' }],
]);

function compile(input: unknown, opts: { textMatchStyle?: string; lenient?: boolean } = {}) {
  const params = new Params();
  const { criteria } = resolveCriteria(parseCriteria(input, opts), FIELDS, opts);
  return { sql: compileCriteria(criteria, params, 't'), params: params.values };
}

const leaf = (fieldName: unknown, operator: unknown, value?: unknown) => ({ fieldName, operator, value });
const adv = (operator: unknown, ...criteria: unknown[]) => ({
  _constructor: 'AdvancedCriteria',
  operator,
  criteria,
});

function rejects(fn: () => unknown, fieldName: string): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof AppError, `expected an AppError, got ${String(err)}`);
    assert.equal(err.status, -4);
    assert.deepEqual(Object.keys(err.errors ?? {}), [fieldName]);
    return true;
  });
}

/** The rows, by id; each name is a payload that must only ever match itself. */
const NAMES: ReadonlyArray<[number, string]> = [
  [1, "'; DROP TABLE x; --"],
  [2, '$1'],
  [3, "O'Brien"],
  [4, 'a\\b'],
  [5, '"quoted"'],
  [6, 'plain'],
  [7, "\\'; DELETE FROM victims; --"],
  [8, '$2::text'],
];

const SQL_FIELD_NAMES = [
  'name"; DROP TABLE x; --',
  'name; DROP TABLE x',
  '"name"',
  'name) OR (1=1',
  't.name',
  'NAME',
  '__proto__',
  'constructor',
  'na\u0000me',
];

// ---------------------------------------------------------------------------------------------
// Without a database: what reaches the SQL text.

void describe('criteria injection: the SQL text', () => {
  void test('values never reach the SQL text, only placeholders', () => {
    for (const [, name] of NAMES) {
      for (const operator of [
        'equals',
        'iEquals',
        'contains',
        'iNotStartsWith',
        'matchesPattern',
        'regexp',
      ]) {
        const { sql, params } = compile(leaf('name', operator, name));
        // (iNotStartsWith of a prefix ending in ASCII is a range: its one parameter, three times.)
        assert.match(
          sql,
          /^(NOT coalesce\()?\(?(lower\()?"t"\."name"\)? (=|LIKE|~|~>=~) (lower\()?\$1::text/,
        );
        assert.ok(!sql.replaceAll('$1::text', '').includes(name), sql);
        assert.equal(params.length, 1);
      }
    }
  });

  void test('a value spelling a placeholder is only a value', () => {
    assert.deepEqual(compile(adv('and', leaf('name', 'equals', '$2::text'), leaf('qty', 'equals', 5))), {
      sql: '("t"."name" = $1::text AND "t"."qty" = $2::bigint)',
      params: ['$2::text', 5],
    });
  });

  void test('SQL in a field name is a -4 naming it', () => {
    for (const name of SQL_FIELD_NAMES) {
      rejects(() => compile(leaf(name, 'equals', 'x')), name);
      rejects(() => compile({ [name]: 'x' }), name);
      rejects(() => compile(leaf(name, 'isNull')), name);
      // in a …Field operator the error names the criterion's field
      rejects(() => compile(leaf('name', 'equalsField', name)), 'name');
    }
  });

  void test('SQL in sortBy is a -4 on sortBy', () => {
    for (const sortBy of [
      'name; DROP TABLE x',
      '-name DESC, (SELECT 1)',
      ['name', 'qty); DROP TABLE x; --'],
      '(SELECT 1)',
      'name ASC',
      '-"name"',
      '1',
      ...SQL_FIELD_NAMES,
    ]) {
      rejects(() => compileSort(sortBy, FIELDS, 't'), 'sortBy');
    }
  });

  void test('SQL in an operator name is a -4 naming the field (or "criteria" for a logical operator)', () => {
    for (const operator of [
      'equals; DROP TABLE x',
      "equals' OR '1'='1",
      'EQUALS',
      'constructor',
      '__proto__',
      'hasOwnProperty',
      'equals\u0000',
    ]) {
      rejects(() => parseCriteria(leaf('name', operator, 'x')), 'name');
      rejects(() => parseCriteria(adv(operator, leaf('name', 'equals', 'x'))), 'criteria');
    }
    rejects(() => parseCriteria(adv('and; DROP TABLE x', leaf('name', 'equals', 'x'))), 'criteria');
  });

  void test('SQL in typed values is a -4, never SQL', () => {
    rejects(() => compile(leaf('qty', 'equals', '1 OR 1=1')), 'qty');
    rejects(() => compile(leaf('qty', 'equals', '1; DROP TABLE x')), 'qty');
    rejects(() => compile(leaf('qty', 'inSet', ['1', "1'); DROP TABLE x; --"])), 'qty');
    rejects(() => compile({ qty: '0x10' }), 'qty');
  });

  void test('NUL in a text value is a -4 naming the field', () => {
    rejects(() => compile(leaf('name', 'equals', 'a\u0000')), 'name');
    rejects(() => compile(leaf('name', 'contains', '\u0000')), 'name');
    rejects(() => compile(leaf('name', 'inSet', ['ok', 'a\u0000b'])), 'name');
    rejects(() => compile(leaf('name', 'regexp', '\u0000')), 'name');
    // A pattern over 1,000 characters (PostgreSQL would call it too complex once a row is tested).
    rejects(() => compile(leaf('name', 'regexp', 'y'.repeat(1_001))), 'name');
    compile(leaf('name', 'regexp', 'y'.repeat(1_000)));
    rejects(() => compile({ name: '\u0000' }), 'name');
    rejects(() => compile({ name: ['ok', '\u0000'] }, { textMatchStyle: 'substring' }), 'name');
  });

  void test('a registry mistake or a bad alias cannot inject: ident refuses it', () => {
    const bad = new Map([
      ['name', { name: 'name', column: 'name"; DROP TABLE x; --', type: 'string' as const }],
    ]);
    const { criteria } = resolveCriteria(parseCriteria({ name: 'x' }), bad);
    assert.throws(() => compileCriteria(criteria, new Params()), /unsafe SQL identifier/);
    assert.throws(() => compileSort('name', bad), /unsafe SQL identifier/);
    const ok = resolveCriteria(parseCriteria({ name: 'x' }), FIELDS).criteria;
    assert.throws(() => compileCriteria(ok, new Params(), 't"; --'), /unsafe SQL identifier/);
    assert.throws(() => compileSort('name', FIELDS, undefined, 'id; DROP TABLE x'), /unsafe SQL identifier/);
  });
});

// ---------------------------------------------------------------------------------------------
// Limits: depth and count are refused early, and never by a stack overflow.

/** `levels` nested `and`s around one leaf (the root counts as level 1). */
function nested(levels: number, inner: unknown): unknown {
  let node = inner;
  for (let i = 1; i < levels; i++) node = { operator: 'and', criteria: [node] };
  return { _constructor: 'AdvancedCriteria', ...(node as object) };
}

void describe('criteria injection: limits', () => {
  const inner = adv('and', leaf('qty', 'equals', 6));

  void test(`nesting up to ${MAX_CRITERIA_DEPTH} levels is fine, one more is a -4`, () => {
    assert.doesNotThrow(() => compile(nested(MAX_CRITERIA_DEPTH - 1, inner)));
    rejects(() => compile(nested(MAX_CRITERIA_DEPTH, inner)), 'criteria');
  });

  void test('absurd nesting is refused without exhausting the stack', () => {
    rejects(() => parseCriteria(nested(100_000, inner)), 'criteria');
  });

  void test(`up to ${MAX_CRITERIA} criteria are fine, more are a -4`, () => {
    const many = (n: number) => Array.from({ length: n }, (_, i) => leaf('qty', 'equals', i));
    // The criteria count, not the group holding them: 1,000 in one `or` are within the limit.
    assert.doesNotThrow(() => compile(adv('or', ...many(MAX_CRITERIA))));
    rejects(() => compile(adv('or', ...many(MAX_CRITERIA + 1))), 'criteria');
    // Groups have a cap of their own (empty ones too).
    const groups = Array.from({ length: MAX_CRITERIA }, () => adv('and'));
    rejects(() => compile(adv('or', ...groups)), 'criteria');
    const keys = Object.fromEntries(Array.from({ length: MAX_CRITERIA + 1 }, (_, i) => [`f${i}`, 1]));
    rejects(() => compile(keys), 'criteria');
  });

  void test('a long substring or prefix simple list counts leaf by leaf, even when lenient', () => {
    const values = Array.from({ length: MAX_CRITERIA + 1 }, (_, i) => `v${i}`);
    for (const textMatchStyle of ['substring', 'startsWith']) {
      rejects(() => compile({ name: values }, { textMatchStyle }), 'criteria');
      rejects(() => compile({ name: values }, { textMatchStyle, lenient: true }), 'criteria');
    }
    // a list with a set form is one criterion and one parameter, however long: case-sensitive or
    // case-insensitive (the default style, `exact`)
    for (const textMatchStyle of ['exactCase', 'exact']) {
      const many = Array.from({ length: 70_000 }, (_, i) => `v${i}`);
      assert.equal(compile({ name: many }, { textMatchStyle }).params.length, 1);
    }
  });
});

// ---------------------------------------------------------------------------------------------
// On the databases: only matching rows come back and the tables survive.

const databases = rawDatabases('rc_criteria_injection');

for (const [dbName, open] of databases) {
  void describe(`criteria injection on ${dbName}`, () => {
    let db: RawDb;
    before(async () => {
      db = await open();
      await db.exec('CREATE TABLE x (id integer); INSERT INTO x VALUES (1);');
      await db.exec('CREATE TABLE victims (id integer PRIMARY KEY, name text, qty integer)');
      for (const [id, name] of NAMES) {
        await db.query('INSERT INTO victims VALUES ($1, $2, $3)', [id, name, id]);
      }
    });
    after(() => db.close());

    const ids = async (input: unknown, opts: { textMatchStyle?: string } = {}) => {
      const { sql, params } = compile(input, opts);
      const rows = await db.query(`SELECT t.id FROM victims AS t WHERE ${sql} ORDER BY t.id`, params);
      return rows.map((r) => Number(r.id));
    };

    void test('each payload value matches only its own row, by every text operator', async () => {
      for (const [id, name] of NAMES) {
        assert.deepEqual(await ids(leaf('name', 'equals', name)), [id], name);
        assert.deepEqual(await ids(leaf('name', 'iEquals', name)), [id], name);
        assert.deepEqual(await ids(leaf('name', 'contains', name)), [id], name);
        assert.deepEqual(await ids(leaf('name', 'matchesPattern', name)), [id], name);
        assert.deepEqual(await ids({ name }), [id], name);
        assert.deepEqual(await ids({ name }, { textMatchStyle: 'substring' }), [id], name);
        assert.deepEqual(
          await ids(leaf('name', 'notEqual', name)),
          [1, 2, 3, 4, 5, 6, 7, 8].filter((i) => i !== id),
        );
      }
    });

    void test('a simple list of the default style matches any of its values, in any case', async () => {
      const names = NAMES.map(([, n]) => n);
      assert.deepEqual(await ids({ name: names.map((n) => n.toUpperCase()) }), [1, 2, 3, 4, 5, 6, 7, 8]);
      assert.deepEqual(await ids({ name: [names[2]!.toLowerCase(), 'nothing'] }), [3]);
      assert.deepEqual(await ids({ name: [] }), []);
      assert.deepEqual(await ids({ name: [names[0], null] }, { textMatchStyle: 'exact' }), [1]);
      assert.deepEqual(await ids({ name: ['nothing', "'; drop table X; --"] }), [1]);
    });

    void test('payloads in a set, a regexp and a range stay values', async () => {
      assert.deepEqual(
        await ids(
          leaf(
            'name',
            'inSet',
            NAMES.map(([, n]) => n),
          ),
        ),
        [1, 2, 3, 4, 5, 6, 7, 8],
      );
      assert.deepEqual(await ids(leaf('name', 'inSet', ["'; DROP TABLE x; --", 'nothing'])), [1]);
      assert.deepEqual(await ids(leaf('name', 'regexp', '^.; DROP TABLE x; --$')), [1]);
      assert.deepEqual(await ids(leaf('name', 'regexp', '\\$[0-9]')), [2, 8]);
      assert.deepEqual(await ids(leaf('name', 'contains', "'")), [1, 3, 7]);
      assert.deepEqual(await ids(leaf('name', 'contains', '\\')), [4, 7]);
      assert.deepEqual(await ids(leaf('name', 'startsWith', '$')), [2, 8]);
      assert.deepEqual(
        await ids({ fieldName: 'name', operator: 'betweenInclusive', start: '$', end: '$2' }),
        [2],
      );
    });

    void test(`${MAX_CRITERIA_DEPTH} levels of nesting and ${MAX_CRITERIA - 1} criteria run`, async () => {
      assert.deepEqual(await ids(nested(MAX_CRITERIA_DEPTH - 1, adv('and', leaf('qty', 'equals', 6)))), [6]);
      const many = Array.from({ length: MAX_CRITERIA - 1 }, (_, i) => leaf('qty', 'equals', i + 5));
      assert.deepEqual(await ids(adv('or', ...many)), [5, 6, 7, 8]);
      const bigSet = Array.from({ length: 20_000 }, (_, i) => i + 7);
      assert.deepEqual(await ids(leaf('qty', 'inSet', bigSet)), [7, 8]);
    });

    void test('the tables survive', async () => {
      assert.deepEqual(await db.query('SELECT id FROM x'), [{ id: 1 }]);
      const rows = await db.query('SELECT id, name FROM victims ORDER BY id');
      assert.deepEqual(
        rows.map((r) => [r.id, r.name]),
        NAMES,
      );
    });
  });
}
