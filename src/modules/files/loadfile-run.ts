// File loads: `/loaddata.file/{TypeCode}` (sync and async), `/importfile/...`. The file is first
// stored whole in the blob store under an upload status record (./upload-status.ts; so multipart
// fields may come in any order and an async job or a retry can read it again), then its rows stream
// through the SAME loader as `/loaddata` (engine/loaddata.ts `loadDataStream`), chunk by chunk.
// `syncOnTargetTable` then deletes the target's records the load did not touch. The status record
// keeps the counts and the first row errors; the stored file is removed when the load ends.
// Lookup table values (LTV, MLTV, JLTV) go through the lookup table manager's loader instead
// (./loadlookups.ts), with the same status record, checkpoints and answer.

import { DeadlineError } from '../../db/deadline.ts';
import type { Principal } from '../../access/access.ts';
import type { Db } from '../../db/db.ts';
import type { BlobStore } from '../../db/blob-store.ts';
import { deleteByFilter } from '../../engine/crud.ts';
import { loadDataStream, type LoadResult, type RowError } from '../../engine/loaddata.ts';
import { callTable } from '../../engine/loaddata/named.ts';
import type { TypeDef } from '../../engine/registry.ts';
import { AppError } from '../../http/errors.ts';
import { JobStopped } from '../../jobs/runner.ts';
import { ByteCounter, DELIMITERS, checkWellFormed, chunked, csvWellFormed, rowsOf } from './rows.ts';
import { isLookupFileCode, loadLookupFile, namedTable, syncLookupTables } from './loadlookups.ts';
import { requireFileLoadAccess, type FileLoadOptions } from './loadfile.ts';
import { failUploadStatus, type UploadStatusRow } from './upload-status.ts';

const CHUNK_ROWS = 10_000;
/** Row errors kept in the status record (all are counted). */
const MAX_LISTED_ERRORS = 100;

/** Where a retried job resumes, and the sync mark that must not move between attempts. */
export interface Checkpoint {
  readonly rows: number;
  readonly loaded: number;
  readonly invalid: number;
  readonly errors: RowError[];
  /** Records last updated before this instant were not touched by the load (syncOnTargetTable). */
  readonly mark: string;
}

export interface FileLoadHooks {
  /** Load this blob (an upload slot's file, which stays the slot's) instead of the record's own. */
  readonly slotFile?: string;
  readonly resumeFrom?: Checkpoint;
  /** After each chunk: may record progress and throw to stop (job cancellation). */
  readonly afterChunk?: (c: Checkpoint, bytesRead: number) => Promise<void>;
  readonly log?: (err: unknown, first: number, last: number) => void;
}

export interface FileLoadResult {
  readonly uploadStatusId: number;
  readonly loadedRecords: number;
  readonly invalidRecords: number;
  readonly totalRecords: number;
  readonly deletedRecords: number;
}

async function dbNow(db: Db): Promise<string> {
  // Microseconds, UTC: the criteria compiler keeps them, so the mark is exact.
  const r = await db.query<{ t: string }>(
    `SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS t`,
  );
  return r.rows[0]!.t;
}

/**
 * Loads the stored file of status record `s` into `type`; ends the record (FINISHED with counts, or
 * FAILED) unless the load is stopped by `afterChunk` (the job decides then).
 */
