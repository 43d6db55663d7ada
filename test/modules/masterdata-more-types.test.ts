// The rest of the interface's file-load list as master types, over real HTTP: product and customer
// descriptions (PDESC, CDESC), product references (PR), product cross-references (PXREF) and to-do
// items. Each through add → fetch with a filter → update (with version) → delete with its history;
// integrate, massedit and /loaddata; CSV (and XLSX) files through /loaddata.file that insert, then
// update by business key, with a bad row counted and named; validation naming the field; the write
// permission; a customer's user groups on its descriptions; partition isolation. One harness.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import ExcelJS from 'exceljs';
import { ADMIN, ADMIN_PASSWORD, startHarness, type Harness, type Reply } from '../helpers/app.ts';
import { expectError, okData } from '../helpers/envelope.ts';
import { assertOk, form, send } from '../jobs/helpers.ts';
import { TO_DO_CODE } from '../../src/engine/registry-master-more.ts';
import { adv, eq } from '../helpers/criteria.ts';

interface Who {
  readonly user: string;
  readonly password: string;
}
const admin: Who = { user: ADMIN, password: ADMIN_PASSWORD };
const plain: Who = { user: 'plain', password: 'plain-password-1' };
const integrator: Who = { user: 'integrator', password: 'integrator-password-1' };
const shop: Who = { user: 'shop', password: 'shop-password-1' };

/** One type's cases: a record to add, the change of its update, and a filter that finds it. */
interface Case {
  readonly code: string;
  /** The business key. */
  readonly keys: readonly string[];
  readonly add: Record<string, unknown>;
  readonly change: Record<string, unknown>;
  readonly filter: readonly [string, unknown];
  /** CSV header and rows: two good rows, then one bad row (field at fault). */
  readonly csv: { header: string; rows: [string, string]; bad: string; badField: string };
}

const CASES: readonly Case[] = [
  {
    code: 'PDESC',
    keys: ['sku', 'language'],
    add: { sku: 'D-1', language: 'de', label: 'Fahrrad', description: 'Ein Rad.\nZwei Zeilen.' },
    change: { label: 'Velo' },
    filter: ['language', 'de'],
    csv: { header: 'sku,language,label', rows: ['F-1,en,One', 'F-1,fr-CA,Un'], bad: 'F-1,EN_us,x', badField: 'language' },
  },
  {
    code: 'CDESC',
    keys: ['customerId', 'language'],
    add: { customerId: 'C-1', language: 'en-GB', label: 'Acme Ltd', description: 'Key account' },
    change: { description: 'Lost account' },
    filter: ['customerId', 'C-1'],
    csv: { header: 'customerId,language,label', rows: ['FC-1,en,One', 'FC-1,de,Eins'], bad: 'FC-1,e,x', badField: 'language' },
  },
  {
    code: 'PR',
    keys: ['sku', 'relationType', 'targetSku'],
    add: { sku: 'R-1', relationType: 'SUCCESSOR', targetSku: 'R-2', label: 'next model' },
    change: { label: 'the next model' },
    filter: ['targetSku', 'R-2'],
    csv: { header: 'sku,relationType,targetSku,label', rows: ['F-1,ACCESSORY,F-2,a', 'F-1,SUBSTITUTE,F-3,b'], bad: 'F-1,SUBSTITUTE,F-1,c', badField: 'targetSku' },
  },
  {
    code: 'PXREF',
    keys: ['sku', 'referenceType', 'externalId'],
    add: { sku: 'X-1', referenceType: 'CUSTOMER', externalId: 'ACME-4711', partner: 'C-1', label: 'Acme item' },
    change: { partner: 'C-2' },
    filter: ['externalId', 'ACME-4711'],
    csv: { header: 'sku,referenceType,externalId,label', rows: ['F-1,EAN,4006381333931,a', 'F-1,SUPPLIER,S-9,b'], bad: 'F-1,EAN,,c', badField: 'externalId' },
  },
  {
    code: TO_DO_CODE,
    keys: ['uniqueName'],
    add: { uniqueName: 'T-1', label: 'Check prices', assignee: 'plain', dueDate: '2027-01-31', priority: 2, refTypedId: '1.P' },
    change: { status: 'IN_PROGRESS', priority: 1 },
    filter: ['assignee', 'plain'],
    csv: { header: 'uniqueName,label,status,priority', rows: ['FT-1,one,OPEN,3', 'FT-2,two,DONE,'], bad: 'FT-3,three,LATER,1', badField: 'status' },
  },
]; // prettier-ignore

