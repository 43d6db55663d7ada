// Data change requests on extension tables and overlapping condition record items, over HTTP on both
// databases: a PX item is checked when proposed (and updated) by the attribute meta of the table its
// `name` names, and its values, originalValues and changes are answered typed by that meta, as
// /fetch/PX answers the row (another table's attributes stay text); two ADD items of one DCR whose
// validities overlap are refused naming the other DCR item, not the rolled-back CRCI it wrote
// (synchronous and asynchronous submit), an item changed by the DCR as that DCR item leaves it.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, ADMIN_PASSWORD, startHarness, uniqueName, type Harness } from '../helpers/app.ts';
import { runnerFor } from '../jobs/helpers.ts';
import type { JobRunner } from '../../src/jobs/runner.ts';
import { okData, expectError } from '../helpers/envelope.ts';

type Obj = Record<string, any>;
const admin = { user: ADMIN, password: ADMIN_PASSWORD };

describe('data change requests: extension tables typed by their meta, overlaps named by item', () => {
  let h: Harness;
  let runner: JobRunner;
  const call = (path: string, body?: unknown) =>
    h.call(path, { basic: admin, ...(body === undefined ? {} : { body }) });
  const newDcr = async (dcrType: string) =>
    okData(await call('/dcrmanager.add', { data: { dcrType, label: 'ext' } }))[0];
  const pxRow = async (name: string, sku: string) =>
    okData(await call('/fetch/PX', { data: { name, sku }, textMatchStyle: 'exactCase' }))[0];

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
    okData(
      await call('/add/PXAM', { data: { name: 'Costs', fieldName: 'attribute1', fieldType: 'NUMERIC' } }),
    );
    okData(await call('/add/PXAM', { data: { name: 'Costs', fieldName: 'attribute2', fieldType: 'DATE' } }));
    for (const sku of ['A-1', 'A-2', 'A-3'])
      okData(await call('/add/P', { data: { sku, label: `label ${sku}` } }));
    okData(await call('/add/PX', { data: { name: 'Costs', sku: 'A-1', attribute1: '2.25' } }));
    okData(await call('/add/PX', { data: { name: 'Other', sku: 'A-1', attribute1: 'free text' } }));
    okData(await call('/add/DCRT', { data: { uniqueName: 'pxd', targetType: 'PX' } }));
    okData(await call('/add/DCRT', { data: { uniqueName: 'crci2', targetType: 'CRCI2' } }));
  });
  after(async () => {
    await runner.stop();
    await h.close();
  });

  test('PX mass changes: typed by the table the filter names, when stored', async () => {
    const dcr = await newDcr('pxd');
    const massop = (name: string, fieldValue: unknown) =>
      call(`/dcrmanager.addmassop/${dcr.id}`, {
        data: {
          filterCriteria: {
            _constructor: 'AdvancedCriteria',
            operator: 'and',
            criteria: [{ fieldName: 'name', operator: 'equals', value: name }],
          },
          massEditRecords: [{ fieldName: 'attribute1', massEditOperator: '=', fieldValue }],
        },
      });
    const bad = await massop('Costs', 'abc');
    expectError(bad, 400, -4);
    assert.match(JSON.stringify(bad.body.response.errors), /not a number/);
    okData(await massop('Costs', 4.5));
    // Another table's attributes are text.
    okData(await massop('Other', 'abc'));
  });

  test('PX items: checked when proposed by their table meta, answered typed', async () => {
    const dcr = await newDcr('pxd');
    const propose = (data: unknown) => call(`/dcrmanager.add/${dcr.id}`, { data });
    const bad = await propose({ name: 'Costs', sku: 'A-1', attribute1: 'abc' });
    expectError(bad, 400, -4, 'attribute1');
    assert.match(bad.body.response.errors.attribute1.errorMessage, /not a number/);
    const badDate = await propose([
      { name: 'Costs', sku: 'A-1', attribute1: 3 },
      { changeType: 'ADD', name: 'Costs', sku: 'A-2', attribute2: '2024-02-30' },
    ]);
    expectError(badDate, 400, -4, '1.attribute2');
    // Nothing of a refused batch is stored.
    assert.equal(okData(await call(`/dcrmanager.fetch/${dcr.id}`, {})).length, 0);

    const items = okData(
      await propose([
        { name: 'Costs', sku: 'A-1', attribute1: '3.5' },
        { changeType: 'ADD', name: 'Costs', sku: 'A-2', attribute1: 7, attribute2: '2024-02-29' },
        // Another table's attributes are text (no meta types them).
        { name: 'Other', sku: 'A-1', attribute1: 'abc' },
      ]),
    );
    assert.equal((await pxRow('Costs', 'A-1')).attribute1, 2.25);
    assert.deepEqual(
      [items[0].values.attribute1, items[0].originalValues.attribute1, items[1].values.attribute1],
      [3.5, 2.25, 7],
    );
    assert.equal(items[1].values.attribute2, '2024-02-29');
    assert.deepEqual([items[2].values.attribute1, items[2].originalValues.attribute1], ['abc', 'free text']);

    // Read back: typed item by item, also when the fields asked for leave out targetKey.
    const all = okData(await call(`/dcrmanager.fetch/${dcr.id}`, { sortBy: 'id' }));
    assert.deepEqual(
      all.map((i: Obj) => i.values.attribute1),
      [3.5, 7, 'abc'],
    );
    const arrays = okData(
      await call(`/dcrmanager.fetch/${dcr.id}`, { valueFields: ['id', 'values'], sortBy: 'id' }),
    );
    assert.deepEqual(
      arrays.map((r: unknown[]) => [r.length, (r[1] as Obj).attribute1]),
      [
        [2, 3.5],
        [2, 7],
        [2, 'abc'],
      ],
    );
    const objects = okData(
      await call(`/dcrmanager.fetch/${dcr.id}`, { resultFields: ['originalValues'], sortBy: 'id' }),
    );
    assert.deepEqual(Object.keys(objects[0]), ['originalValues']);
    assert.equal(objects[0].originalValues.attribute1, 2.25);
    const changes = okData(await call(`/dcrmanager.fetch/${dcr.id}/changesOnly`, { sortBy: 'id' }));
    assert.deepEqual(changes[0].changes.attribute1, { old: 2.25, new: 3.5 });
    assert.equal(changes[1].changes.attribute1.new, 7);
    const picked = okData(
      await call(`/dcrmanager.fetch/${dcr.id}/changesOnly`, { resultFields: ['changes'], sortBy: 'id' }),
    );
    assert.deepEqual(picked[0], { changes: { attribute1: { old: 2.25, new: 3.5 } } });

    // An update of an item is checked by its table's meta too.
    const upd = await call(`/dcrmanager.update/${dcr.id}`, {
      data: { typedId: items[0].typedId, attribute1: 'xyz' },
    });
    expectError(upd, 400, -4, 'attribute1');
    const [updated] = okData(
      await call(`/dcrmanager.update/${dcr.id}`, { data: { typedId: items[0].typedId, attribute1: 4 } }),
    );
    assert.equal(updated.values.attribute1, 4);

    const [applied] = okData(await call(`/dcrmanager.submit/${dcr.id}`));
    assert.equal(applied.status, 'APPLIED');
    assert.equal((await pxRow('Costs', 'A-1')).attribute1, 4);
    assert.equal((await pxRow('Costs', 'A-2')).attribute2, '2024-02-29');
    assert.equal((await pxRow('Other', 'A-1')).attribute1, 'abc');
  });

  test('overlapping ADD items of one DCR name the other DCR item, sync and async', async () => {
    const name = uniqueName('disc');
    const [set] = okData(await call('/add/CRCS', { data: { uniqueName: name, label: name, keySize: 2 } }));
    const item = (key1: string, validFrom: string, extra: Obj = {}) => ({
      changeType: 'ADD',
      conditionRecordSetId: set.id,
      key1,
      key2: 'y',
      validFrom,
      conditionValue: 1,
      ...extra,
    });
    const twoAdds = async () => {
      const dcr = await newDcr('crci2');
      const items = okData(
        await call(`/dcrmanager.add/${dcr.id}`, {
          data: [item('x', '2026-07-01'), item('x', '2026-08-01')],
        }),
      );
      return { dcr, items };
    };
    const refusal = (text: string, first: Obj) => {
      assert.match(
        text,
        new RegExp(
          `overlaps item ${first.typedId.replace('.', '\\.')} \\(valid 2026-07-01\\.\\.9999-12-31\\)`,
        ),
      );
      assert.doesNotMatch(text, /\d+\.CRCI\b/);
    };

    let { dcr, items } = await twoAdds();
    const r = await call(`/dcrmanager.submit/${dcr.id}`);
    expectError(r, 400, -4, `${items[1].typedId}.validFrom`);
    refusal(r.body.response.errors[`${items[1].typedId}.validFrom`].errorMessage, items[0]);
    refusal(r.body.response.data, items[0]);
    const [failed] = okData(await call('/fetch/DCR', { data: { id: dcr.id } }));
    assert.equal(failed.status, 'FAILED');
    for (const m of failed.messages as Obj[]) refusal(m.message ?? m.text, items[0]);
    assert.equal(okData(await call('/fetch/CRCI', { data: { conditionRecordSetId: set.id } })).length, 0);

    ({ dcr, items } = await twoAdds());
    const [job] = okData(await call(`/dcrmanager.submit/${dcr.id}/async`));
    const done = await waitJob(job.jstId);
    assert.equal(done.status, 'FAILED');
    assert.match(
      JSON.stringify(done.messages),
      new RegExp(`overlaps item ${items[0].typedId.replace('.', '\\.')}`),
    );
    assert.doesNotMatch(JSON.stringify(done.messages), /\d+\.CRCI\b/);
    const [afterJob] = okData(await call('/fetch/DCR', { data: { id: dcr.id } }));
    assert.equal(afterJob.status, 'FAILED');
    for (const m of afterJob.messages as Obj[]) refusal(m.message ?? m.text, items[0]);

    // A stored item is named as it is; one this DCR changed, as its item leaves it.
    const [stored] = okData(
      await call('/add/CRCI2', {
        data: {
          conditionRecordSetId: set.id,
          key1: 's',
          key2: 'y',
          validFrom: '2026-01-01',
          validTo: '2026-03-31',
          conditionValue: 1,
        },
      }),
    );
    const dcr2 = await newDcr('crci2');
    const [upd, add] = okData(
      await call(`/dcrmanager.add/${dcr2.id}`, {
        data: [{ typedId: stored.typedId, validTo: '2026-12-31' }, item('s', '2026-06-01')],
      }),
    );
    const r2 = await call(`/dcrmanager.submit/${dcr2.id}`);
    expectError(r2, 400, -4, `${add.typedId}.validFrom`);
    assert.match(
      r2.body.response.errors[`${add.typedId}.validFrom`].errorMessage,
      new RegExp(
        `overlaps item ${stored.id}\\.CRCI as ${upd.typedId.replace('.', '\\.')} leaves it \\(valid 2026-01-01\\.\\.2026-12-31\\)`,
      ),
    );
    // Without the change nothing overlaps: applied.
    okData(await call(`/dcrmanager.delete/${dcr2.id}`, { data: { typedId: upd.typedId } }));
    assert.equal(okData(await call(`/dcrmanager.submit/${dcr2.id}`))[0].status, 'APPLIED');
    // An item stored before the DCR is named by its own typedId.
    const [open] = okData(
      await call('/add/CRCI2', {
        data: {
          conditionRecordSetId: set.id,
          key1: 't',
          key2: 'y',
          validFrom: '2026-01-01',
          conditionValue: 1,
        },
      }),
    );
    const dcr3 = await newDcr('crci2');
    const [late] = okData(await call(`/dcrmanager.add/${dcr3.id}`, { data: item('t', '2026-05-01') }));
    const r3 = await call(`/dcrmanager.submit/${dcr3.id}`);
    expectError(r3, 400, -4, `${late.typedId}.validFrom`);
    const text = r3.body.response.errors[`${late.typedId}.validFrom`].errorMessage;
    assert.match(text, new RegExp(`overlaps item ${open.id}\\.CRCI \\(valid 2026-01-01\\.\\.9999-12-31\\)`));
  });
});