export async function executeFileLoad(
  db: Db,
  blobs: BlobStore,
  principal: Principal,
  type: TypeDef,
  s: UploadStatusRow,
  o: FileLoadOptions,
  hooks: FileLoadHooks = {},
): Promise<FileLoadResult> {
  const lookup = isLookupFileCode(type.code);
  const fileKey = hooks.slotFile ?? s.blob_key;
  if (fileKey === null) throw new AppError('CONFLICT', `The file of upload ${s.id} is gone`);
  const before = hooks.resumeFrom;
  const mark = before?.mark ?? (await dbNow(db));
  const counter = new ByteCounter();
  let result: LoadResult;
  /** Errors of the rows refused here (as listed; all are counted by the loader). */
  const refused = new Map<number, RowError>();
  const names = new Set<string>();
  /** Lookup values: the tables the file loaded into. */
  let tableIds: readonly number[] = [];
  /** What the committed chunks hold (what stays written when a later chunk fails). */
  let committed = { rows: before?.rows ?? 0, loaded: before?.loaded ?? 0, invalid: before?.invalid ?? 0 };
  try {
    // (In the try: a refusal ends the status record FAILED, as any other failure.)
    requireFileLoadAccess(principal, type, o.syncOnTargetTable);
    const table = lookup ? await namedTable(db, principal, type.code, o) : undefined;
    const delimiter = o.delimiter === undefined ? undefined : DELIMITERS[o.delimiter];
    const source = await rowsOf(() => counter.count(blobs.read(s.partition_id, fileKey)), delimiter);
    // A malformed CSV loads nothing: its quoting is scanned first (a resumed job did it on its first
    // run), and only a fault found is parsed through, for csv-parse's message naming the line.
    const read = () => blobs.read(s.partition_id, fileKey);
    if (
      before === undefined &&
      source.format === 'csv' &&
      !(await csvWellFormed(read(), source.delimiter!))
    ) {
      await checkWellFormed(await rowsOf(read, delimiter));
    }
    const skip = before?.rows ?? 0;
    const progress = async (done: { rows: number; inserted: number; updated: number; invalid: number }) => {
      committed = {
        rows: skip + done.rows,
        loaded: (before?.loaded ?? 0) + done.inserted + done.updated,
        invalid: (before?.invalid ?? 0) + done.invalid,
      };
      await hooks.afterChunk?.({ ...committed, errors: [], mark }, counter.bytes);
    };
    if (lookup) {
      const loaded = await loadLookupFile(
        db,
        principal,
        type.code,
        table,
        source.header,
        source.rows,
        {
          detectJoinFields: o.detectJoinFields,
          ...(o.joinFields.length > 0 ? { joinFields: o.joinFields } : {}),
          replaceSoftDeleted: o.replaceSoftDeleted,
        },
        {
          firstRow: skip,
          chunkRows: CHUNK_ROWS,
          maxErrors: MAX_LISTED_ERRORS + 1,
          ...(hooks.log ? { onChunkError: hooks.log } : {}),
          afterChunk: progress,
        },
      );
      result = loaded.result;
      tableIds = loaded.tableIds;
    } else {
      // Rows of another extension table than `?name=` are refused here, before the loader; so are
      // rows of another width than the file's header when the name is added (engine/loaddata/named.ts,
      // as for `/loaddata`).
      const call = callTable(type, source.header, o.name);
      const header = call.header;
      const refuse = (e: RowError) => {
        if (refused.size <= MAX_LISTED_ERRORS) refused.set(e.row, e);
      };
      let rowNo = -1;
      async function* rows(): AsyncIterable<(string | null)[]> {
        for await (const r of source.rows) {
          rowNo++;
          const name = call.tableOf(r) as string | null | undefined;
          if (typeof name === 'string' && names.size < 10_000) names.add(name);
          if (rowNo < skip) continue;
          const refusal = call.refusal(r, rowNo);
          if (refusal !== undefined) {
            refuse(refusal);
            yield [];
          } else yield call.rowOf(r) as (string | null)[];
        }
      }
      // A refused row travels as null, which the loader counts as an invalid row at its place in the
      // file's numbering; its listed error then gets our message.
      async function* loaderRows(): AsyncIterable<unknown[]> {
        for await (const chunk of chunked(rows(), CHUNK_ROWS))
          yield chunk.map((r) => (r.length === 0 ? null : r));
      }
      result = await loadDataStream(
        db,
        principal,
        type,
        {
          header,
          options: {
            detectJoinFields: o.detectJoinFields,
            ...(o.joinFields.length > 0 ? { joinFields: o.joinFields } : {}),
            replaceSoftDeleted: o.replaceSoftDeleted,
          },
        },
        loaderRows(),
        {
          firstRow: skip,
          maxErrors: MAX_LISTED_ERRORS + 1,
          ...(hooks.log ? { onChunkError: hooks.log } : {}),
          afterChunk: progress,
        },
      );
    }
  } catch (e) {
    // A stopped job resumes (or is cancelled) from its checkpoint: its file stays.
    if (e instanceof JobStopped) throw e;
    // The database's deadline passed within a chunk: that chunk is rolled back, the earlier stay.
    const failure =
      e instanceof DeadlineError
        ? new AppError(
            'TIMEOUT',
            `The load ran past the synchronous time-out: the chunk in progress was rolled back; ` +
              `${committed.rows} rows before it stay committed (${committed.loaded} loaded, in whole chunks); ` +
              'use the /async variant for large files',
          )
        : stayCommitted(asFormFields(e), committed);
    await failUploadStatus(
      db,
      blobs,
      s,
      failure instanceof AppError ? failure.message : 'the load failed unexpectedly',
      committed,
    );
    throw failure;
  }

  const errors = [
    ...(before?.errors ?? []),
    ...result.errors.map((e): RowError => refused.get(e.row) ?? e),
  ].slice(0, MAX_LISTED_ERRORS);
  const invalid = (before?.invalid ?? 0) + result.invalid;
  const loaded = (before?.loaded ?? 0) + result.inserted + result.updated;
  const total = (before?.rows ?? 0) + result.total;

  let deleted = 0;
  let message: string | null = null;
  if (o.syncOnTargetTable) {
    if (invalid > 0) {
      message = `syncOnTargetTable: nothing deleted, because ${invalid} row(s) of the file were not loaded`;
    } else if (!lookup && type.metaPerName && names.size === 0) {
      message = 'syncOnTargetTable: nothing deleted, because the file names no table';
    } else {
      const criteria: unknown[] = [{ fieldName: 'lastUpdateDate', operator: 'lessThan', value: mark }];
      if (type.metaPerName) criteria.push({ fieldName: 'name', operator: 'inSet', value: [...names] });
      try {
        deleted = lookup
          ? await syncLookupTables(db, principal, type.code, tableIds, mark)
          : (
              await deleteByFilter(
                db,
                principal,
                type,
                { data: { _constructor: 'AdvancedCriteria', operator: 'and', criteria } },
                false,
              )
            ).count;
      } catch (e) {
        // The rows are loaded (their chunks committed): a delete refused whole (a record the caller
        // may not change, a job still running) deletes nothing and is told, as refused rows are.
        if (!(e instanceof AppError) || !['FORBIDDEN', 'CONFLICT', 'VALIDATION'].includes(e.code)) throw e;
        message = `syncOnTargetTable: nothing deleted, because ${e.message}`;
      }
    }
  }
  await db.query(
    `UPDATE upload_status
        SET status = 'FINISHED', loaded_records = $3, invalid_records = $4, total_records = $5,
            deleted_records = $6, errors = $7::jsonb, message = $8, blob_key = NULL, finished_at = now()
      WHERE partition_id = $1 AND id = $2`,
    [s.partition_id, s.id, loaded, invalid, total, deleted, JSON.stringify(errors), message],
  );
  if (s.blob_key !== null) await blobs.delete(s.partition_id, s.blob_key);
  return {
    uploadStatusId: s.id,
    loadedRecords: loaded,
    invalidRecords: invalid,
    totalRecords: total,
    deletedRecords: deleted,
  };
}

