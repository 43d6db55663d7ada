// Data of the query API suites, loaded through the API: products typed by their attribute meta
// (attribute1 NUMERIC "Weight", attribute2 TEXT; P-x has no weight), one of them visible to group "secret" only; the
// product extension table Costs (attribute1 NUMERIC, attribute2 DATE); the lookup table Regions;
// the condition record set PRICES (key1 = sku) and HIDDEN (visible to group "secret" only).

import assert from 'node:assert/strict';
import type { Harness } from '../helpers/app.ts';

export const QUERY_ADMIN = { user: 'admin', password: 'admin-password-1' };
export const QUERY_READER = { user: 'reader', password: 'reader-password-1' };

export async function seedQueryData(h: Harness): Promise<void> {
  const api = async (path: string, body: unknown) => {
    const r = await h.call(path, { basic: QUERY_ADMIN, body });
    assert.equal(r.status, 200, `${path}: ${r.text}`);
    return r.body.response.data;
  };
  await h.newUser(QUERY_READER.user, QUERY_READER.password);
  await api('/add/PAM', { data: { fieldName: 'attribute1', label: 'Weight', fieldType: 'NUMERIC' } });
  await api('/add/PAM', { data: { fieldName: 'attribute2', label: 'Category', fieldType: 'TEXT' } });
  await api('/loaddata/P', {
    data: {
      header: ['sku', 'label', 'attribute1', 'attribute2', 'userGroupViewDetails'],
      data: [
        ['P-1', 'one', '1', 'north', ''],
        ['P-3', 'three', '3', 'north', ''],
        ['P-10', 'ten', '10', 'food', ''],
        ['P-20', 'twenty', '20', 'tools', ''],
        ['P-100', 'hundred', '100', 'tools', ''],
        ['P-x', 'x', '', 'misc', ''],
        ['P-secret', 'secret', '2', 'tools', 'secret'],
      ],
    },
  });
  await api('/add/PXAM', { data: { name: 'Costs', fieldName: 'attribute1', fieldType: 'NUMERIC' } });
  await api('/add/PXAM', { data: { name: 'Costs', fieldName: 'attribute2', fieldType: 'DATE' } });
  await api('/loaddata/PX', {
    data: {
      header: ['name', 'sku', 'attribute1', 'attribute2'],
      data: [
        ['Costs', 'P-1', '1.5', '2024-01-10'],
        ['Costs', 'P-3', '4.5', '2024-01-15'],
        ['Costs', 'P-10', '15', '2024-02-01'],
        ['Costs', 'P-20', '100', '2024-03-01'],
        ['Costs', 'P-100', '100', '2024-02-20'],
        ['Costs', 'P-x', '7', '2024-01-01'],
      ],
    },
  });
  const [table] = await api('/lookuptablemanager.add', {
    data: {
      uniqueName: 'Regions',
      label: 'Sales regions',
      type: 'SIMPLE',
      valueType: 'STRING',
      status: 'ACTIVE',
    },
  });
  await api(`/lookuptablemanager.add/${table.id}`, [
    { data: { name: 'north', value: 'North' } },
    { data: { name: 'food', value: 'South' } },
  ]);
  const [prices] = await api('/add/CRCS', {
    data: { uniqueName: 'PRICES', label: 'List prices', keySize: 1 },
  });
  const [hidden] = await api('/add/CRCS', {
    data: { uniqueName: 'HIDDEN', keySize: 1, userGroupViewDetails: 'secret' },
  });
  const item = (set: number, sku: string, value: string) => ({
    data: {
      conditionRecordSetId: set,
      key1: sku,
      validFrom: '2024-01-01',
      validTo: '2030-12-31',
      conditionValue: value,
    },
  });
  await api('/add/CRCI1', [
    item(prices.id, 'P-1', '9.5'),
    item(prices.id, 'P-3', '12'),
    item(prices.id, 'P-20', '30'),
  ]);
  await api('/add/CRCI1', [item(hidden.id, 'P-1', '1')]);
}
