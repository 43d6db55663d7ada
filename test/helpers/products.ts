// Products compared across copies (tests of batch writes: a batch written at once against the same
// records written one by one under another sku prefix).

import type { Client } from './app.ts';
import { okData } from './envelope.ts';

type Row = Record<string, any>;

const COPY_FIELDS = ['typedId', 'id', 'createDate', 'lastUpdateDate'];

/** What a product (and its `oldValues`) says, without what differs between two copies of it. */
export function stripCopy(r: Row, prefix: string): Row {
  const rest: Row = JSON.parse(JSON.stringify(r).replaceAll(prefix, ''));
  for (const k of COPY_FIELDS) delete rest[k];
  if (rest.oldValues) for (const k of COPY_FIELDS) delete rest.oldValues[k];
  return rest;
}

/** Reads of products through `api`: a record's history and the products of a sku prefix. */
export function productReads(api: Client) {
  return {
    /** A product's history (action, version, changes), its sku's prefix taken out. */
    historyOf: async (id: unknown, prefix: string) =>
      okData(await api(`/fetch/P/${String(id)}/history`, { sortBy: 'id' })).map((e: Row) =>
        JSON.parse(
          JSON.stringify({ action: e.action, version: e.version, changes: e.changes }).replaceAll(prefix, ''),
        ),
      ),
    /** The products whose sku starts with `prefix`, by sku. */
    skusOf: async (prefix: string) =>
      okData(await api('/fetch/P', { data: { sku: prefix }, textMatchStyle: 'startsWith', sortBy: 'sku' })),
  };
}
