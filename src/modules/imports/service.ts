// Imports: staged changes to one target type, written all at once. An import is created empty or
// from an uploaded CSV/XLSX file (upload slots and parsing of src/modules/files): the business key
// columns name the record, an optional `changeType` column says ADD/UPDATE (default)/DELETE, every
// other column is a field, one staged change per cell. Changes are saved one by one, mass edited and
// mass deleted by filter (./changes.ts); submit validates every change and, only if all pass, writes
// them in one transaction through the engine with the importing user's own rights
// (src/modules/dcr/write.ts).

import type { Principal } from '../../access/access.ts';
import type { BlobStore } from '../../db/blob-store.ts';
import { batchTransaction, type Db, type Queryable } from '../../db/db.ts';
import { inSavepoint } from '../../db/savepoint.ts';
import { inTransaction } from '../../db/views.ts';
import type { TypeContext } from '../../engine/context.ts';
import { checkValue, canEdit, fetchRecords, requireAccess } from '../../engine/crud.ts';
import { widthError } from '../../engine/loaddata.ts';
import { contextCache } from '../../engine/write.ts';
import { optionalText } from '../../engine/value-check.ts';
import { DCR_TARGET_TYPES, isLookupValueCode } from '../../engine/registry-dcr.ts';
import { findType, type TypeDef } from '../../engine/registry.ts';
import { IMPORT_KEY_COUNT } from '../../engine/registry-imports.ts';
import { AppError, notFound, validationError, type FieldErrors } from '../../http/errors.ts';
import { findTargets, keyText, loadTypeContext, resolveTargetType } from '../dcr/target.ts';
import type { StagedRecord } from '../dcr/staged.ts';
import { writeItems } from '../dcr/write.ts';
import { chunked, rowsOf } from '../files/rows.ts';
import { findFilledSlotOrFail } from '../files/slots.ts';
import * as store from './store.ts';

type Obj = Record<string, unknown>;

const IM = findType('IM')!;
export const CHANGE_TYPES = ['ADD', 'UPDATE', 'DELETE'];
/** Failing changes listed in a refused submit (all are marked INVALID). */
const MAX_LISTED = 1000;

export interface Scope {
  readonly im: store.ImportRow;
  readonly type: TypeDef;
  readonly tc: TypeContext;
}

export async function scopeOf(
  q: Queryable,
  principal: Principal,
  idText: unknown,
  editable: boolean,
): Promise<Scope> {
  requireAccess(principal, 'IMPORT_EDIT');
  const im = await store.findImportOrFail(q, principal.partitionId, store.parseImportId(idText));
  if (editable) requireOpen(im);
  const type = await resolveTargetType(q, principal, im.target_type, im.lookup_table);
  return { im, type, tc: await loadTypeContext(q, principal, type) };
}

/** Its changes may change and it may be submitted: not APPLIED, and its file staged (not LOADING). */
function requireOpen(im: store.ImportRow): void {
  if (im.status === 'APPLIED')
    throw new AppError('CONFLICT', `${im.unique_name} is APPLIED: its changes can no longer change`);
  if (im.status === 'LOADING')
    throw new AppError('CONFLICT', `${im.unique_name} is still staging its file: try again when it is DRAFT`);
}

/**
 * Runs `fn`, a write of the import's changes (save, massedit, massdelete), in one transaction that
 * first locks the import FOR SHARE and checks its status under the lock. A submit locks it FOR UPDATE
 * before it reads the changes, so the two are serialised: a write committed first is read (and
 * applied) by the submit, a later one waits for the submit and is then refused as APPLIED. (Checked
 * only before the write's transaction, a save during a submit answered 200 and stayed NEW inside the
 * APPLIED import.) FOR SHARE: writes of one import do not wait for each other, only for a submit.
 */
export async function changingImport<T>(
  db: Db,
  principal: Principal,
  importId: number,
  fn: (within: Db) => Promise<T>,
): Promise<T> {
  return batchTransaction(db, async (tx) => {
    requireOpen(await store.findImportOrFail(tx, principal.partitionId, importId, 'FOR SHARE'));
    // The engine's own transaction (massedit, delete by filter) is this one: see inTransaction.
    return fn(inTransaction(db, tx));
  });
}