/**
 * The loader names its options as a JSON body holds them (`options.joinFields.0`); a file load's
 * come as form fields (`joinFields`): its refusals name those.
 */
/**
 * A file that stops being readable part-way (an XLSX worksheet whose XML breaks) is refused after
 * whole chunks before it were written: the -4 says what stays committed.
 */
function stayCommitted(e: unknown, committed: { readonly rows: number; readonly loaded: number }): unknown {
  if (!(e instanceof AppError) || e.code !== 'VALIDATION' || committed.rows === 0) return e;
  return new AppError(
    'VALIDATION',
    `${e.message}; ${committed.rows} rows before it stay committed (${committed.loaded} loaded, in whole chunks)`,
    { ...(e.errors ? { errors: e.errors } : {}) },
  );
}

function asFormFields(e: unknown): unknown {
  if (!(e instanceof AppError) || e.code !== 'VALIDATION' || e.errors === undefined) return e;
  const keys = Object.keys(e.errors);
  if (!keys.some((k) => k.startsWith('options.'))) return e;
  const errors = Object.fromEntries(
    Object.entries(e.errors).map(([k, v]) => [k.startsWith('options.') ? k.slice('options.'.length) : k, v]),
  );
  return new AppError('VALIDATION', e.message.replace(/^options\./, ''), { errors });
}
