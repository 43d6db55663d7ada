// /queryapi.meta lists the extension tables that exist for the caller — never fails because one
// vanished: a table whose last row was deleted (and that no attribute meta names) or whose rows all
// describe records hidden from the caller is simply not listed, while /queryapi.execute naming it
// is a 404 naming that source.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, ADMIN_PASSWORD, startHarness, type Harness } from '../helpers/app.ts';
import { expectError, okData } from '../helpers/envelope.ts';

type Who = { user: string; password: string };
const admin: Who = { user: ADMIN, password: ADMIN_PASSWORD };
const staff: Who = { user: 'qm-staff', password: 'qm-staff-password-1' };

describe('/queryapi.meta and vanished extension tables', () => {
  let h: Harness;
  const call = (path: string, body: unknown, who: Who = admin) => h.call(path, { basic: who, body });
  /** The tables of `kind` that /queryapi.meta lists for `who` (the call must succeed). */
  const listed = async (kind: string, who: Who = admin): Promise<string[]> => {
    const kinds = okData(await call('/queryapi.meta', {}, who));
    return (kinds.find((k: any) => k.kind === kind)?.tables ?? []).map((t: any) => t.name);
  };

  before(async () => {
    h = await startHarness();
    await h.newUser(staff.user, staff.password, ['ADMIN_WO_USER_MGMT']);
  });
  after(() => h.close());

  test('the last row of a table without meta deleted: meta still answers, without the table', async () => {
    okData(await call('/add/SL', { data: { sellerId: 'QM-S1' } }));
    const [row] = okData(await call('/add/SX', { data: { name: 'Tmp', sellerId: 'QM-S1' } }));
    okData(await call('/add/SX', { data: { name: 'Kept', sellerId: 'QM-S1' } }));
    assert.deepEqual(await listed('SX'), ['SX:Kept', 'SX:Tmp']);
    okData(await call('/delete/SX', { data: { typedId: row.typedId } }));
    assert.deepEqual(await listed('SX'), ['SX:Kept']);
    // Naming the vanished table is a 404 for that source alone.
    const r = await call('/queryapi.execute', { data: { source: 'SX:Tmp' } });
    expectError(r, 404, -1, 'source');
    assert.match(r.body.response.data, /SX:Tmp/);
    okData(await call('/queryapi.execute', { data: { source: 'SX:Kept' } }));
    // A row added again brings it back.
    okData(await call('/add/SX', { data: { name: 'Tmp', sellerId: 'QM-S1' } }));
    assert.deepEqual(await listed('SX'), ['SX:Kept', 'SX:Tmp']);
  });

  test('every row deleted by filter: the table is gone from the list; attribute meta keeps it', async () => {
    okData(await call('/add/C', { data: { customerId: 'QM-C1' } }));
    okData(await call('/add/CX', { data: { name: 'Regions', customerId: 'QM-C1' } }));
    okData(await call('/add/CX', { data: { name: 'Typed', customerId: 'QM-C1' } }));
    okData(
      await call('/add/CXAM', { data: { name: 'Typed', fieldName: 'attribute1', fieldType: 'NUMERIC' } }),
    );
    assert.deepEqual(await listed('CX'), ['CX:Regions', 'CX:Typed']);
    okData(await call('/delete/CX/batch/forcefilter', { data: { customerId: 'QM-C1' } }));
    assert.deepEqual(await listed('CX'), ['CX:Typed']);
    expectError(await call('/queryapi.execute', { data: { source: 'CX:Regions' } }), 404, -1, 'source');
    assert.deepEqual(okData(await call('/queryapi.execute', { data: { source: 'CX:Typed' } })), []);
  });

  test('a table whose rows all describe records hidden from the caller: not listed for him', async () => {
    okData(await call('/add/P', { data: { sku: 'QM-HIDDEN', userGroupViewDetails: 'QM-SECRET' } }));
    okData(await call('/add/PX', { data: { name: 'Secret', sku: 'QM-HIDDEN' } }));
    assert.ok((await listed('PX')).includes('PX:Secret'));
    assert.ok(!(await listed('PX', staff)).includes('PX:Secret'));
    expectError(await call('/queryapi.execute', { data: { source: 'PX:Secret' } }, staff), 404, -1, 'source');
  });
});