function checkKeyCount(type: TypeDef): void {
  if (type.businessKey.length > IMPORT_KEY_COUNT || type.businessKey.length === 0) {
    throw validationError(
      'targetType',
      `${type.code} cannot be imported (business key of ${type.businessKey.length} fields)`,
    );
  }
}

export async function importRecord(q: Queryable, principal: Principal, id: number): Promise<Obj> {
  const r = await fetchRecords(q, principal, IM, {}, 1, { fieldName: 'id', operator: 'equals', value: id });
  return r.rows[0] as Obj;
}

// ---------------------------------------------------------------------------------------------
// Create (from a file)

export interface CreateImport {
  readonly targetType?: unknown;
  readonly lookupTable?: unknown;
  readonly label?: unknown;
  readonly slotId?: unknown;
  readonly delimiter?: unknown;
}

const CREATE_FIELDS: readonly string[] = ['targetType', 'lookupTable', 'label', 'slotId', 'delimiter'];

export async function createImport(
  db: Db,
  blobs: BlobStore,
  principal: Principal,
  data: CreateImport,
): Promise<Obj> {
  requireAccess(principal, 'IMPORT_EDIT');
  for (const k of Object.keys(data))
    if (!CREATE_FIELDS.includes(k)) throw validationError(k, `unknown field (${CREATE_FIELDS.join(', ')})`);
  const code = data.targetType;
  if (typeof code !== 'string' || !DCR_TARGET_TYPES.includes(code)) {
    throw validationError('targetType', `must be one of ${DCR_TARGET_TYPES.join(', ')}`);
  }
  const lookupTable = optionalText(data.lookupTable, 'lookupTable', 1000);
  // As a DCR type's: only a target of lookup values names a table (it was stored, and ignored).
  if (!isLookupValueCode(code) && lookupTable !== null && lookupTable !== '') {
    throw validationError(
      'lookupTable',
      `names a lookup table, which only a target of lookup values has (not ${code})`,
    );
  }
  const type = await resolveTargetType(db, principal, code, lookupTable);
  checkKeyCount(type);
  requireAccess(principal, type.access.write);
  const tc = await loadTypeContext(db, principal, type);
  const slotId = optionalText(data.slotId, 'slotId', 1000);
  const slot = slotId === null ? undefined : await findFilledSlotOrFail(db, principal, slotId);
  const delimiter = optionalText(data.delimiter, 'delimiter', 1000) ?? undefined;
  // One character that can separate CSV fields: not a quote, a line break or NUL.
  if (delimiter !== undefined && (delimiter.length !== 1 || '"\r\n\u0000'.includes(delimiter)))
    throw validationError('delimiter', 'must be one character other than a quote or a line break');
  const source = slot
    ? await rowsOf(() => blobs.read(principal.partitionId, slot.blob_key), delimiter)
    : undefined;
  const columns = source ? planColumns(tc, source.header) : undefined;
  const header = source?.header.map((name) => ({ name })) ?? [];
  const id = await store.insertImport(db, principal.partitionId, principal.userId, {
    label: optionalText(data.label, 'label', 1000),
    targetType: code,
    lookupTable,
    fileName: slot?.file_name ?? null,
    status: source ? 'LOADING' : 'DRAFT',
  });
  if (source && columns) {
    // Chunk by chunk (no transaction is held while the file is read: PGlite has one connection);
    // a file that turns out unreadable removes the import again. Meanwhile the import is LOADING,
    // which nobody may submit or edit: a submit between two chunks applied part of the file.
    try {
      let line = 0;
      for await (const chunk of chunked(source.rows, 2_000)) {
        const changes = chunk.flatMap((cells) => changesOfRow(columns, header, cells, ++line));
        await store.upsertChanges(db, principal.partitionId, id, principal.userId, changes);
      }
    } catch (e) {
      await db.query('DELETE FROM imports WHERE partition_id = $1 AND id = $2', [principal.partitionId, id]);
      // (Deleted meanwhile, with /delete/IM: its changes have no import to go to.)
      if ((e as { code?: unknown }).code === '23503') throw notFound(`Import ${id}`, 'typedId');
      throw e;
    }
    if (!(await store.markLoaded(db, principal.partitionId, id))) throw notFound(`Import ${id}`, 'typedId');
  }
  return importRecord(db, principal, id);
}