describe('PDESC, CDESC, PR, PXREF and to-do items', () => {
  let h: Harness;
  let other: Harness;

  before(async () => {
    h = await startHarness();
    other = await startHarness({ shareDbWith: h });
    await h.newUser(plain.user, plain.password);
    await h.newUser(shop.user, shop.password, ['PRICESHOP_EDIT']);
    // The integrator is in group OPEN_GROUP, not in SECRET.
    await h.newUser(integrator.user, integrator.password, ['DATAINTEGRATION'], ['OPEN_GROUP']);
  });
  after(async () => {
    await other.close();
    await h.close();
  });

  const call = (path: string, body?: unknown, who: Who = admin, on: Harness = h): Promise<Reply> =>
    on.call(path, { basic: who, ...(body === undefined ? {} : { body }) });
  const loadFile = (code: string, data: string | Buffer, fields: Record<string, string> = {}, who = admin) =>
    send(h, `/loaddata.file/${code}`, {
      who,
      body: form(fields, { field: 'fileName', name: 'data.csv', data }),
    });

  for (const c of CASES) {
    test(`${c.code}: add, fetch with a filter, update with version, delete; record history`, async () => {
      const [added] = okData(await call(`/add/${c.code}`, { data: c.add }));
      for (const [k, v] of Object.entries(c.add)) assert.deepEqual(added[k], v, k);
      assert.equal(added.version, 0);
      assert.equal(added.typedId, `${added.id}.${c.code}`);
      if (c.code === TO_DO_CODE) assert.equal(added.status, 'OPEN');

      const found = okData(await call(`/fetch/${c.code}`, { data: adv(eq(...c.filter)) }));
      assert.deepEqual(
        found.map((r) => r.id),
        [added.id],
      );
      assert.equal(okData(await call(`/fetch/${c.code}/${added.id}`))[0].id, added.id);

      const update = { data: { typedId: added.typedId, ...c.change }, oldValues: { version: 0 } };
      const [updated] = okData(await call(`/update/${c.code}`, update));
      for (const [k, v] of Object.entries(c.change)) assert.deepEqual(updated[k], v, k);
      assert.equal(updated.version, 1);
      // A stale version is refused and changes nothing.
      const stale = await call(`/update/${c.code}`, update);
      assert.notEqual(stale.status, 200, stale.text);
      assert.equal(okData(await call(`/fetch/${c.code}/${added.id}`))[0].version, 1);

      okData(await call(`/delete/${c.code}`, { data: { typedId: added.typedId } }));
      expectError(await call(`/fetch/${c.code}/${added.id}`), 404, -1);
      const history = okData(await call(`/fetch/${c.code}/${added.id}/history`));
      assert.deepEqual(
        history.map((r) => r.action),
        ['ADD', 'UPDATE', 'DELETE'],
      );
    });
  }

  test('integrate, massedit and /loaddata on every type; XLSX loads too', async () => {
    for (const c of CASES) {
      const keyFields = c.keys;
      const [first] = okData(await call(`/integrate/${c.code}`, [{ data: { ...c.add, attribute1: 'a' } }]));
      const [again] = okData(await call(`/integrate/${c.code}`, [{ data: { ...c.add, attribute1: 'b' } }]));
      assert.equal(again.id, first.id, `${c.code}: integrate by business key`);
      assert.equal(again.attribute1, 'b');
      const filter = adv(eq(...c.filter));
      const edited = await call(`/massedit/${c.code}`, {
        filterCriteria: filter,
        massEditRecords: [{ fieldName: 'attribute2', massEditOperator: '=', fieldValue: 'edited' }],
      });
      assert.equal(edited.status, 200, edited.text);
      const header = [...keyFields, 'attribute3'];
      const loaded = await call(`/loaddata/${c.code}`, {
        data: {
          header,
          data: [[...keyFields.map((k) => c.add[k]), 'loaded']],
          options: { detectJoinFields: true },
        },
      });
      assert.equal(loaded.status, 200, loaded.text);
      const [row] = okData(await call(`/fetch/${c.code}/${first.id}`));
      assert.deepEqual([row.attribute1, row.attribute2, row.attribute3], ['b', 'edited', 'loaded'], c.code);
      okData(await call(`/delete/${c.code}`, { data: { typedId: row.typedId } }));
    }

    const wb = new ExcelJS.Workbook();
    const ws = wb.addWorksheet('refs');
    ws.addRow(['sku', 'referenceType', 'externalId', 'partner']);
    ws.addRow(['XL-1', 'CUSTOMER', 'K-1', 'C-9']);
    ws.addRow(['XL-1', 'CUSTOMER', 'K-2', null]);
    const xlsx = Buffer.from(await wb.xlsx.writeBuffer());
    const res = assertOk(await loadFile('PXREF', xlsx))[0];
    assert.deepEqual([res.loadedRecords, res.invalidRecords], [2, 0]);
    const rows = okData(await call('/fetch/PXREF', { data: adv(eq('sku', 'XL-1')), sortBy: 'externalId' }));
    assert.deepEqual(
      rows.map((r) => [r.externalId, r.partner]),
      [
        ['K-1', 'C-9'],
        ['K-2', null],
      ],
    );

    // A load that leaves out a field with a default on add (a to-do's status) inserts, as /add does.
    const loadedItems = await call(`/loaddata/${TO_DO_CODE}`, {
      data: { header: ['uniqueName', 'label'], data: [['LD-1', 'loaded without status']] },
    });
    assert.equal(loadedItems.status, 200, loadedItems.text);
    const [item] = okData(await call(`/fetch/${TO_DO_CODE}`, { data: adv(eq('uniqueName', 'LD-1')) }));
    assert.equal(item.status, 'OPEN');
  });

  for (const c of CASES) {
    test(`${c.code}: a CSV file inserts, then updates by business key; a bad row is counted and named`, async () => {
      const csv = (suffix: string) =>
        `${c.csv.header},attribute1\n${c.csv.rows.map((r) => `${r},${suffix}`).join('\n')}\n${c.csv.bad},${suffix}\n`;
      const first = assertOk(await loadFile(c.code, csv('first')))[0];
      assert.deepEqual(
        [first.loadedRecords, first.invalidRecords, first.totalRecords],
        [2, 1, 3],
        JSON.stringify(first),
      );
      const status = assertOk(await send(h, `/uploadmanager.status/${first.uploadStatusId}`))[0];
      assert.equal(status.errors.length, 1);
      assert.equal(status.errors[0].row, 2);
      assert.equal(status.errors[0].field, c.csv.badField, JSON.stringify(status.errors));

      const second = assertOk(await loadFile(c.code, csv('second'), { detectJoinFields: 'true' }))[0];
      assert.deepEqual([second.loadedRecords, second.invalidRecords], [2, 1]);
      const rows = okData(await call(`/fetch/${c.code}`, { data: adv(eq('attribute1', 'second')) }));
      assert.equal(rows.length, 2, `${c.code}: updated in place`);
      assert.ok(rows.every((r) => r.version === 1));
      assert.equal(
        okData(await call(`/fetch/${c.code}`, { data: adv(eq('attribute1', 'first')) })).length,
        0,
      );
    });
  }

  test('validation errors name the field at fault', async () => {
    const refused = async (code: string, data: object, field: string) =>
      expectError(await call(`/add/${code}`, { data }), 400, -4, field);
    await refused('PDESC', { sku: 'V-1', language: 'english' }, 'language');
    await refused('PDESC', { sku: 'V-1', language: 'de_DE' }, 'language');
    await refused('CDESC', { customerId: 'V-1', language: 'DE' }, 'language');
    await refused('PDESC', { language: 'de' }, 'sku');
    await refused('PR', { sku: 'V-1', relationType: 'SUCCESSOR', targetSku: 'V-1' }, 'targetSku');
    // A key given as a JSON number or boolean is its text: still the product itself (sixth audit).
    await refused('PR', { sku: 1, relationType: 'SUCCESSOR', targetSku: '1' }, 'targetSku');
    await refused('PR', { sku: true, relationType: 'SUCCESSOR', targetSku: 'true' }, 'targetSku');
    await refused('PR', { sku: 'V-1', targetSku: 'V-2' }, 'relationType');
    await refused('PXREF', { sku: 'V-1', referenceType: 'EAN' }, 'externalId');
    await refused(TO_DO_CODE, { uniqueName: 'V-1', label: 'x', status: 'LATER' }, 'status');
    await refused(TO_DO_CODE, { uniqueName: 'V-1', label: 'x', priority: 6 }, 'priority');
    await refused(TO_DO_CODE, { uniqueName: 'V-1', label: 'x', priority: 0 }, 'priority');
    await refused(TO_DO_CODE, { uniqueName: 'V-1', label: 'x', dueDate: 'soon' }, 'dueDate');
    await refused(TO_DO_CODE, { uniqueName: 'V-1' }, 'label');
    await refused(TO_DO_CODE, { label: 'x' }, 'uniqueName');
    assert.equal(
      okData(await call(`/fetch/${TO_DO_CODE}`, { data: adv(eq('uniqueName', 'V-1')) })).length,
      0,
    );

    // Status is never emptied; priority stays in 1..5 also through massedit arithmetic.
    const [t] = okData(
      await call(`/add/${TO_DO_CODE}`, { data: { uniqueName: 'V-2', label: 'x', priority: 5 } }),
    );
    const change = (data: object) =>
      call(`/update/${TO_DO_CODE}`, { data: { typedId: t.typedId, ...data }, oldValues: { version: 0 } });
    expectError(await change({ status: null }), 400, -4, 'status');
    expectError(await change({ status: 'done' }), 400, -4, 'status');
    const byName = adv(eq('uniqueName', 'V-2'));
    const bump = await call(`/massedit/${TO_DO_CODE}`, {
      filterCriteria: byName,
      massEditRecords: [{ fieldName: 'priority', massEditOperator: '+', fieldValue: 1 }],
    });
    expectError(bump, 400, -4, 'priority');
    const clear = await call(`/massedit/${TO_DO_CODE}`, {
      filterCriteria: byName,
      massEditRecords: [{ fieldName: 'status', massEditOperator: 'null' }],
    });
    expectError(clear, 400, -4);
    const [still] = okData(await call(`/fetch/${TO_DO_CODE}/${t.id}`));
    assert.deepEqual([still.priority, still.status, still.version], [5, 'OPEN', 0]);
  });

  test('reading is open to every user; writing needs the type’s permission', async () => {
    okData(await call(`/add/${TO_DO_CODE}`, { data: { uniqueName: 'P-1', label: 'read me' } }));
    const writes: [string, object][] = [
      ['PDESC', { sku: 'P-1', language: 'de' }],
      ['CDESC', { customerId: 'P-1', language: 'de' }],
      ['PR', { sku: 'P-1', relationType: 'SUBSTITUTE', targetSku: 'P-2' }],
      ['PXREF', { sku: 'P-1', referenceType: 'EAN', externalId: '1' }],
      [TO_DO_CODE, { uniqueName: 'P-2', label: 'x' }],
    ];
    for (const [code, data] of writes) {
      expectError(await call(`/add/${code}`, { data }, plain), 403, -3);
      expectError(await call(`/integrate/${code}`, [{ data }], plain), 403, -3);
      const file = await loadFile(
        code,
        `${Object.keys(data).join(',')}\n${Object.values(data).join(',')}\n`,
        {},
        plain,
      );
      assert.equal(file.status, 403, JSON.stringify(file.body));
      okData(await call(`/fetch/${code}`, {}, plain));
    }
    const visible = okData(await call(`/fetch/${TO_DO_CODE}`, { data: adv(eq('uniqueName', 'P-1')) }, plain));
    assert.equal(visible.length, 1);
    // The price shop role and the integration role may write to-do items; the plain user may not.
    okData(await call(`/add/${TO_DO_CODE}`, { data: { uniqueName: 'P-3', label: 'by shop' } }, shop));
    okData(
      await call(`/add/${TO_DO_CODE}`, { data: { uniqueName: 'P-4', label: 'by integrator' } }, integrator),
    );
    expectError(await call('/delete/' + TO_DO_CODE, { data: { uniqueName: 'P-3' } }, plain), 403, -3);
    const anon = await h.call(`/fetch/${TO_DO_CODE}`, { body: {} });
    assert.equal(anon.status, 401);
  });

  test("a customer's user groups apply to its descriptions", async () => {
    okData(
      await call('/integrate/C', [
        { data: { customerId: 'HID-1', name: 'hidden', userGroupViewDetails: 'SECRET' } },
        { data: { customerId: 'RO-1', name: 'read only', userGroupEdit: 'SECRET' } },
        { data: { customerId: 'OPEN-1', name: 'open' } },
      ]),
    );
    const [hidden] = okData(
      await call('/add/CDESC', { data: { customerId: 'HID-1', language: 'de', label: 'geheim' } }),
    );
    okData(await call('/add/CDESC', { data: { customerId: 'RO-1', language: 'de', label: 'lesbar' } }));
    okData(await call('/add/CDESC', { data: { customerId: 'OPEN-1', language: 'de', label: 'offen' } }));
    // A description of no stored customer is scoped by CDESC alone.
    okData(await call('/add/CDESC', { data: { customerId: 'NONE-1', language: 'de', label: 'lose' } }));

    const seen = async (who: Who) =>
      okData(
        await call(
          '/fetch/CDESC',
          {
            data: adv({
              fieldName: 'customerId',
              operator: 'inSet',
              value: ['HID-1', 'RO-1', 'OPEN-1', 'NONE-1'],
            }),
            sortBy: 'customerId',
          },
          who,
        ),
      ).map((r) => r.customerId);
    assert.deepEqual(await seen(admin), ['HID-1', 'NONE-1', 'OPEN-1', 'RO-1']);
    assert.deepEqual(await seen(integrator), ['NONE-1', 'OPEN-1', 'RO-1']);
    assert.deepEqual(await seen(plain), ['NONE-1', 'OPEN-1', 'RO-1']);
    expectError(await call(`/fetch/CDESC/${hidden.id}`, undefined, integrator), 404, -1);
    expectError(await call(`/fetch/CDESC/${hidden.id}/history`, undefined, integrator), 404, -1);
    // Its history rows carry the customer's view group, so /history.fetch hides them alike.
    const groups = await h.db.query<{ g: string | null }>(
      `SELECT user_group_view_details AS g FROM record_history
        WHERE partition_id = $1 AND type_code = 'CDESC' AND record_id = $2`,
      [h.partitionId, hidden.id],
    );
    assert.deepEqual(
      groups.rows.map((r) => r.g),
      ['SECRET'],
    );

    // Writing follows the customer's edit group: read-only and hidden customers are refused.
    const add = (customerId: string) =>
      call('/add/CDESC', { data: { customerId, language: 'fr', label: 'x' } }, integrator);
    expectError(await add('HID-1'), 403, -3);
    expectError(await add('RO-1'), 403, -3);
    okData(await add('OPEN-1'));
    // A mass edit matching a description he may not change (RO-1) is refused whole; what he does not
    // see (HID-1) is no match.
    const massedit = (filterCriteria: unknown) =>
      call(
        '/massedit/CDESC',
        {
          filterCriteria,
          massEditRecords: [{ fieldName: 'label', massEditOperator: '=', fieldValue: 'changed' }],
        },
        integrator,
      );
    expectError(await massedit(adv(eq('language', 'de'))), 403, -3);
    const edited = await massedit({
      _constructor: 'AdvancedCriteria',
      operator: 'and',
      criteria: [eq('language', 'de'), { fieldName: 'customerId', operator: 'notEqual', value: 'RO-1' }],
    });
    assert.equal(edited.status, 200, edited.text);
    const labels = okData(
      await call('/fetch/CDESC', { data: adv(eq('language', 'de')), sortBy: 'customerId' }),
    );
    assert.deepEqual(
      labels
        .filter((r) => ['HID-1', 'RO-1', 'OPEN-1', 'NONE-1'].includes(r.customerId))
        .map((r) => [r.customerId, r.label]),
      [
        ['HID-1', 'geheim'],
        ['NONE-1', 'changed'],
        ['OPEN-1', 'changed'],
        ['RO-1', 'lesbar'],
      ],
    );
    // A load matching a description the integrator may not change does not change it.
    const file = assertOk(
      await loadFile(
        'CDESC',
        'customerId,language,label\nHID-1,de,leaked\nRO-1,de,over\n',
        { detectJoinFields: 'true' },
        integrator,
      ),
    )[0];
    assert.deepEqual([file.loadedRecords, file.invalidRecords], [0, 2]);
    const [still] = okData(await call(`/fetch/CDESC/${hidden.id}`));
    assert.equal(still.label, 'geheim');

    // New descriptions by a load, as by /add: refused for hidden and read-only customers, named.
    for (const join of [{}, { detectJoinFields: true }]) {
      const lang = 'detectJoinFields' in join ? 'it' : 'es';
      const loaded = okData(
        await call(
          '/loaddata/CDESC',
          {
            data: {
              header: ['customerId', 'language', 'label'],
              data: [
                ['HID-1', lang, 'leaked'],
                ['RO-1', lang, 'over'],
                ['OPEN-1', lang, 'fine'],
              ],
              options: join,
            },
          },
          integrator,
        ),
      )[0];
      assert.deepEqual([loaded.inserted, loaded.invalid], [1, 2], JSON.stringify(loaded));
      assert.deepEqual(
        loaded.errors.map((e: { row: number; field: string }) => [e.row, e.field]),
        [
          [0, 'customerId'],
          [1, 'customerId'],
        ],
      );
      const stored = okData(await call('/fetch/CDESC', { data: adv(eq('language', lang)) }));
      assert.deepEqual(
        stored.map((r) => r.customerId),
        ['OPEN-1'],
      );
    }
  });

  test('another partition sees none of the rows', async () => {
    const mine: [string, object][] = [
      ['PDESC', { sku: 'ISO-1', language: 'de' }],
      ['CDESC', { customerId: 'ISO-1', language: 'de' }],
      ['PR', { sku: 'ISO-1', relationType: 'SUBSTITUTE', targetSku: 'ISO-2' }],
      ['PXREF', { sku: 'ISO-1', referenceType: 'EAN', externalId: 'ISO' }],
      [TO_DO_CODE, { uniqueName: 'ISO-1', label: 'mine' }],
    ];
    for (const [code, data] of mine) {
      const [row] = okData(await call(`/add/${code}`, { data }));
      assert.equal(okData(await call(`/fetch/${code}`, {}, admin, other)).length, 0, code);
      expectError(await call(`/fetch/${code}/${row.id}`, undefined, admin, other), 404, -1);
      const update = { data: { typedId: row.typedId, attribute1: 'x' }, oldValues: { version: 0 } };
      expectError(await call(`/update/${code}`, update, admin, other), 404, -1);
      expectError(await call(`/delete/${code}`, { data: { typedId: row.typedId } }, admin, other), 404, -1);
      // The same business key is free in the other partition.
      okData(await call(`/add/${code}`, { data }, admin, other));
      assert.equal(okData(await call(`/fetch/${code}/${row.id}`))[0].version, 0);
    }
  });
});
