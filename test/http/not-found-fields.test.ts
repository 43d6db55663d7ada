// A record, table, job or user that a request names and that is not there is a 404 whose `errors`
// names the field that named it: the path parameter (`jstId`, `tableId`, `id`, `userId`, ...) or the
// body field (`typedId`, `data.toUserIds.1`, ...); a stale `oldValues.version` of a DCR item is a 409
// naming `oldValues.version`.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { clientOf, startHarness, type Client, type Harness } from '../helpers/app.ts';

describe('404s and 409s name the field at fault', () => {
  let h: Harness;
  let call: Client;
  let dcrId: number;
  let itemTypedId: string;
  let me: number;
  let other: number;

  before(async () => {
    h = await startHarness();
    call = await clientOf(h);
    const type = await call('/add/DCRT', {
      data: { uniqueName: 'nf', targetType: 'P', fields: 'label,attribute3' },
    });
    assert.equal(type.status, 200, type.text);
    const dcr = await call('/dcrmanager.add', { data: { dcrType: 'nf', label: 'L' } });
    assert.equal(dcr.status, 200, dcr.text);
    dcrId = dcr.body.response.data[0].id;
    const item = await call(`/dcrmanager.add/${dcrId}`, {
      data: [{ changeType: 'ADD', sku: 'NF-1', label: 'x' }],
    });
    assert.equal(item.status, 200, item.text);
    itemTypedId = item.body.response.data[0].typedId;
    // Ids are unique across partitions: the admin's own, not 1.
    me = (await call('/fetch/U', { data: { loginName: 'admin' } })).body.response.data[0].id;
    other = await h.newUser('nf-user', 'nf-user-password-1', ['PRICESHOP_RO']);
  });
  after(() => h.close());

  const expect404 = async (path: string, body: unknown, field: string) => {
    const r = await call(path, body);
    assert.equal(r.status, 404, `${path}: ${r.text}`);
    assert.equal(r.body.response.status, -1);
    assert.deepEqual(Object.keys(r.body.response.errors ?? {}), [field], `${path}: ${r.text}`);
    assert.match(r.body.response.errors[field].errorMessage, /not found|Unknown/);
  };

  void test('records named by the path', async () => {
    await expect404('/admin.fetchjst/999', {}, 'jstId');
    await expect404('/lookuptablemanager.fetch/999', {}, 'tableId');
    await expect404('/dcrmanager.fetch/999', {}, 'id');
    await expect404('/accountmanager.fetchroles/999', {}, 'userId');
    await expect404('/accountmanager.fetchroles/BR/999', {}, 'businessroleId');
    await expect404('/fetch/P/999/history', {}, 'id');
    await expect404('/fetch/NOPE', {}, 'typeCode');
  });

  void test('records named by the body, with the element of a list', async () => {
    await expect404(`/dcrmanager.update/${dcrId}`, { data: { typedId: '99.DCRI', label: 'b' } }, 'typedId');
    await expect404(
      `/dcrmanager.delete/${dcrId}`,
      [{ data: { typedId: itemTypedId } }, { data: { typedId: '98.DCRI' } }],
      '1.typedId',
    );
    await expect404(
      '/accountmanager.copyroles',
      { data: { fromUserId: me, toUserIds: [other, 999_999_999] } },
      'data.toUserIds.1',
    );
    await expect404(
      '/accountmanager.copyroles',
      { data: { fromUserId: 999_999_997, toUserIds: [other] } },
      'data.fromUserId',
    );
    await expect404('/notification.delete', { data: { ids: ['12345.NTF'] } }, 'data.ids');
    await expect404('/notification.setread', { data: { typedId: '12345.NTF' } }, 'data.typedId');
  });

  void test('a stale version of a DCR item is a 409 naming oldValues.version', async () => {
    const r = await call(`/dcrmanager.update/${dcrId}`, {
      data: { typedId: itemTypedId, label: 'b' },
      oldValues: { version: 5 },
    });
    assert.equal(r.status, 409, r.text);
    assert.deepEqual(Object.keys(r.body.response.errors), ['oldValues.version']);
  });
});
