// Data change requests held to what they say, over HTTP on both databases: an item naming a record
// by typedId/id and by a business key of another record is a -4 naming the key field (products,
// two-key lookup values, condition record items with a date key); an UPDATE item with no value, a
// lookup value naming another table and a DCR type of products naming a lookup table are -4; a
// submit refused with 403 leaves the DCR as it was; a DCR type's `fields` narrowed after items and
// mass changes were proposed binds them when the DCR is applied (sync, async and by approval); the
// submitter of a DCR approved through a workflow whose apply fails is told so.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, ADMIN_PASSWORD, startHarness, uniqueName, type Harness } from '../helpers/app.ts';
import { runnerFor } from '../jobs/helpers.ts';
import type { JobRunner } from '../../src/jobs/runner.ts';
import { okData, expectError } from '../helpers/envelope.ts';

type Who = { user: string; password: string };
type Obj = Record<string, any>;
const admin: Who = { user: ADMIN, password: ADMIN_PASSWORD };
const editor: Who = { user: 'strict_editor', password: 'editor-password-1' };
const approver: Who = { user: 'strict_approver', password: 'approver-password-1' };

describe('data change requests: strict items, refused submits, narrowed DCR types', () => {
  let h: Harness;
  let runner: JobRunner;
  const call = (path: string, body?: unknown, who: Who = admin) =>
    h.call(path, { basic: who, ...(body === undefined ? {} : { body }) });
  const product = async (sku: string, extra: Obj = {}) =>
    okData(await call('/add/P', { data: { sku, label: `label ${sku}`, ...extra } }))[0];
  const bySku = async (sku: string) =>
    okData(await call('/fetch/P', { data: { sku }, textMatchStyle: 'exactCase' }))[0];
  const newDcr = async (dcrType: string, who: Who = admin) =>
    okData(await call('/dcrmanager.add', { data: { dcrType, label: 'strict' } }, who))[0];
  const dcrOf = async (id: number) => okData(await call('/fetch/DCR', { data: { id } }))[0];

  async function waitJob(id: number): Promise<Obj> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const [job] = okData(await call(`/admin.fetchjst/${id}`));
      if (['FINISHED', 'FAILED', 'CANCELLED'].includes(job.status)) return job;
      if (Date.now() > deadline) assert.fail(`job ${id} still ${job.status}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  before(async () => {
    h = await startHarness();
    runner = runnerFor(h).start();
    await h.newUser(editor.user, editor.password, ['ADMIN_WO_USER_MGMT'], ['strict-g1']);
    await h.newUser(approver.user, approver.password, ['WF_ADMIN']);
    okData(
      await call('/add/DCRT', {
        data: { uniqueName: 'strictP', targetType: 'P', fields: 'label,attribute3' },
      }),
    );
  });
  after(async () => {
    await runner.stop();
    await h.close();
  });

  test('products: a sku naming another record than typedId/id is a -4 naming sku', async () => {
    const a = await product('SK-A');
    await product('SK-B');
    const dcr = await newDcr('strictP');
    const propose = (data: unknown) => call(`/dcrmanager.add/${dcr.id}`, { data });
    expectError(await propose({ sku: 'SK-B', typedId: a.typedId, label: 'x' }), 400, -4, 'sku');
    expectError(await propose({ sku: 'SK-B', id: a.id, label: 'x' }), 400, -4, 'sku');
    const r = await propose([
      { sku: 'SK-B', label: 'fine' },
      { changeType: 'DELETE', sku: 'SK-B', id: a.id },
    ]);
    expectError(r, 400, -4, '1.sku');
    assert.match(r.body.response.data, /names another record than typedId/);
    // An ADD makes a record: a typedId beside its key named an existing one.
    expectError(
      await propose({ changeType: 'ADD', sku: 'SK-NEW', typedId: a.typedId, label: 'n' }),
      400,
      -4,
      'typedId',
    );
    // The same record named both ways is fine.
    const [item] = okData(await propose({ sku: 'SK-A', typedId: a.typedId, label: 'same' }));
    assert.deepEqual(item.targetKey, ['SK-A']);
    assert.equal(okData(await call(`/dcrmanager.submit/${dcr.id}`))[0].status, 'APPLIED');
    assert.equal((await bySku('SK-A')).label, 'same');
    assert.equal((await bySku('SK-B')).label, 'label SK-B');
  });

  test('two-key lookup values and condition record items: each key field is checked', async () => {
    const table = uniqueName('mx');
    const [t] = okData(
      await call('/lookuptablemanager.add', {
        data: { uniqueName: table, label: table, type: 'MATRIX2', valueType: 'STRING' },
      }),
    );
    const [v1, v2] = okData(
      await call(`/lookuptablemanager.add/${t.id}`, [
        { data: { key1: 'EU', key2: 'x', attribute1: 'a' } },
        { data: { key1: 'EU', key2: 'y', attribute1: 'b' } },
      ]),
    );
    assert.ok(v1.id && v2.id);
    okData(await call('/add/DCRT', { data: { uniqueName: table, targetType: 'MLTV2', lookupTable: table } }));
    const mx = await newDcr(table);
    expectError(
      await call(`/dcrmanager.add/${mx.id}`, { data: { id: v1.id, key1: 'EU', key2: 'y', attribute1: 'z' } }),
      400,
      -4,
      'key2',
    );
    okData(
      await call(`/dcrmanager.add/${mx.id}`, { data: { id: v1.id, key1: 'EU', key2: 'x', attribute1: 'z' } }),
    );

    const [set] = okData(
      await call('/add/CRCS', { data: { uniqueName: uniqueName('set'), label: 'set', keySize: 2 } }),
    );
    const item = (key1: string, validFrom: string) => ({
      conditionRecordSetId: set.id,
      key1,
      key2: 'P1',
      validFrom,
      validTo: '2026-12-31',
      conditionValue: 1,
    });
    const [a] = okData(await call('/add/CRCI2', { data: item('K1', '2026-01-01') }));
    await call('/add/CRCI2', { data: item('K2', '2026-01-01') });
    okData(await call('/add/DCRT', { data: { uniqueName: 'strictC', targetType: 'CRCI2' } }));
    const cr = await newDcr('strictC');
    const propose = (data: unknown) => call(`/dcrmanager.add/${cr.id}`, { data });
    expectError(
      await propose({ ...item('K2', '2026-01-01'), typedId: a.typedId, conditionValue: 5 }),
      400,
      -4,
      'key1',
    );
    expectError(
      await propose({ ...item('K1', '2026-02-01'), typedId: a.typedId, conditionValue: 5 }),
      400,
      -4,
      'validFrom',
    );
    const [ok] = okData(
      await propose({ ...item('K1', '2026-01-01'), typedId: a.typedId, conditionValue: 5 }),
    );
    assert.equal(ok.targetId, a.id);
  });

  test('an UPDATE item with no value, a lookup value naming another table: -4 naming the field', async () => {
    await product('EMPTY-1');
    const other = await product('EMPTY-2');
    const dcr = await newDcr('strictP');
    const propose = (data: unknown) => call(`/dcrmanager.add/${dcr.id}`, { data });
    let r = await propose({ sku: 'EMPTY-1' });
    expectError(r, 400, -4, 'sku');
    assert.match(r.body.response.data, /names no field to change/);
    expectError(
      await propose([{ sku: 'EMPTY-1', label: 'x' }, { typedId: other.typedId }]),
      400,
      -4,
      '1.typedId',
    );
    // Server fields change nothing either.
    expectError(await propose({ sku: 'EMPTY-1', version: 7 }), 400, -4, 'sku');

    const table = uniqueName('rt');
    const [t] = okData(
      await call('/lookuptablemanager.add', {
        data: { uniqueName: table, label: table, type: 'SIMPLE', valueType: 'REAL' },
      }),
    );
    okData(await call(`/lookuptablemanager.add/${t.id}`, { data: { name: 'a', value: 1 } }));
    okData(await call('/add/DCRT', { data: { uniqueName: table, targetType: 'LTV', lookupTable: table } }));
    const lt = await newDcr(table);
    r = await call(`/dcrmanager.add/${lt.id}`, { data: { name: 'a', value: 2, lookupTableId: t.id + 99 } });
    expectError(r, 400, -4, 'lookupTableId');
    expectError(
      await call(`/dcrmanager.add/${lt.id}`, { data: { name: 'a', value: 2, tableId: `${t.id}9` } }),
      400,
      -4,
      'tableId',
    );
    // Its own table is what the item is about anyway: accepted.
    const [item] = okData(
      await call(`/dcrmanager.add/${lt.id}`, {
        data: { name: 'a', value: 2, lookupTableId: t.id, tableId: t.id },
      }),
    );
    assert.deepEqual(item.values, { value: 2 });
  });

  test('a DCR type of products names no lookup table (add, update)', async () => {
    const r = await call('/add/DCRT', {
      data: { uniqueName: 'withTable', targetType: 'P', lookupTable: 'Rates' },
    });
    expectError(r, 400, -4, 'lookupTable');
    const [made] = okData(await call('/add/DCRT', { data: { uniqueName: 'noTable', targetType: 'P' } }));
    expectError(
      await call('/update/DCRT', { data: { typedId: made.typedId, lookupTable: 'Rates' } }),
      400,
      -4,
      'lookupTable',
    );
    okData(await call('/update/DCRT', { data: { typedId: made.typedId, lookupTable: null, label: 'ok' } }));
    assert.equal(okData(await call('/fetch/DCRT', { data: { uniqueName: 'noTable' } }))[0].lookupTable, null);
  });

  test('a submit refused with 403 (a record hidden from the submitter) leaves the DCR as it was', async () => {
    await product('HIDE-1', { userGroupViewDetails: 'strict-secret', attribute3: 1 });
    await product('SEEN-2', { attribute3: 1 });
    const dcr = await newDcr('strictP');
    okData(
      await call(`/dcrmanager.add/${dcr.id}`, {
        data: [
          { sku: 'HIDE-1', label: 'h' },
          { sku: 'SEEN-2', label: 's' },
        ],
      }),
    );
    const before = await dcrOf(dcr.id);
    expectError(await call(`/dcrmanager.submit/${dcr.id}`, {}, editor), 403, -3);
    const now = await dcrOf(dcr.id);
    for (const f of ['status', 'workflowStatus', 'submitDate', 'lastUpdateBy', 'version', 'messages'])
      assert.deepEqual(now[f], before[f], f);
    assert.equal(now.status, 'DRAFT');
    assert.equal((await bySku('SEEN-2')).label, 'label SEEN-2');
    // The admin, who sees both, applies it.
    assert.equal(okData(await call(`/dcrmanager.submit/${dcr.id}`))[0].status, 'APPLIED');
  });

  test('a submit changing a record outside the submitter edit groups is a 403 naming the item; the DCR stays as it was', async () => {
    await product('EDIT-G', { userGroupEdit: 'strict-other', attribute3: 1 });
    const dcr = await newDcr('strictP');
    const [item] = okData(
      await call(`/dcrmanager.add/${dcr.id}`, { data: { sku: 'EDIT-G', label: 'by admin' } }),
    );
    const before = await dcrOf(dcr.id);
    const r = await call(`/dcrmanager.submit/${dcr.id}`, {}, editor);
    expectError(r, 403, -3);
    assert.match(r.body.response.errors[item.typedId].errorMessage, /outside the submitter's edit groups/);
    const now = await dcrOf(dcr.id);
    for (const f of ['status', 'workflowStatus', 'version', 'messages'])
      assert.deepEqual(now[f], before[f], f);
    assert.equal((await bySku('EDIT-G')).label, 'label EDIT-G');
    assert.equal(okData(await call(`/dcrmanager.submit/${dcr.id}`))[0].status, 'APPLIED');
  });

  test('every submit path refuses, with nothing changed, a DCR whose targets the submitter may not write: with and without a workflow (sixth audit)', async () => {
    await product('PATH-H', { userGroupViewDetails: 'strict-secret', attribute3: 1 });
    await product('PATH-E', { userGroupEdit: 'strict-other', attribute3: 1 });
    const submits: [string, (id: number) => ReturnType<typeof call>][] = [
      ['own', (id) => call(`/dcrmanager.submit/${id}`, {}, editor)],
      ['generic', (id) => call(`/workflowsmanager.submit/${id}.DCR`, {}, editor)],
      ['async', (id) => call(`/dcrmanager.submit/${id}/async`, {}, editor)],
    ];
    const [wfd] = okData(
      await call('/add/WFD', {
        data: {
          uniqueName: uniqueName('wf'),
          approvableType: 'DCR',
          condition: 'label == "with-wf"',
          steps: [{ name: 'Managers', approverUsers: [approver.user], rule: 'ANY' }],
        },
      }),
    );
    try {
      for (const label of ['strict', 'with-wf']) {
        for (const [sku, field] of [
          ['PATH-H', undefined],
          ['PATH-E', 'item'],
        ] as const) {
          for (const [path, submit] of submits) {
            const [dcr] = okData(await call('/dcrmanager.add', { data: { dcrType: 'strictP', label } }));
            const [item] = okData(await call(`/dcrmanager.add/${dcr.id}`, { data: { sku, label: 'x' } }));
            const before = await dcrOf(dcr.id);
            const r = await submit(dcr.id);
            const what = `${label} ${sku} ${path}`;
            expectError(r, 403, -3);
            if (field) assert.ok(r.body.response.errors[item.typedId], `${what}: ${JSON.stringify(r.body)}`);
            const now = await dcrOf(dcr.id);
            for (const f of ['status', 'workflowStatus', 'version', 'messages'])
              assert.deepEqual(now[f], before[f], `${what}: ${f}`);
            const workflows = okData(
              await call('/workflowsmanager.fetch', { data: { approvableTypedId: `${dcr.id}.DCR` } }),
            );
            assert.equal(workflows.length, 0, what);
          }
        }
      }
    } finally {
      okData(await call('/delete/WFD', { data: { typedId: wfd.typedId } }));
    }
  });

  test('/workflowsmanager.submit of a DCR approved at once whose apply fails answers the error after committing FAILED, as /dcrmanager.submit (sixth audit)', async () => {
    const moved = await product('WFS-1', { attribute3: 1 });
    const dcr = await newDcr('strictP', editor);
    const [item] = okData(
      await call(`/dcrmanager.add/${dcr.id}`, { data: { sku: 'WFS-1', label: 'proposed' } }, editor),
    );
    okData(await call('/update/P', { data: { id: moved.id, attribute3: 2, version: moved.version } }));
    const r = await call(`/workflowsmanager.submit/${dcr.id}.DCR`, {}, editor);
    expectError(r, 409, -1);
    assert.match(r.body.response.errors[item.typedId].errorMessage, /proposed on version/);
    const now = await dcrOf(dcr.id);
    assert.deepEqual([now.status, now.workflowStatus], ['FAILED', 'APPROVED']);
    assert.equal((await bySku('WFS-1')).label, 'label WFS-1');
    // Answered, not also notified (as the own submit).
    const told = okData(await call('/notification.list', { data: { source: `${dcr.id}.DCR` } }, editor));
    assert.equal(told.length, 0, JSON.stringify(told));
  });

  test("a DCR type's fields narrowed after proposing bind the DCR at submit (sync, async, approval)", async () => {
    okData(
      await call('/add/DCRT', {
        data: { uniqueName: 'narrowing', targetType: 'P', fields: 'label,attribute3' },
      }),
    );
    const setFields = async (fields: string) =>
      okData(await call('/update/DCRT', { data: { uniqueName: 'narrowing', fields } }));
    const propose = async (n: number) => {
      await product(`NAR-${n}`, { attribute3: 0 });
      await product(`NARM-${n}`, { attribute3: 0 });
      const dcr = await newDcr('narrowing');
      const [item] = okData(
        await call(`/dcrmanager.add/${dcr.id}`, { data: { sku: `NAR-${n}`, label: 'l', attribute3: n } }),
      );
      const [mass] = okData(
        await call(`/dcrmanager.addmassop/${dcr.id}`, {
          data: {
            filterCriteria: { sku: `NARM-${n}` },
            massEditRecords: [{ fieldName: 'attribute3', massEditOperator: '=', fieldValue: n }],
          },
        }),
      );
      return { dcr, item, mass };
    };
    const untouched = async (n: number) => {
      assert.equal((await bySku(`NAR-${n}`)).label, `label NAR-${n}`);
      assert.equal(Number((await bySku(`NARM-${n}`)).attribute3), 0);
    };

    // Synchronous submit: -4 naming the item and the mass change, nothing applied, the DCR FAILED.
    const sync = await propose(1);
    await setFields('label');
    const r = await call(`/dcrmanager.submit/${sync.dcr.id}`);
    expectError(r, 400, -4, `${sync.item.id}.DCRI.attribute3`);
    assert.ok(r.body.response.errors[`${sync.mass.id}.DCRM.attribute3`], r.text);
    assert.equal(r.body.response.errors[`${sync.item.id}.DCRI.label`], undefined);
    await untouched(1);
    assert.equal((await dcrOf(sync.dcr.id)).status, 'FAILED');

    // Asynchronous submit: the job fails, nothing applied.
    await setFields('label,attribute3');
    const async_ = await propose(2);
    await setFields('label');
    const [job] = okData(await call(`/dcrmanager.submit/${async_.dcr.id}/async`));
    assert.equal((await waitJob(job.jstId)).status, 'FAILED');
    await untouched(2);
    assert.equal((await dcrOf(async_.dcr.id)).status, 'FAILED');

    // Approved through a workflow: the approval stands, the DCR FAILED, nothing applied.
    await setFields('label,attribute3');
    const wf = await propose(3);
    const [wfd] = okData(
      await call('/add/WFD', {
        data: {
          uniqueName: uniqueName('wf'),
          approvableType: 'DCR',
          condition: 'items >= 1',
          steps: [{ name: 'Managers', approverUsers: [approver.user], rule: 'ANY' }],
        },
      }),
    );
    try {
      assert.equal(okData(await call(`/dcrmanager.submit/${wf.dcr.id}`))[0].status, 'SUBMITTED');
      await setFields('label');
      const active = okData(await call('/workflowsmanager.fetch/active', {}, approver));
      const pending = active.find((w: Obj) => w.approvableTypedId === `${wf.dcr.id}.DCR`);
      assert.ok(pending, JSON.stringify(active));
      const [done] = okData(
        await call(
          `/workflowsmanager.approve/${pending.id}`,
          { data: { comment: 'ok' }, oldValues: { version: pending.version } },
          approver,
        ),
      );
      assert.equal(done.workflowStatus, 'APPROVED');
      await untouched(3);
      assert.equal((await dcrOf(wf.dcr.id)).status, 'FAILED');
      // The submitter is told that the approved DCR was not applied, not only that it was approved.
      const told = okData(await call('/notification.list', { data: { source: `${wf.dcr.id}.DCR` } }));
      assert.equal(told.length, 1, JSON.stringify(told));
      assert.equal(told[0].status, 'ERROR');
      assert.match(told[0].title, new RegExp(`Not applied: ${wf.dcr.uniqueName}`));
      assert.match(told[0].message, /fields the DCR type no longer lets change/);
    } finally {
      // Later submits run without a workflow.
      okData(await call('/delete/WFD', { data: { typedId: wfd.typedId } }));
    }
    // Widened again, the DCR is submitted again and applied.
    await setFields('label,attribute3');
    assert.equal(okData(await call(`/dcrmanager.submit/${sync.dcr.id}`))[0].status, 'APPLIED');
    assert.equal(Number((await bySku('NARM-1')).attribute3), 1);
  });

  test('bodies taken to the letter: one DCR per add, typed DCR type fields, an import names a table only of lookup values', async () => {
    const label = uniqueName('two');
    const two = await call('/dcrmanager.add', {
      data: [
        { dcrType: 'strictP', label },
        { dcrType: 'nope', label },
      ],
    });
    expectError(two, 400, -4, 'data');
    assert.equal(okData(await call('/fetch/DCR', { data: { label } })).length, 0);
    // `fields` as a JSON number or boolean is its text, checked as a name: refused, not stored.
    for (const fields of [12, true]) {
      expectError(
        await call('/add/DCRT', { data: { uniqueName: uniqueName('typed'), targetType: 'P', fields } }),
        400,
        -4,
        'fields',
      );
    }
    expectError(
      await call('/importmanager.add', { data: { targetType: 'P', lookupTable: 'doesnotexist' } }),
      400,
      -4,
      'lookupTable',
    );
    const noTable = await call('/importmanager.add', { data: { targetType: 'LTV' } });
    expectError(noTable, 400, -4, 'lookupTable');
    assert.match(noTable.body.response.errors.lookupTable.errorMessage, /is required/);
  });

  test('a record deleted under a DCR: changesOnly leaves its items out; updating one of a FAILED DCR is a 404', async () => {
    await product('GONE-U', { attribute3: 1 });
    await product('GONE-D', { attribute3: 1 });
    await product('KEPT-U', { attribute3: 1 });
    const dcr = await newDcr('strictP');
    const items = okData(
      await call(`/dcrmanager.add/${dcr.id}`, {
        data: [
          { sku: 'GONE-U', label: 'u' },
          { changeType: 'DELETE', sku: 'GONE-D' },
          { sku: 'KEPT-U', label: 'k' },
        ],
      }),
    );
    for (const sku of ['GONE-U', 'GONE-D']) {
      okData(await call('/delete/P', { data: { typedId: (await bySku(sku)).typedId } }));
    }
    const changed = okData(await call(`/dcrmanager.fetch/${dcr.id}/changesOnly`, {}));
    assert.deepEqual(
      changed.map((i: Obj) => i.typedId),
      [items[2].typedId],
    );
    expectError(await call(`/dcrmanager.submit/${dcr.id}`), 409, -1);
    assert.equal((await dcrOf(dcr.id)).status, 'FAILED');
    const gone = await call(`/dcrmanager.update/${dcr.id}`, {
      data: { typedId: items[0].typedId, label: 'again' },
    });
    expectError(gone, 404, -1);
    assert.match(gone.body.response.data, /was deleted since it was proposed: delete the item/);
    // The item whose record stands is proposed on it as it stands now.
    okData(await call(`/dcrmanager.update/${dcr.id}`, { data: { typedId: items[2].typedId, label: 'k2' } }));
  });

  test('updatemassop: a null filter or null operations leave them as they are; asyncSubmitDCRThreshold takes any number', async () => {
    await product('NUL-1', { attribute3: 1 });
    await product('NUL-2', { attribute3: 1 });
    const dcr = await newDcr('strictP');
    const filter = { sku: 'NUL-1' };
    const ops = [{ fieldName: 'label', massEditOperator: '=', fieldValue: 'mass' }];
    const [op] = okData(
      await call(`/dcrmanager.addmassop/${dcr.id}`, {
        data: { filterCriteria: filter, massEditRecords: ops },
      }),
    );
    const [kept] = okData(
      await call(`/dcrmanager.updatemassop/${dcr.id}`, {
        data: { typedId: op.typedId, label: 'named', filterCriteria: null, massEditRecords: null },
        oldValues: { version: op.version },
      }),
    );
    assert.deepEqual([kept.label, kept.filterCriteria, kept.massEditRecords], ['named', filter, ops]);
    // A threshold of 1.5: a DCR of two items is applied by a job.
    okData(await call('/add/ACO', { data: { uniqueName: 'asyncSubmitDCRThreshold', value: '1.5' } }));
    try {
      okData(
        await call(`/dcrmanager.add/${dcr.id}`, {
          data: [
            { sku: 'NUL-1', label: 'item' },
            { sku: 'NUL-2', label: 'item' },
          ],
        }),
      );
      const [r] = okData(await call(`/dcrmanager.submit/${dcr.id}`));
      assert.equal(typeof r.jstId, 'number', JSON.stringify(r));
      assert.equal((await waitJob(r.jstId)).status, 'FINISHED');
    } finally {
      await h.db.query(
        `DELETE FROM advanced_config WHERE partition_id = $1 AND unique_name = 'asyncSubmitDCRThreshold'`,
        [h.partitionId],
      );
    }
  });
});