interface Columns {
  readonly keys: readonly number[];
  readonly changeType: number | undefined;
  readonly fields: readonly { readonly at: number; readonly name: string }[];
}

function planColumns(tc: TypeContext, header: readonly string[]): Columns {
  const at = (name: string) => header.findIndex((h) => h.trim() === name);
  const keys = tc.type.businessKey.map((k) => {
    const i = at(k);
    if (i < 0) throw validationError('header', `must contain the key column ${k}`);
    return i;
  });
  const ct = at('changeType');
  const seen = new Set<string>();
  const fields = header.flatMap((raw, i) => {
    const name = raw.trim();
    if (seen.has(name)) throw validationError(`header.${i}`, `${JSON.stringify(name)} is a column twice`);
    seen.add(name);
    if (keys.includes(i) || i === ct) return [];
    const f = tc.fields.get(name);
    if (!f || f.system)
      throw validationError(`header.${i}`, `unknown field ${JSON.stringify(name)} of ${tc.type.code}`);
    return [{ at: i, name }];
  });
  return { keys, changeType: ct < 0 ? undefined : ct, fields };
}

function changesOfRow(
  cols: Columns,
  header: readonly { readonly name: string }[],
  cells: readonly (string | null)[],
  line: number,
): store.NewChange[] {
  // A row of another width than the header, refused as the file load refuses it: a missing cell is
  // no value (an empty one is null), an extra one belongs to no column. (Staged, a short row's
  // missing cells were nulls that the submit wrote, clearing those fields; extra cells were dropped.)
  if (cells.length !== header.length) {
    const e = widthError(line, cells.length, header);
    const at = e.field === undefined ? `rows.${line}` : `rows.${line}.${cells.length}`;
    throw validationError(at, e.message);
  }
  const text = (i: number): string | null => {
    const v = cells[i];
    if (v === undefined || v === null || v === '') return null;
    // No database text takes NUL: named by its line and column, as any bad cell of a file.
    if (v.includes('\u0000')) throw validationError(`rows.${line}.${i}`, 'must not contain NUL characters');
    return v;
  };
  const keys = cols.keys.map((i) => text(i) ?? '');
  const changeType =
    (cols.changeType === undefined ? null : text(cols.changeType))?.toUpperCase() ?? 'UPDATE';
  if (!CHANGE_TYPES.includes(changeType))
    throw validationError(
      `rows.${line}.${cols.changeType!}`,
      `changeType must be one of ${CHANGE_TYPES.join(', ')}`,
    );
  if (changeType === 'DELETE') return [{ changeType, targetColumn: '', keys, value: null, rowNumber: line }];
  return cols.fields.map((f) => ({
    changeType,
    targetColumn: f.name,
    keys,
    value: text(f.at),
    rowNumber: line,
  }));
}

// ---------------------------------------------------------------------------------------------
// Submit

interface RecordPlan {
  readonly changeType: 'ADD' | 'UPDATE' | 'DELETE';
  readonly keys: string[];
  readonly changes: store.ChangeRow[];
  readonly values: Obj;
}

