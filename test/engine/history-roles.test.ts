// Role assignments in record history are read with ROLE_FETCH, as accountmanager.fetchroles and the
// audit reports are: neither HISTORY_FETCH (/history.fetch) nor USER_FETCH (/fetch/U/{id}/history)
// alone shows which roles a user or a business role was given.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { clientOf, startHarness, type Client, type Harness } from '../helpers/app.ts';
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
});
