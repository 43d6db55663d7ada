// Audit fixes over HTTP on both databases: a DELETE item of a FAILED DCR is proposed again on its
// record as it stands (and a DRAFT's DELETE item naming no values is a -4 on `data`); a refused
// element of an accountmanager delete batch names itself (`1.uniqueName`, `User group nosuch not
// found`); attachment reads of an owner that is not there name the path's `typedId` as writes do,
// and downloads carry `X-Content-Type-Options: nosniff`.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, ADMIN_PASSWORD, startHarness, type Harness } from '../helpers/app.ts';
import { okData, expectError } from '../helpers/envelope.ts';
import { assertOk, form, send } from '../jobs/helpers.ts';

const admin = { user: ADMIN, password: ADMIN_PASSWORD };

describe('audit fixes: DCR DELETE items, accountmanager delete batches, attachment reads', () => {
  let h: Harness;
  let other: Harness;
  const call = (path: string, body?: unknown) =>
    h.call(path, { basic: admin, ...(body === undefined ? {} : { body }) });
  const productBySku = async (sku: string) =>
    okData(await call('/fetch/P', { data: { sku }, textMatchStyle: 'exactCase' }))[0];

  before(async () => {
    h = await startHarness();
    other = await startHarness({ shareDbWith: h });
    okData(
      await call('/add/DCRT', {
        data: { uniqueName: 'products', label: 'Products', targetType: 'P', fields: 'label' },
      }),
    );
  });
  after(async () => {
    await other.close();
    await h.close();
  });

  test('a DELETE item of a FAILED DCR is proposed again on its record as it stands, then applied', async () => {
    const [fe1] = okData(await call('/add/P', { data: { sku: 'FE-1', label: 'one' } }));
    const [dcr] = okData(await call('/dcrmanager.add', { data: { dcrType: 'products', label: 'del' } }));
    const [item] = okData(
      await call(`/dcrmanager.add/${dcr.id}`, { data: { changeType: 'DELETE', sku: 'FE-1' } }),
    );
    // In a DRAFT, naming no values changes nothing: a -4 on `data`; a value is a -4 naming it.
    for (const data of [{ typedId: item.typedId }, { typedId: item.typedId, changeType: 'DELETE' }])
      expectError(await call(`/dcrmanager.update/${dcr.id}`, { data }), 400, -4, 'data');
    expectError(
      await call(`/dcrmanager.update/${dcr.id}`, { data: { typedId: item.typedId, label: 'x' } }),
      400,
      -4,
      'label',
    );
    okData(
      await call('/update/P', {
        data: { typedId: fe1.typedId, label: 'direct' },
        oldValues: { version: fe1.version },
      }),
    );
    expectError(await call(`/dcrmanager.submit/${dcr.id}`), 409, -1, item.typedId);
    const [failed] = okData(await call('/fetch/DCR', { data: { uniqueName: dcr.uniqueName } }));
    assert.equal(failed.status, 'FAILED');
    // Still no values on a FAILED DCR: a value is refused, nothing changes.
    expectError(
      await call(`/dcrmanager.update/${dcr.id}`, {
        data: { typedId: item.typedId, label: 'x' },
        oldValues: { version: item.version },
      }),
      400,
      -4,
      'label',
    );
    const [kept] = okData(await call(`/dcrmanager.fetch/${dcr.id}`, {}));
    assert.deepEqual([kept.version, kept.targetVersion], [item.version, fe1.version]);
    for (const data of [{ typedId: item.typedId }, { typedId: item.typedId, changeType: 'DELETE' }]) {
      const [now] = okData(await call(`/dcrmanager.fetch/${dcr.id}`, {}));
      const [rebased] = okData(
        await call(`/dcrmanager.update/${dcr.id}`, { data, oldValues: { version: now.version } }),
      );
      assert.equal(rebased.changeType, 'DELETE');
      assert.equal(rebased.targetVersion, fe1.version + 1);
      assert.equal(rebased.originalValues.label, 'direct');
    }
    assert.equal(okData(await call(`/dcrmanager.submit/${dcr.id}`))[0].status, 'APPLIED');
    assert.equal(await productBySku('FE-1'), undefined);
  });

  for (const wrapped of [false, true]) {
    test(`a refused element of a deletegroup / deletebusinessrole batch names itself (${wrapped ? '{data: [...]}' : '[{data}, ...]'})`, async () => {
      const batch = (names: string[]) =>
        wrapped
          ? { data: names.map((uniqueName) => ({ uniqueName })) }
          : names.map((uniqueName) => ({ data: { uniqueName } }));
      const tag = wrapped ? 'w' : 'l';
      okData(await call('/add/UG', { data: { uniqueName: `delme-${tag}`, label: 'd' } }));
      const r = await call('/accountmanager.deletegroup', batch([`delme-${tag}`, 'nosuch']));
      expectError(r, 404, -1, '1.uniqueName');
      assert.deepEqual(Object.keys(r.body.response.errors), ['1.uniqueName']);
      assert.equal(r.body.response.data, 'User group nosuch not found');
      // Nothing deleted.
      assert.equal(okData(await call('/fetch/UG', { data: { uniqueName: `delme-${tag}` } })).length, 1);
      const one = await call('/accountmanager.deletegroup', { data: { uniqueName: 'nosuch' } });
      expectError(one, 404, -1, 'uniqueName');
      assert.equal(one.body.response.data, 'User group nosuch not found');

      okData(await call('/add/BR', { data: { uniqueName: `brdel-${tag}`, label: 'b' } }));
      const b = await call('/accountmanager.deletebusinessrole', batch([`brdel-${tag}`, 'nosuch']));
      expectError(b, 404, -1, '1.uniqueName');
      assert.equal(b.body.response.data, 'Business role nosuch not found');
      assert.equal(okData(await call('/fetch/BR', { data: { uniqueName: `brdel-${tag}` } })).length, 1);
      // Both found: both deleted.
      okData(await call('/add/UG', { data: { uniqueName: `delme2-${tag}`, label: 'd' } }));
      assert.equal(
        okData(await call('/accountmanager.deletegroup', batch([`delme-${tag}`, `delme2-${tag}`]))).length,
        2,
      );
    });
  }

  test('attachment reads of an owner that is not there name typedId; downloads are nosniff', async () => {
    const [p] = okData(await call('/add/P', { data: { sku: 'ATT-1', label: 'a' } }));
    const slot = assertOk(await send(h, '/uploadmanager.newuploadslot'))[0].slotId as string;
    assertOk(
      await send(h, `/uploadmanager.upload/${slot}`, {
        body: form(
          {},
          { field: 'file', name: 'page.html', data: '<html><script>1</script></html>', type: 'text/html' },
        ),
      }),
    );
    const [att] = assertOk(await send(h, `/bdmanager.upload/${p.typedId}/${slot}`));
    for (const path of [
      `/bdmanager.downloaddata/${att.id}`,
      `/bdmanager.download/${p.typedId}/${att.id}?output=file`,
    ]) {
      const file = await send(h, path, { method: 'GET' });
      assert.equal(file.status, 200);
      assert.equal(file.headers.get('x-content-type-options'), 'nosniff', path);
    }
    // The product of another partition (same id) and a missing one: reads as writes name typedId.
    const missing = `${Number(p.id) + 1000}.P`;
    for (const [harness, typedId] of [
      [other, p.typedId as string],
      [h, missing],
    ] as const) {
      const reads = [
        await harness.call(`/bdmanager.list/${typedId}`, { basic: admin, body: {} }),
        await harness.call(`/bdmanager.download/${typedId}/${att.id}`, { basic: admin }),
        await harness.call(`/bdmanager.download/${typedId}/${att.id}?output=file`, {
          basic: admin,
          method: 'GET',
        }),
        await harness.call(`/bdmanager.delete/${typedId}/${att.id}`, { basic: admin }),
      ];
      for (const r of reads) {
        expectError(r, 404, -1, 'typedId');
        assert.deepEqual(Object.keys(r.body.response.errors), ['typedId']);
        assert.match(r.body.response.data, new RegExp(`^Product ${typedId.replace('.', '\\.')} not found$`));
      }
    }
  });
});