/** Validates every change; all valid: written in one transaction. Otherwise nothing is written. */
export async function submitImport(db: Db, principal: Principal, idText: string): Promise<Obj> {
  const s0 = await scopeOf(db, principal, idText, true);
  checkKeyCount(s0.type);
  requireAccess(principal, s0.type.access.write);
  let ended = false;
  const refused = await db
    .transaction(async (tx): Promise<AppError | undefined> => {
      // Locked before the changes are read: a write of them (changingImport) waits until this
      // transaction ends, then finds the import APPLIED.
      const im = await store.findImportOrFail(tx, principal.partitionId, s0.im.id, 'FOR UPDATE');
      requireOpen(im);
      const { type, tc } = s0;
      const changes = await store.changesOf(tx, principal.partitionId, im.id);
      if (changes.length === 0) throw validationError('typedId', `${im.unique_name} has no changes`);
      const invalid = new Map<number, string>();
      const records = new Map<string, RecordPlan>();
      // An extension row's attributes are typed by its table's meta (PX, CX, SX: the `name` of its
      // key), as the engine's writes type them (`contextCache`): else "abc" passed as VALID for a
      // NUMERIC attribute and was refused only when written.
      const contextOf = contextCache(tx, principal, type);
      for (const c of changes) {
        const ctx = type.metaPerName ? await contextOf(keyRecord(type, c.keys)) : tc;
        const reason = checkChange(ctx, c);
        if (reason !== undefined) {
          invalid.set(c.id, reason);
          continue;
        }
        const keys = c.keys.slice(0, type.businessKey.length);
        const k = `${c.change_type} ${JSON.stringify(keys)}`;
        let rec = records.get(k);
        if (!rec) records.set(k, (rec = { changeType: c.change_type, keys, changes: [], values: {} }));
        rec.changes.push(c);
        if (c.change_type !== 'DELETE') {
          const v = checkValue(ctx.fields.get(c.target_column)!, c.value);
          rec.values[c.target_column] = typeof v === 'string' ? null : v.value;
        }
      }
      refuseDeleteWithOthers(tc, records, invalid);
      const found = await findTargets(
        tx,
        principal,
        tc,
        { ids: [], keys: [...records.values()].map((r) => r.keys) },
        true,
      );
      // A key is taken whatever groups hide its record: an ADD of it fails validation, as a DCR's
      // (it passed as VALID and the apply refused it, in another shape, leaving the import stale).
      const addKeys = [...records.values()].filter((r) => r.changeType === 'ADD').map((r) => r.keys);
      const taken =
        addKeys.length === 0
          ? found
          : await findTargets(tx, principal, tc, { ids: [], keys: addKeys }, false, true);
      const staged: StagedRecord[] = [];
      const byRef = new Map<string, readonly store.ChangeRow[]>();
      for (const rec of records.values()) {
        const key = JSON.stringify(rec.keys);
        const row = found.byKey.get(key);
        const problem = recordProblem(tc, principal, rec, row, taken.byKey.has(key));
        if (problem !== undefined) {
          for (const c of rec.changes) invalid.set(c.id, problem);
          continue;
        }
        const ref = `${rec.changes[0]!.id}.IMC`;
        byRef.set(ref, rec.changes);
        staged.push({
          ref,
          change_type: rec.changeType,
          target_id: row === undefined ? null : Number(row.id),
          target_key: rec.keys,
          proposed: rec.values,
          original: row ?? null,
        });
      }
      await store.markValidation(tx, principal.partitionId, im.id, invalid);
      if (invalid.size > 0) {
        await store.setImportState(tx, principal.partitionId, im.id, principal.userId, 'FAILED', [
          { level: 'ERROR', text: `${invalid.size} of ${changes.length} changes failed validation` },
        ]);
        return refusal(changes, invalid);
      }
      const within = inTransaction(db, tx, () => ended);
      let written;
      try {
        written = await inSavepoint(tx, 'rc_import_apply', () =>
          writeItems(within, principal, type, staged, []),
        );
      } catch (e) {
        // Refused by the engine when written (a range overlapping a stored one, a key taken since):
        // nothing is written, and the import says so, as for a change that failed validation.
        if (!(e instanceof AppError) || (e.code !== 'VALIDATION' && e.code !== 'CONFLICT')) throw e;
        const refusedAt = refusedChanges(byRef, e);
        await store.markValidation(tx, principal.partitionId, im.id, refusedAt);
        await store.setImportState(tx, principal.partitionId, im.id, principal.userId, 'FAILED', [
          { level: 'ERROR', text: e.message },
        ]);
        return refusedAt.size === 0 ? e : refusal(changes, refusedAt, 'were refused when applied');
      }
      await store.setImportState(tx, principal.partitionId, im.id, principal.userId, 'APPLIED', [
        { level: 'INFO', text: 'applied', changes: changes.length, ...written },
      ]);
      return undefined;
    })
    .finally(() => {
      ended = true;
    });
  if (refused) throw refused;
  return importRecord(db, principal, s0.im.id);
}

/** A change's key as its record's key fields (`{name, sku}` of a PX row). */
const keyRecord = (type: TypeDef, keys: readonly string[]): Obj =>
  Object.fromEntries(type.businessKey.map((k, n) => [k, keys[n]]));

