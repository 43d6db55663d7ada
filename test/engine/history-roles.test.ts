// Who reads record history. Role assignments are read with ROLE_FETCH, as accountmanager.fetchroles
// and the audit reports are: neither HISTORY_FETCH (/history.fetch) nor USER_FETCH
// (/fetch/U/{id}/history) alone shows which roles a user or a business role was given. And
// /history.fetch answers rows of the types whose records the caller may fetch, HISTORY_FETCH or not.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, ADMIN_PASSWORD, clientOf, startHarness, type Client, type Harness } from '../helpers/app.ts';
import { expectError, okData } from '../helpers/envelope.ts';

describe('record history of role assignments', () => {
  let h: Harness;
  let api: Client;
  let target: number;
  let br: number;

  before(async () => {
    h = await startHarness();
    api = await clientOf(h);
    [{ id: target }] = okData(
      await api('/add/U', { data: { loginName: 'hrtarget', password: 'Target-password-1' } }),
    );
    await h.newUser('hrwoum', 'hrwoum-password-1', ['ADMIN_WO_USER_MGMT']);
    await h.newUser('hraudit', 'hraudit-password-1', ['USERAUDIT']);
    okData(await api(`/accountmanager.assignrole/${target}`, { data: { roles: ['PB_LOGICS'] } }));
    [{ id: br }] = okData(await api('/add/BR', { data: { uniqueName: 'hrteam', label: 'team' } }));
    okData(await api(`/accountmanager.assignrole/BR/${br}`, { data: { roles: ['PB_PARAMETERS'] } }));
  });
  after(() => h.close());

  const roleRows = (rows: any[]) =>
    rows.filter(
      (r) => Array.isArray(r.field) && r.field.includes('roles') && ['U', 'BR'].includes(r.typeCode),
    );

  test('without ROLE_FETCH: no role rows, across types or of one record', async () => {
    const woum = await clientOf(h, 'hrwoum', 'hrwoum-password-1');
    expectError(await woum(`/accountmanager.fetchroles/${target}`, {}), 403, -3);
    const across = okData(await woum('/history.fetch', { data: { typeCode: 'U' } }));
    assert.ok(
      across.some((r: any) => r.recordId === target),
      'the user history itself is readable',
    );
    assert.deepEqual(roleRows(across), []);
    assert.deepEqual(roleRows(okData(await woum('/history.fetch', { data: { typeCode: 'BR' } }))), []);
    assert.deepEqual(roleRows(okData(await woum(`/fetch/U/${target}/history`, {}))), []);
    assert.deepEqual(roleRows(okData(await woum(`/fetch/BR/${br}/history`, {}))), []);
    const raw = JSON.stringify(okData(await woum('/history.fetch', {})));
    assert.ok(
      !raw.includes('PB_LOGICS') && !raw.includes('PB_PARAMETERS'),
      'a role name leaks through history',
    );
  });

  test('with ROLE_FETCH (an administrator, a user auditor) they are there', async () => {
    const audit = await clientOf(h, 'hraudit', 'hraudit-password-1');
    const mine = roleRows(okData(await audit(`/fetch/U/${target}/history`, {})));
    assert.deepEqual(
      mine.map((r: any) => r.changes.roles),
      [{ old: [], new: ['PB_LOGICS'] }],
    );
    assert.equal(roleRows(okData(await audit(`/fetch/BR/${br}/history`, {}))).length, 1);
    assert.equal(
      roleRows(okData(await api('/history.fetch', { data: { typeCode: 'U' } }))).length >= 1,
      true,
    );
  });

  test("a business role's group assignments are read with USER_FETCH, as fetchgroups/BR", async () => {
    okData(await api('/add/UG', { data: { uniqueName: 'HRG1', label: 'g' } }));
    okData(await api(`/accountmanager.assigngroup/BR/${br}`, { data: { groups: ['HRG1'] } }));
    await h.newUser('hrplain', 'hrplain-password-1', []);
    const plain = await clientOf(h, 'hrplain', 'hrplain-password-1');
    expectError(await plain(`/accountmanager.fetchgroups/BR/${br}`, {}), 403, -3);
    const groupRows = (rows: any[]) =>
      rows.filter((r) => Array.isArray(r.field) && r.field.includes('groups'));
    const seen = okData(await plain(`/fetch/BR/${br}/history`, {}));
    assert.ok(seen.length > 0, 'the business role history itself is readable');
    assert.deepEqual(groupRows(seen), []);
    assert.ok(!JSON.stringify(seen).includes('HRG1'), 'a group name leaks through history');
    const audit = await clientOf(h, 'hraudit', 'hraudit-password-1');
    assert.equal(groupRows(okData(await audit(`/fetch/BR/${br}/history`, {}))).length, 1);
  });

  test('/history.fetch answers only the types the caller may fetch', async () => {
    okData(await api('/add/SL', { data: { sellerId: 'HSL-1', name: 'seller secret' } }));
    okData(await api('/add/P', { data: { sku: 'HSL-P', label: 'open product' } }));
    const tokenFor = async (permissions: string[]) => {
      const [{ token }] = okData(
        await h.call('/accountmanager.getjsonwebtoken', {
          basic: { user: ADMIN, password: ADMIN_PASSWORD },
          body: { data: { permissions } },
        }),
      );
      return (path: string, body: unknown) =>
        h.call(path, { headers: { 'X-Ratecard-jwt': token as string }, body });
    };
    const auditor = await tokenFor(['HISTORY_FETCH']);
    assert.deepEqual(okData(await auditor('/history.fetch', { data: { typeCode: 'SL' } })), []);
    const all = okData(await auditor('/history.fetch', { endRow: 10_000 }));
    assert.ok(!all.some((r: any) => r.typeCode === 'SL'), 'no seller row without SELLER_FETCH');
    assert.ok(!JSON.stringify(all).includes('seller secret'));
    assert.ok(
      all.some((r: any) => r.typeCode === 'P' && r.businessKey === 'HSL-P'),
      'products are open',
    );
    const sellers = await tokenFor(['HISTORY_FETCH', 'SELLER_FETCH']);
    const rows = okData(await sellers('/history.fetch', { data: { typeCode: 'SL' } }));
    assert.deepEqual(
      rows.map((r: any) => [r.businessKey, r.action, r.changes.name]),
      [['HSL-1', 'ADD', { old: null, new: 'seller secret' }]],
    );
  });
});
