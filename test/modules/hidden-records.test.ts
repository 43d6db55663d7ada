// Records hidden by their user group (`userGroupViewDetails`) stay hidden on the side routes too:
// the record history of their attachments and images (`/history.fetch`), an attachment read by its
// id alone (`/bdmanager.downloaddata`), and a record's own history (`/fetch/{TC}/{id}/history`,
// `?asOf=`), none of which may tell a hidden record from one that does not exist.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { clientOf, startHarness, uniqueName, type Client, type Harness } from '../helpers/app.ts';
import { expectError, okData } from '../helpers/envelope.ts';
import { assertError, assertOk, send, slotWith } from '../jobs/helpers.ts';

/** The first bytes of a PNG (signature + IHDR), enough for the image content check. */
const PNG = Buffer.concat([
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52]),
  randomBytes(200),
]);

describe('user-group-hidden records on side routes', () => {
  let h: Harness;
  let api: Client;
  let auditor: Client;
  const group = uniqueName('grp');
  const auditorWho = { user: 'hauditor', password: 'hauditor-password-1' };
  let hidden: { id: number; sku: string; typedId: string };
  let open: { id: number; sku: string; typedId: string };

  before(async () => {
    h = await startHarness();
    api = await clientOf(h);
    // HISTORY_FETCH without ADMIN: record-level user groups apply to him.
    await h.newUser(auditorWho.user, auditorWho.password, ['ADMIN_WO_USER_MGMT']);
    auditor = await clientOf(h, auditorWho.user, auditorWho.password);
    okData(await api('/add/UG', { data: { uniqueName: group, label: 'hidden' } }));
    const add = async (extra: object) => {
      const sku = uniqueName('hsku');
      const [p] = okData(await api('/add/P', { data: { sku, label: 'x', ...extra } }));
      return { id: Number(p.id ?? String(p.typedId).split('.')[0]), sku, typedId: p.typedId as string };
    };
    hidden = await add({ userGroupViewDetails: group, userGroupEdit: group });
    open = await add({});
  });
  after(() => h.close());

  test("an attachment's and an image's history rows take the owner's view group", async () => {
    const secretName = uniqueName('secret-file');
    const att = assertOk(
      await send(h, `/bdmanager.upload/${hidden.typedId}/${await slotWith(h, 'x', secretName)}`),
    )[0];
    assertOk(await send(h, `/bdmanager.upload/${open.typedId}/${await slotWith(h, 'y', 'open.txt')}`));
    assertOk(await send(h, `/productimages.upload/${await slotWith(h, PNG, 'img.png')}/${hidden.sku}`));
    assertOk(await send(h, `/productimages.upload/${await slotWith(h, PNG, 'img.png')}/${open.sku}`));
    const history = async (c: Client) =>
      okData(
        await c('/history.fetch', {
          data: {
            _constructor: 'AdvancedCriteria',
            operator: 'and',
            criteria: [{ fieldName: 'typeCode', operator: 'inSet', value: ['ATT', 'PIMG'] }],
          },
          resultFields: ['typeCode', 'recordId', 'businessKey', 'userGroupViewDetails', 'changes'],
        }),
      ).map((r: any) => [r.typeCode, r.businessKey]);
    // The administrator sees all four, the hidden ones with the product's group.
    const all = await history(api);
    assert.deepEqual(
      [...all].sort(),
      [
        ['ATT', hidden.typedId],
        ['ATT', open.typedId],
        ['PIMG', hidden.sku],
        ['PIMG', open.sku],
      ].sort(),
    );
    // Outside the group: neither the file name nor the owner of the hidden product's attachment.
    assert.deepEqual(
      (await history(auditor)).sort(),
      [
        ['ATT', open.typedId],
        ['PIMG', open.sku],
      ].sort(),
    );
    const raw = JSON.stringify(okData(await auditor('/history.fetch', {})));
    assert.ok(!raw.includes(secretName), 'the hidden attachment leaks through history');
    assert.ok(!raw.includes(hidden.sku), 'the hidden product leaks through history');
    // Deleting the attachment records its DELETE under the group as well.
    assertOk(await send(h, `/bdmanager.delete/${hidden.typedId}/${att.binaryDataId}`));
    assert.ok(!JSON.stringify(okData(await auditor('/history.fetch', {}))).includes(secretName));
  });

  test("an attachment read by its id alone: a hidden owner is a plain 'not found'", async () => {
    const att = assertOk(
      await send(h, `/bdmanager.upload/${hidden.typedId}/${await slotWith(h, 'z', 'z.txt')}`),
    )[0];
    const who = auditorWho;
    const theirs = await send(h, `/bdmanager.downloaddata/${att.binaryDataId}`, { method: 'GET', who });
    const none = await send(h, `/bdmanager.downloaddata/99999999999`, { method: 'GET', who });
    assertError(theirs, 404, -1);
    assertError(none, 404, -1);
    const message = (r: { body: any }) => String(r.body.response.data);
    assert.equal(message(theirs), `Attachment ${att.binaryDataId} not found`);
    assert.doesNotMatch(message(theirs), new RegExp(`${hidden.id}|Product`));
    // Named with its owner, the owner decides first: the same answer whichever attachment id.
    const named = await send(h, `/bdmanager.download/${hidden.typedId}/${att.binaryDataId}`, { who });
    const namedNone = await send(h, `/bdmanager.download/${hidden.typedId}/99999999999`, { who });
    assertError(named, 404, -1);
    assert.equal(message(named), message(namedNone));
    assert.equal(assertOk(await send(h, `/bdmanager.checkifexists/${att.binaryDataId}`, { who })), false);
    // The group's members (and admins) still read it.
    assert.equal(
      (await send(h, `/bdmanager.downloaddata/${att.binaryDataId}`, { method: 'GET' })).status,
      200,
    );
  });

  test('the attachments of a DCR item of a hidden record do not exist for the user, as the item does not', async () => {
    const dcrType = uniqueName('hdcrt');
    okData(await api('/add/DCRT', { data: { uniqueName: dcrType, targetType: 'P', fields: 'label' } }));
    const [dcr] = okData(await api('/dcrmanager.add', { data: { dcrType, label: 'mixed' } }));
    const [item] = okData(
      await api(`/dcrmanager.add/${dcr.id}`, { data: { sku: hidden.sku, label: 'by admin' } }),
    );
    const [other] = okData(
      await api(`/dcrmanager.add/${dcr.id}`, { data: { sku: open.sku, label: 'open' } }),
    );
    const upload = async (typedId: string) =>
      assertOk(await send(h, `/bdmanager.upload/${typedId}/${await slotWith(h, 'd', 'd.txt')}`))[0];
    const att = await upload(item.typedId);
    const seen = await upload(other.typedId);
    const who = auditorWho;
    const json = { 'content-type': 'application/json' };
    const rename = (typedId: string, id: number) =>
      send(h, `/bdmanager.update/${typedId}`, {
        who,
        headers: json,
        body: JSON.stringify({ data: { id, fileName: 'theirs.txt' }, oldValues: { version: 0 } }),
      });
    assertError(await send(h, `/bdmanager.list/${item.typedId}`, { who }), 404, -1);
    assertError(await send(h, `/bdmanager.download/${item.typedId}/${att.binaryDataId}`, { who }), 404, -1);
    assertError(
      await send(h, `/bdmanager.downloaddata/${att.binaryDataId}`, { method: 'GET', who }),
      404,
      -1,
    );
    assert.equal(assertOk(await send(h, `/bdmanager.checkifexists/${att.binaryDataId}`, { who })), false);
    assertError(await rename(item.typedId, att.id), 404, -1);
    assertError(await send(h, `/bdmanager.delete/${item.typedId}/${att.binaryDataId}`, { who }), 404, -1);
    assertError(
      await send(h, `/bdmanager.upload/${item.typedId}/${await slotWith(h, 'e', 'e.txt', who)}`, { who }),
      404,
      -1,
    );
    // Nothing changed; the item of a record he sees keeps its attachments open to him.
    const kept = assertOk(await send(h, `/bdmanager.list/${item.typedId}`));
    assert.deepEqual(
      kept.map((a: any) => [a.fileName, a.version]),
      [['d.txt', 0]],
    );
    assert.equal(assertOk(await send(h, `/bdmanager.list/${other.typedId}`, { who })).length, 1);
    assertOk(await rename(other.typedId, seen.id));
  });

  test("a hidden record's history answers as that of a record that does not exist", async () => {
    const none = 99999999999;
    const list = async (id: number) => {
      const r = await auditor(`/fetch/P/${id}/history`, {});
      expectError(r, 404, -1);
      return String(r.body.response.data).replace(String(id), '<id>');
    };
    assert.equal(await list(hidden.id), await list(none));
    assert.equal(okData(await auditor(`/fetch/P/${open.id}/history`, {})).length, 1);
    assert.equal(okData(await api(`/fetch/P/${hidden.id}/history`, {})).length, 1);
    const asOf = encodeURIComponent(new Date().toISOString());
    const at = async (id: number) => {
      const r = await auditor(`/fetch/P/${id}?asOf=${asOf}`, {});
      expectError(r, 404, -1);
      return String(r.body.response.data).replace(String(id), '<id>');
    };
    assert.equal(await at(hidden.id), await at(none));
  });

  test("a product's row read as it stood while the product was hidden: not found, though both are visible now", async () => {
    const sku = uniqueName('asof');
    okData(await api('/add/P', { data: { sku, label: 'x', userGroupViewDetails: group } }));
    const [px] = okData(await api('/add/PX', { data: { name: 'Costs', sku, attribute2: 'SECRET' } }));
    const [pdesc] = okData(await api('/add/PDESC', { data: { sku, language: 'en', label: 'SECRET desc' } }));
    await new Promise((r) => setTimeout(r, 5));
    const then = encodeURIComponent(new Date().toISOString());
    await new Promise((r) => setTimeout(r, 5));
    okData(await api('/update/PX', { data: { typedId: px.typedId, attribute2: 'public' } }));
    okData(await api('/update/PDESC', { data: { typedId: pdesc.typedId, label: 'public desc' } }));
    okData(await api('/update/P', { data: { sku, userGroupViewDetails: null } }));
    for (const [code, row, field] of [
      ['PX', px, 'attribute2'],
      ['PDESC', pdesc, 'label'],
    ] as const) {
      expectError(await auditor(`/fetch/${code}/${row.id}?asOf=${then}`, {}), 404, -1);
      assert.match(okData(await api(`/fetch/${code}/${row.id}?asOf=${then}`, {}))[0][field], /^SECRET/);
      const now = encodeURIComponent(new Date().toISOString());
      assert.match(okData(await auditor(`/fetch/${code}/${row.id}?asOf=${now}`, {}))[0][field], /^public/);
    }
  });

  test("a row read as it stood: its record's view group of that moment decides, whether the record was deleted or hidden since (sixth audit)", async () => {
    // Hidden then, deleted since: not found.
    const gone = uniqueName('asofdel');
    okData(await api('/add/P', { data: { sku: gone, userGroupViewDetails: group } }));
    const [secret] = okData(
      await api('/add/PDESC', { data: { sku: gone, language: 'en', label: 'SECRET' } }),
    );
    await new Promise((r) => setTimeout(r, 5));
    const then = encodeURIComponent(new Date().toISOString());
    await new Promise((r) => setTimeout(r, 5));
    okData(await api('/update/PDESC', { data: { typedId: secret.typedId, label: 'public' } }));
    okData(await api('/delete/P', { data: { sku: gone } }));
    expectError(await auditor(`/fetch/PDESC/${secret.id}?asOf=${then}`, {}), 404, -1);
    assert.equal(okData(await api(`/fetch/PDESC/${secret.id}?asOf=${then}`, {}))[0].label, 'SECRET');
    // Shown then, hidden since: the row as it stood.
    const flip = uniqueName('asofflip');
    okData(await api('/add/P', { data: { sku: flip } }));
    const [shown] = okData(await api('/add/PX', { data: { name: 'Costs', sku: flip, attribute2: 'v1' } }));
    await new Promise((r) => setTimeout(r, 5));
    const before = encodeURIComponent(new Date().toISOString());
    await new Promise((r) => setTimeout(r, 5));
    okData(await api('/update/P', { data: { sku: flip, userGroupViewDetails: group } }));
    assert.equal(okData(await auditor(`/fetch/PX/${shown.id}?asOf=${before}`, {}))[0].attribute2, 'v1');
    expectError(await auditor(`/fetch/PX/${shown.id}`, {}), 404, -1);
    const now = encodeURIComponent(new Date().toISOString());
    expectError(await auditor(`/fetch/PX/${shown.id}?asOf=${now}`, {}), 404, -1);
  });

  test("a seller's row moved away from a hidden seller: its history tells the caller nothing of the hidden state", async () => {
    const [shown, secret] = [uniqueName('sl'), uniqueName('sl')];
    okData(await api('/add/SL', { data: { sellerId: shown, name: 'public' } }));
    okData(await api('/add/SL', { data: { sellerId: secret, name: 'hidden', userGroupViewDetails: group } }));
    const [sx] = okData(
      await api('/add/SX', {
        data: { name: 'Quota', sellerId: secret, attribute1: '999', attribute2: 'SECRET' },
      }),
    );
    okData(
      await api('/update/SX', {
        data: { typedId: sx.typedId, sellerId: shown, attribute2: 'public' },
        oldValues: { version: 0 },
      }),
    );
    const rows = okData(await auditor(`/fetch/SX/${sx.id}/history`, {}));
    assert.equal(rows.length, 1, JSON.stringify(rows));
    assert.deepEqual(rows[0].changes.sellerId, { old: null, new: shown });
    assert.deepEqual(rows[0].changes.attribute2, { old: null, new: 'public' });
    const global = okData(await auditor('/history.fetch', { data: { typeCode: 'SX', recordId: sx.id } }));
    assert.ok(!JSON.stringify(global).includes('SECRET') && !JSON.stringify(global).includes(secret));
    // Those who saw the old state see it.
    const mine = okData(await api(`/fetch/SX/${sx.id}/history`, { sortBy: 'id' }));
    assert.deepEqual(mine.at(-1).changes.attribute2, { old: 'SECRET', new: 'public' });
  });
});