function checkChange(tc: TypeContext, c: store.ChangeRow): string | undefined {
  for (const [n, k] of tc.type.businessKey.entries()) {
    try {
      keyText(tc.fields.get(k)!, c.keys[n], k);
    } catch (e) {
      return `${k}: ${(e as AppError).errors?.[k]?.errorMessage ?? 'invalid'}`;
    }
  }
  if (c.change_type === 'DELETE') return undefined;
  const f = tc.fields.get(c.target_column);
  if (!f || f.system) return `${c.target_column}: unknown field`;
  if (f.key) return `${c.target_column}: is part of the business key`;
  const v = checkValue(f, c.value);
  return typeof v === 'string' ? `${c.target_column}: ${v}` : undefined;
}

function recordProblem(
  tc: TypeContext,
  principal: Principal,
  rec: RecordPlan,
  row: Obj | undefined,
  taken: boolean,
): string | undefined {
  const what = `${tc.type.label} ${rec.keys.join(' / ')}`;
  if (rec.changeType === 'ADD') {
    if (row || taken) return `${what} already exists`;
    const missing = [...tc.fields.values()].find(
      (f) => f.required && !f.key && (rec.values[f.name] ?? null) === null,
    );
    return missing ? `${missing.name}: is required to add ${what}` : undefined;
  }
  if (!row) return `${what} does not exist`;
  if (!canEdit(tc.type, principal, row)) return `${what}: not in one of your edit groups`;
  return undefined;
}

/**
 * A record's changes either delete it or change it, not both: a DELETE and an ADD or UPDATE of one
 * record are all INVALID (and dropped from `records`). (An UPDATE with a DELETE passed; the update
 * was counted as written and lost with the record.) A DCR holds at most one item per record alike.
 */
function refuseDeleteWithOthers(
  tc: TypeContext,
  records: Map<string, RecordPlan>,
  invalid: Map<number, string>,
): void {
  const byRecord = new Map<string, RecordPlan[]>();
  for (const rec of records.values()) {
    const k = JSON.stringify(rec.keys);
    byRecord.set(k, [...(byRecord.get(k) ?? []), rec]);
  }
  for (const recs of byRecord.values()) {
    const del = recs.find((r) => r.changeType === 'DELETE');
    if (del === undefined || recs.length === 1) continue;
    const others = recs.filter((r) => r !== del).flatMap((r) => r.changes.map((c) => `${c.id}.IMC`));
    const what = `${tc.type.label} ${del.keys.join(' / ')}`;
    for (const rec of recs) {
      const problem =
        rec === del
          ? `${what} is deleted by this change and changed by ${others.join(', ')}: a record is either deleted or changed`
          : `${what} is changed here and deleted by ${del.changes[0]!.id}.IMC: a record is either deleted or changed`;
      for (const c of rec.changes) invalid.set(c.id, problem);
      records.delete(`${rec.changeType} ${JSON.stringify(rec.keys)}`);
    }
  }
}

/** The changes an engine refusal names (by the ref of their record, `<id>.IMC[.<field>]`), with its reasons. */
function refusedChanges(
  byRef: ReadonlyMap<string, readonly store.ChangeRow[]>,
  e: AppError,
): Map<number, string> {
  const out = new Map<number, string>();
  for (const [key, { errorMessage }] of Object.entries(e.errors ?? {})) {
    const dot = key.indexOf('.IMC');
    const ref = dot < 0 ? undefined : key.slice(0, dot + 4);
    const changes = ref === undefined ? undefined : byRef.get(ref);
    if (changes === undefined) continue;
    const field = key.slice(ref!.length + 1);
    for (const c of changes) out.set(c.id, field === '' ? errorMessage : `${field}: ${errorMessage}`);
  }
  return out;
}

function refusal(
  changes: readonly store.ChangeRow[],
  invalid: ReadonlyMap<number, string>,
  what = 'failed validation',
): AppError {
  const errors: FieldErrors = {};
  for (const c of changes) {
    const reason = invalid.get(c.id);
    if (reason === undefined) continue;
    if (Object.keys(errors).length >= MAX_LISTED) break;
    errors[`${c.id}.IMC`] = {
      errorMessage: c.row_number === null ? reason : `row ${c.row_number}: ${reason}`,
    };
  }
  return new AppError(
    'VALIDATION',
    `${invalid.size} of ${changes.length} changes ${what}: nothing written (they are marked INVALID)`,
    { errors },
  );
}
