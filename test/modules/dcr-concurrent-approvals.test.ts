// Final approvals of several DCRs at once, each applying a mass change to the same product: on
// PostgreSQL two applies may deadlock; the one PostgreSQL fails runs again (the approval's whole
// transaction), so every DCR ends APPLIED and every change counts — none ends FAILED with
// "Concurrent change". PGlite runs one transaction at a time: the same outcome, serially.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, ADMIN_PASSWORD, startHarness, type Harness } from '../helpers/app.ts';
import { okData } from '../helpers/envelope.ts';

const DCRS = 6;

describe('DCRs approved at once', () => {
  let h: Harness;
  const basic = { user: ADMIN, password: ADMIN_PASSWORD };
  const call = (path: string, body?: unknown) =>
    h.call(path, { basic, ...(body === undefined ? {} : { body }) });

  before(async () => {
    h = await startHarness();
    okData(await call('/add/PAM', { data: { fieldName: 'attribute5', fieldType: 'NUMERIC' } }));
    okData(
      await call('/add/DCRT', {
        data: { uniqueName: 'counts', targetType: 'P', fields: 'label,attribute5' },
      }),
    );
    okData(
      await call('/add/WFD', {
        data: {
          uniqueName: 'one-step',
          approvableType: 'DCR',
          steps: [{ name: 'S1', approverUsers: [ADMIN], rule: 'ANY' }],
        },
      }),
    );
  });
  after(async () => {
    await h.close();
  });

  test('every DCR ends APPLIED and every mass change counts', async () => {
    okData(
      await call('/add/P', [
        { data: { sku: 'T-1', attribute5: 0 } },
        { data: { sku: 'T-2', attribute5: 0 } },
      ]),
    );
    const dcrs = [];
    for (let i = 0; i < DCRS; i++) {
      const [dcr] = okData(await call('/dcrmanager.add', { data: { dcrType: 'counts', label: `c${i}` } }));
      // Both products, in other orders: the applies lock them in other orders.
      const skus = i % 2 === 0 ? ['T-1', 'T-2'] : ['T-2', 'T-1'];
      for (const sku of skus) {
        okData(
          await call(`/dcrmanager.addmassop/${dcr.id}`, {
            data: {
              filterCriteria: { sku },
              massEditRecords: [{ fieldName: 'attribute5', massEditOperator: '+', fieldValue: 1 }],
            },
          }),
        );
      }
      okData(await call(`/dcrmanager.submit/${dcr.id}`));
      dcrs.push(dcr);
    }
    const active = okData(await call('/workflowsmanager.fetch/active', {}));
    const wfs = dcrs.map((d) => active.find((w) => w.approvableTypedId === `${d.id}.DCR`));
    assert.ok(
      wfs.every((w) => w !== undefined),
      JSON.stringify(active),
    );
    const answers = await Promise.all(
      wfs.map((w) => call(`/workflowsmanager.approve/${w.id}`, { oldValues: { version: w.version } })),
    );
    for (const a of answers) okData(a);
    const states = okData(await call('/fetch/DCR', { data: { dcrType: 'counts' } }));
    assert.deepEqual(
      states.map((d) => [d.label, d.status, d.messages?.[0]?.text ?? null]).sort(),
      dcrs.map((d) => [d.label, 'APPLIED', 'applied']).sort(),
    );
    const products = okData(await call('/fetch/P', { data: { sku: ['T-1', 'T-2'] }, sortBy: 'sku' }));
    assert.deepEqual(
      products.map((p) => Number(p.attribute5)),
      [DCRS, DCRS],
    );
  });
});
